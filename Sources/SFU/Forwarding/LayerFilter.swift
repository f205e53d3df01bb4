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
public struct LayerFilter: Sendable, Equatable {
    /// What the slot should send at most; nil: every layer.
    public var wantedTemporal: UInt8?
    public var wantedSpatial: UInt8?
    /// What it sends now.
    public private(set) var temporal: UInt8?
    public private(set) var spatial: UInt8?

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

    /// The verdict for one packet of the slot's source, `marker` its RTP marker.
    public mutating func admit(_ d: VideoDescriptor, marker: Bool) -> Verdict {
        switch d {
        case .h264:
            return .forward(endsPicture: marker)
        case .vp8(let v):
            guard let tid = v.temporalLayer else { return .forward(endsPicture: marker) }
            if v.startOfPartition && v.partitionIndex == 0 {
                moveTemporal(tid: tid, keyframe: v.isKeyframeStart, switchingPoint: v.layerSync)
            }
            return tid <= (temporal ?? .max) ? .forward(endsPicture: marker)
                : .skip(closesPicture: v.startOfPartition && v.partitionIndex == 0)
        case .vp9(let v):
            guard let tid = v.temporalLayer, let sid = v.spatialLayer else { return .forward(endsPicture: marker) }
            if v.startOfLayerFrame && sid == 0 {
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

    /// Back to every layer the slot wants, for a new source (which starts at a key frame).
    public mutating func reset() {
        temporal = wantedTemporal
        spatial = wantedSpatial
    }
}
