/// The scalability structure (SS) of a VP9 payload descriptor (RFC 9628 section 4.2.1): how many spatial
/// layers the stream has, optionally their resolutions, and optionally the picture group of non-flexible
/// mode. Senders put it in the first packet of a key frame; a forwarder reads the layer count and sizes to
/// choose what each receiver gets, and must know its length to find the VP9 data behind it.
///
///     | N_S |Y|G|-|-|-|
///     |     WIDTH     |  \ 16 bits each, if Y,
///     |     HEIGHT    |  / N_S + 1 times
///     |      N_G      |    if G
///     | TID |U| R |-|-|  \ N_G times, each
///     |    P_DIFF     |  / followed by R P_DIFFs
///
/// Parsing walks every field for the length but keeps, inline, only the first three layers' resolutions
/// (VP9 allows up to eight spatial layers; WebRTC senders use at most three).
public struct VP9ScalabilityStructure: Equatable, Sendable {
    public struct Resolution: Equatable, Sendable {
        public var width: UInt16
        public var height: UInt16

        public init(width: UInt16, height: UInt16) {
            self.width = width
            self.height = height
        }
    }

    /// N_S + 1: spatial layers in the stream, 1 to 8.
    public var spatialLayers: Int
    /// The first (up to three) spatial layers' frame sizes, lowest layer first, when Y = 1; empty when Y = 0.
    public var resolutions: UpToThree<Resolution>
    /// N_G when G = 1 (pictures in the picture group, 0 to 255); nil when G = 0.
    public var pictureGroupSize: Int?
    /// Where the SS starts within the RTP payload, and its length.
    public var offset: Int
    public var size: Int

    /// The frame size of `layer` when carried and kept (layers 0-2).
    public func resolution(ofLayer layer: Int) -> Resolution? {
        layer >= 0 && layer < resolutions.count ? resolutions[layer] : nil
    }

    /// Parses the SS that starts at `offset` in `p`; refuses one cut short by the payload's end.
    public static func parse(_ p: UnsafeRawBufferPointer, at offset: Int) -> Result<VP9ScalabilityStructure, DropReason> {
        guard offset >= 0, offset < p.count else { return .failure(.badCodecPayload) }
        let b = p[offset]
        var ss = VP9ScalabilityStructure(spatialLayers: Int(b >> 5) + 1, resolutions: UpToThree(),
                                         pictureGroupSize: nil, offset: offset, size: 1)
        var o = offset + 1
        if b & 0x10 != 0 {  // Y
            guard p.count - o >= 4 * ss.spatialLayers else { return .failure(.badCodecPayload) }
            for _ in 0..<ss.spatialLayers {
                ss.resolutions.append(Resolution(width: p.u16(o), height: p.u16(o + 2)))
                o += 4
            }
        }
        if b & 0x08 != 0 {  // G
            guard o < p.count else { return .failure(.badCodecPayload) }
            let pictures = Int(p[o])
            o += 1
            for _ in 0..<pictures {
                guard o < p.count else { return .failure(.badCodecPayload) }
                let references = Int((p[o] >> 2) & 0x03)  // R
                o += 1
                guard p.count - o >= references else { return .failure(.badCodecPayload) }
                o += references
            }
            ss.pictureGroupSize = pictures
        }
        ss.size = o - offset
        return .success(ss)
    }
}
