/// Which temporal and spatial layers of a scalable video one slot forwards (VP8 temporal layers, RFC 7741
/// section 4.2: TID and the layer sync bit Y; VP9 temporal and spatial layers, RFC 9628 section 4.2: TID, the
/// switching-up point U, SID), so that a subscriber gets a lower frame rate or size of a source instead of
/// losing it.
///
/// The slot asks for caps (`wantedTemporal`, `wantedSpatial`); the filter moves to them only where a decoder
/// can follow: down at the start of a picture (no lower layer refers to a higher one), a temporal layer up at
/// a frame of that layer that marks a switching point (Y for VP8, U for VP9) or at a key frame, a spatial layer
/// up only at a key frame (an upper spatial layer refers to its own earlier frames). Packets without layer
/// indices, and H.264, always pass.
///
/// Only the source's newest packets move the filter: one older than the newest it has seen (an RTX repair,
/// RFC 4588, or one reordered on the way) is judged by the layers sent now and changes nothing. A repaired
/// key frame start from before a layer drop would otherwise reopen the layer in the middle of a group of
/// pictures, at frames whose references the slot never sent, and a late picture start would apply a lowered
/// cap in the middle of the newer picture in flight. Judging it by the layers sent now, rather than by those
/// sent at its picture, keeps no history per picture and is safe: a layer sent now either was sent at that
/// picture too (the repair fills a hole the subscriber has), or came back since at a switching point or key
/// frame, past which no frame sent since refers, so the old frame is at worst one the receiver cannot use
/// and drops. A picture start that arrives only as a repair moves nothing: the filter waits for the next
/// switching point or key frame of the stream in order.
public struct LayerFilter: Sendable, Equatable {
    /// What the slot should send at most; nil: every layer.
    public var wantedTemporal: UInt8?
    public var wantedSpatial: UInt8?
    /// What it sends now.
    public private(set) var temporal: UInt8?
    public private(set) var spatial: UInt8?
    /// The highest extended sequence number of the source admitted since the last `reset`.
    private var newest: Int64?

    public init() {}

    public enum Verdict: Equatable, Sendable {
        /// Send it; `endsPicture` when it is now the last packet of the picture sent (the top spatial layer
        /// sent ends, and the RTP marker must say so: RFC 9628 section 4.1).
        case forward(endsPicture: Bool)
        /// Leave it out; `closesPicture` on the first packet of a picture left out whole (a higher temporal
        /// layer's), whose picture ID the slot closes up as it does the sequence numbers.
        case skip(closesPicture: Bool)
    }

    /// Whether a spatial layer the slot wants is waiting for a key frame (the caller asks for one), for a
    /// source whose top spatial layer is `top` (nil caps mean it: a VP8 stream, or VP9 back to all its layers
    /// while its top one already flows, waits for nothing).
    public func awaitsKeyframe(top: UInt8) -> Bool { (spatial ?? top) < (wantedSpatial ?? top) }

    /// The verdict for one packet of the slot's source, `marker` its RTP marker, `ext` its extended sequence
    /// number: the layers move only at a packet newer than any seen before.
    public mutating func admit(_ d: VideoDescriptor, marker: Bool, extendedSequence ext: Int64) -> Verdict {
        let inOrder = newest.map { ext > $0 } ?? true
        if inOrder { newest = ext }
        switch d {
        case .h264:
            return .forward(endsPicture: marker)
        case .vp8(let v):
            guard let tid = v.temporalLayer else { return .forward(endsPicture: marker) }
            if inOrder && v.startOfPartition && v.partitionIndex == 0 {
                moveTemporal(tid: tid, keyframe: v.isKeyframeStart, switchingPoint: v.layerSync)
            }
            return tid <= (temporal ?? .max) ? .forward(endsPicture: marker)
                : .skip(closesPicture: v.startOfPartition && v.partitionIndex == 0)
        case .vp9(let v):
            guard let tid = v.temporalLayer, let sid = v.spatialLayer else { return .forward(endsPicture: marker) }
            if inOrder && v.startOfLayerFrame && sid == 0 {
                let keyframe = !v.interPicturePredicted
                if keyframe || (wantedSpatial ?? .max) < (spatial ?? .max) { spatial = wantedSpatial }
                moveTemporal(tid: tid, keyframe: keyframe, switchingPoint: v.switchingUpPoint)
            }
            guard tid <= (temporal ?? .max) else { return .skip(closesPicture: v.startOfLayerFrame && sid == 0) }
            guard sid <= (spatial ?? .max) else { return .skip(closesPicture: false) }
            return .forward(endsPicture: marker || (v.endOfLayerFrame && sid == spatial))
        }
    }

    /// At the start of a picture of temporal layer `tid`: down to the wanted cap at once, up to it at a key
    /// frame, or up to `tid` when this picture is a switching point of that layer.
    private mutating func moveTemporal(tid: UInt8, keyframe: Bool, switchingPoint: Bool) {
        let wanted = wantedTemporal ?? .max, now = temporal ?? .max
        if keyframe || wanted < now {
            temporal = wantedTemporal
        } else if tid > now, tid <= wanted, switchingPoint {
            temporal = tid
        }
    }

    /// Back to every layer the slot wants, for a new source (which starts at a key frame, in its own sequence
    /// numbers).
    public mutating func reset() {
        temporal = wantedTemporal
        spatial = wantedSpatial
        newest = nil
    }
}
