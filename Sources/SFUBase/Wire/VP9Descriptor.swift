/// The VP9 payload descriptor (RFC 9628 section 4.2), located in place so that its picture ID and TL0PICIDX
/// can be rewritten in the forwarded copy without changing its size, and so that a forwarder can pick layers
/// (spatial and temporal indices, switching-up points) without looking into the VP9 bitstream.
///
///     |I|P|L|F|B|E|V|Z|   required
///     |M| PICTURE ID  |   if I (M: 15-bit picture ID, one more byte)
///     | TID |U| SID |D|   if L
///     |   TL0PICIDX   |   if L and F = 0 (non-flexible mode)
///     | P_DIFF      |N|   if F and P (flexible mode), up to 3 times: N says another follows
///     | SS ...        |   if V (section 4.2.1, `VP9ScalabilityStructure`)
///
/// Refused (`.badCodecPayload`): a descriptor cut short anywhere, and a fourth P_DIFF (N set on the third).
/// Not refused: F = 1 without I, which RFC 9628 forbids but which hides nothing a parser would misread.
public struct VP9Descriptor: Equatable, Sendable {
    /// P: the picture uses inter-picture prediction (0 on key frames and on other pictures that reset
    /// references).
    public var interPicturePredicted: Bool
    /// F: flexible mode, references as P_DIFFs in every packet; 0 is non-flexible mode, with TL0PICIDX.
    public var flexibleMode: Bool
    /// B: the first packet of a layer frame.
    public var startOfLayerFrame: Bool
    /// E: the last packet of a layer frame (the RTP marker marks only the last of a whole picture).
    public var endOfLayerFrame: Bool
    /// Z: no frame of a higher spatial layer in this picture refers to this one.
    public var notReferencedByUpperSpatialLayers: Bool
    public var pictureID: UInt16?
    public var pictureIDIs15Bit: Bool
    /// TID, U, SID and D: present when L = 1 (then `temporalLayer` and `spatialLayer` are non-nil).
    public var temporalLayer: UInt8?
    /// U: a switching-up point - from here a receiver of lower temporal layers can add this one.
    public var switchingUpPoint: Bool
    public var spatialLayer: UInt8?
    /// D: this frame depends on the previous spatial layer of the same picture.
    public var interLayerDependency: Bool
    public var tl0PicIdx: UInt8?
    /// P_DIFFs (flexible mode, P = 1): each reference picture's ID is this picture's minus the diff.
    public var referenceDiffs: UpToThree<UInt8>
    /// The scalability structure, when V = 1.
    public var scalability: VP9ScalabilityStructure?
    /// Offsets within the RTP payload of the picture ID and of TL0PICIDX (0 when absent).
    public var pictureIDOffset: Int
    public var tl0Offset: Int
    /// Descriptor length: the VP9 frame data starts after it.
    public var size: Int

    /// B = 1 and P = 0 in the base spatial layer (SID 0, or no layer indices at all): the first packet of a
    /// picture a receiver can start decoding from. An upper spatial layer's frame with P = 0 still depends on
    /// the layer below it, so it starts nothing.
    public var isKeyframeStart: Bool { startOfLayerFrame && !interPicturePredicted && (spatialLayer ?? 0) == 0 }

    /// Modulus of the picture ID as carried: 2^15 or 2^7.
    public var pictureIDModulus: UInt16 { pictureIDIs15Bit ? 0x8000 : 0x80 }

    public static func parse(_ p: UnsafeRawBufferPointer) -> Result<VP9Descriptor, DropReason> {
        guard p.count >= 1 else { return .failure(.badCodecPayload) }
        let b0 = p[0]
        var d = VP9Descriptor(interPicturePredicted: b0 & 0x40 != 0, flexibleMode: b0 & 0x10 != 0,
                              startOfLayerFrame: b0 & 0x08 != 0, endOfLayerFrame: b0 & 0x04 != 0,
                              notReferencedByUpperSpatialLayers: b0 & 0x01 != 0, pictureID: nil,
                              pictureIDIs15Bit: false, temporalLayer: nil, switchingUpPoint: false, spatialLayer: nil,
                              interLayerDependency: false, tl0PicIdx: nil, referenceDiffs: UpToThree(),
                              scalability: nil, pictureIDOffset: 0, tl0Offset: 0, size: 1)
        var o = 1
        if b0 & 0x80 != 0 {  // I
            guard o < p.count else { return .failure(.badCodecPayload) }
            d.pictureIDOffset = o
            if p[o] & 0x80 != 0 {  // M
                guard o + 1 < p.count else { return .failure(.badCodecPayload) }
                d.pictureIDIs15Bit = true
                d.pictureID = p.u16(o) & 0x7FFF
                o += 2
            } else {
                d.pictureID = UInt16(p[o])
                o += 1
            }
        }
        if b0 & 0x20 != 0 {  // L
            guard o < p.count else { return .failure(.badCodecPayload) }
            let l = p[o]
            d.temporalLayer = l >> 5
            d.switchingUpPoint = l & 0x10 != 0
            d.spatialLayer = (l >> 1) & 0x07
            d.interLayerDependency = l & 0x01 != 0
            o += 1
            if !d.flexibleMode {
                guard o < p.count else { return .failure(.badCodecPayload) }
                d.tl0Offset = o
                d.tl0PicIdx = p[o]
                o += 1
            }
        }
        if d.flexibleMode && d.interPicturePredicted {
            var more = true
            while more {
                // A fourth P_DIFF does not fit: the format allows three references.
                guard o < p.count, d.referenceDiffs.append(p[o] >> 1) else { return .failure(.badCodecPayload) }
                more = p[o] & 0x01 != 0
                o += 1
            }
        }
        if b0 & 0x02 != 0 {  // V
            switch VP9ScalabilityStructure.parse(p, at: o) {
            case .success(let ss):
                d.scalability = ss
                o += ss.size
            case .failure(let reason):
                return .failure(reason)
            }
        }
        d.size = o
        return .success(d)
    }

    /// Writes a picture ID (same width as received: 7 or 15 bits, so a 7-bit one modulo 128) and TL0PICIDX
    /// into `payload`, where this descriptor was parsed from. Fields the descriptor does not carry are left
    /// alone.
    public func rewrite(pictureID: UInt16?, tl0PicIdx: UInt8?, in payload: UnsafeMutableRawBufferPointer) {
        if let pid = pictureID, self.pictureID != nil { writePictureID(pid, is15Bit: pictureIDIs15Bit, at: pictureIDOffset, in: payload) }
        if let t = tl0PicIdx, self.tl0PicIdx != nil { payload[tl0Offset] = t }
    }
}
