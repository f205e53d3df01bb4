/// What the forwarder reads from a video packet's payload, by codec: where a key frame starts (a slot switches
/// sources only there) and the picture numbering it must keep continuous in the slot's output.
///
/// VP8 (RFC 7741) and VP9 (RFC 9628) carry a payload descriptor with a picture ID (and TL0PICIDX) that a
/// receiver uses to detect lost pictures, so a slot rewrites them across source switches; H.264 (RFC 6184)
/// carries no such numbering, and is forwarded untouched.
public enum VideoDescriptor: Sendable {
    case vp8(VP8Descriptor)
    case vp9(VP9Descriptor)
    case h264(H264Payload)

    /// Parses the payload descriptor (or, for H.264, the packet's NAL unit structure) of `codec`, in place.
    public static func parse(_ codec: Codec, payload: UnsafeRawBufferPointer) -> Result<VideoDescriptor, DropReason> {
        switch codec {
        case .vp8:
            switch VP8Descriptor.parse(payload) {
            case .success(let d): return .success(.vp8(d))
            case .failure(let r): return .failure(r)
            }
        case .vp9:
            switch VP9Descriptor.parse(payload) {
            case .success(let d): return .success(.vp9(d))
            case .failure(let r): return .failure(r)
            }
        case .h264:
            switch H264Payload.parse(payload) {
            case .success(let d): return .success(.h264(d))
            case .failure(let r): return .failure(r)
            }
        case .opus:
            return .failure(.badCodecPayload)
        }
    }

    /// The first packet of a picture a receiver can start decoding from: a VP8 key frame's first partition
    /// (RFC 7741 section 4.3); a VP9 picture's base spatial layer frame that is not inter-predicted (RFC 9628
    /// section 4.2, P = 0); an H.264 IDR slice or SPS beginning in a single NAL unit, a STAP-A or the first
    /// fragment of a FU-A (RFC 6184 sections 5.6-5.8).
    public var isKeyframeStart: Bool {
        switch self {
        case .vp8(let d): return d.isKeyframeStart
        case .vp9(let d): return d.isKeyframeStart
        case .h264(let d): return d.isKeyframeStart
        }
    }

    /// The picture numbering the slot rewriter keeps continuous; nil for H.264, which has none.
    public var numbering: PictureNumbering? {
        switch self {
        case .vp8(let d):
            return PictureNumbering(d)
        case .vp9(let d):
            return PictureNumbering(pictureID: d.pictureID, pictureIDModulus: d.pictureIDModulus, tl0PicIdx: d.tl0PicIdx,
                                    keyIndex: nil)
        case .h264:
            return nil
        }
    }

    /// The first packet of its layer's frame (VP8: S = 1 in partition 0; VP9: B, the start of a layer frame):
    /// what a layer's frame rate counts.
    public var startsPicture: Bool {
        switch self {
        case .vp8(let d): return d.startOfPartition && d.partitionIndex == 0
        case .vp9(let d): return d.startOfLayerFrame
        case .h264: return false  // no layers to count
        }
    }

    /// The (spatial, temporal) layer of the packet when the payload says (VP8's TID; VP9's SID and TID), within
    /// the three spatial and four temporal layers WebRTC senders use (higher indices count as the top ones).
    public var layerIndices: (spatial: UInt8, temporal: UInt8)? {
        switch self {
        case .vp8(let d): return d.temporalLayer.map { (0, $0) }
        case .vp9(let d):
            guard let t = d.temporalLayer, let s = d.spatialLayer else { return nil }
            return (min(s, 2), min(t, 3))
        case .h264: return nil
        }
    }

    /// Writes the rewritten numbering into the forwarded copy's payload (same size: fields keep their width).
    public func rewrite(_ out: SlotRewriter.Output, in payload: UnsafeMutableRawBufferPointer) {
        switch self {
        case .vp8(let d): d.rewrite(pictureID: out.pictureID, tl0PicIdx: out.tl0PicIdx, keyIndex: out.keyIndex, in: payload)
        case .vp9(let d): d.rewrite(pictureID: out.pictureID, tl0PicIdx: out.tl0PicIdx, in: payload)
        case .h264: break
        }
    }

    /// The frame size a key frame declares where the payload says it without decoding: a VP8 key frame's header
    /// (RFC 6386 section 9.1); the largest spatial layer of a VP9 scalability structure (RFC 9628 section
    /// 4.2.1, sent with key frames). Nil otherwise, and for H.264, whose size is in the SPS's exp-Golomb fields.
    public func keyframeSize(in payload: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        switch self {
        case .vp8(let d):
            return d.keyframeSize(in: payload)
        case .vp9(let d):
            guard d.isKeyframeStart, let last = d.scalability?.resolutions.last, last.width > 0, last.height > 0 else { return nil }
            return (Int(last.width), Int(last.height))
        case .h264:
            return nil
        }
    }
}

/// The picture numbering of a VP8 or VP9 payload descriptor: picture ID (7 or 15 bits), TL0PICIDX and, VP8
/// only, KEYIDX (RFC 7741 section 4.2, RFC 9628 section 4.2).
public struct PictureNumbering: Equatable, Sendable {
    public var pictureID: UInt16?
    /// 2^15 or 2^7, as the picture ID was carried.
    public var pictureIDModulus: UInt16
    public var tl0PicIdx: UInt8?
    public var keyIndex: UInt8?

    public init(pictureID: UInt16?, pictureIDModulus: UInt16, tl0PicIdx: UInt8?, keyIndex: UInt8?) {
        self.pictureID = pictureID
        self.pictureIDModulus = pictureIDModulus
        self.tl0PicIdx = tl0PicIdx
        self.keyIndex = keyIndex
    }

    public init(_ d: VP8Descriptor) {
        self.init(pictureID: d.pictureID, pictureIDModulus: d.pictureIDModulus, tl0PicIdx: d.tl0PicIdx, keyIndex: d.keyIndex)
    }
}
