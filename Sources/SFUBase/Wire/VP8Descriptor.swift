/// The VP8 payload descriptor (RFC 7741 section 4.2), located in place so that its picture ID, TL0PICIDX and
/// KEYIDX can be rewritten in the forwarded copy without changing its size.
///
///     |X|R|N|S|R| PID |   required
///     |I|L|T|K| RSV   |   if X
///     |M| PictureID   |   if I (M: 15-bit picture ID, one more byte)
///     |   TL0PICIDX   |   if L
///     |TID|Y| KEYIDX  |   if T or K
/// Writes a picture ID in the width it was received with (RFC 7741 section 4.2, RFC 9628 section 4.2: M=1 and
/// 15 bits, or 7 bits, modulo 128): VP8's and VP9's descriptors carry it alike.
func writePictureID(_ pid: UInt16, is15Bit: Bool, at offset: Int, in payload: UnsafeMutableRawBufferPointer) {
    if is15Bit {
        payload.setU16(0x8000 | (pid & 0x7FFF), at: offset)
    } else {
        payload[offset] = UInt8(pid & 0x7F)
    }
}

public struct VP8Descriptor: Equatable, Sendable {
    public var nonReference: Bool
    public var startOfPartition: Bool
    public var partitionIndex: UInt8
    public var pictureID: UInt16?
    public var pictureIDIs15Bit: Bool
    public var tl0PicIdx: UInt8?
    public var temporalLayer: UInt8?
    public var layerSync: Bool
    public var keyIndex: UInt8?
    /// Offsets within the RTP payload of the optional fields.
    public var pictureIDOffset: Int
    public var tl0Offset: Int
    public var tkOffset: Int
    /// Descriptor length: the VP8 payload starts after it.
    public var size: Int
    /// S=1, PID=0 and the P bit of the VP8 payload header clear (RFC 7741 section 4.3): the first packet of a
    /// key frame, where a receiver can start decoding.
    public var isKeyframeStart: Bool

    /// The frame size a key frame's header carries (RFC 6386 section 9.1: the 3-byte frame tag, the start code
    /// 9d 01 2a, then 14-bit width and height, little-endian, each under 2 scaling bits), read from the
    /// payload of the packet that starts it (`isKeyframeStart`); nil when it is not there or not a key frame.
    public func keyframeSize(in payload: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        let o = size
        guard isKeyframeStart, payload.count >= o + 10, payload[o] & 0x01 == 0,
              payload[o + 3] == 0x9D, payload[o + 4] == 0x01, payload[o + 5] == 0x2A else { return nil }
        let w = Int(payload[o + 6]) | Int(payload[o + 7] & 0x3F) << 8
        let h = Int(payload[o + 8]) | Int(payload[o + 9] & 0x3F) << 8
        return w > 0 && h > 0 ? (w, h) : nil
    }

    public static func parse(_ p: UnsafeRawBufferPointer) -> Result<VP8Descriptor, DropReason> {
        guard p.count >= 1 else { return .failure(.badCodecPayload) }
        let b0 = p[0]
        var d = VP8Descriptor(nonReference: b0 & 0x20 != 0, startOfPartition: b0 & 0x10 != 0,
                              partitionIndex: b0 & 0x07, pictureID: nil, pictureIDIs15Bit: false, tl0PicIdx: nil,
                              temporalLayer: nil, layerSync: false, keyIndex: nil, pictureIDOffset: 0, tl0Offset: 0,
                              tkOffset: 0, size: 1, isKeyframeStart: false)
        var o = 1
        if b0 & 0x80 != 0 {
            guard o < p.count else { return .failure(.badCodecPayload) }
            let x = p[o]
            o += 1
            if x & 0x80 != 0 {  // I
                guard o < p.count else { return .failure(.badCodecPayload) }
                d.pictureIDOffset = o
                if p[o] & 0x80 != 0 {
                    guard o + 1 < p.count else { return .failure(.badCodecPayload) }
                    d.pictureIDIs15Bit = true
                    d.pictureID = p.u16(o) & 0x7FFF
                    o += 2
                } else {
                    d.pictureID = UInt16(p[o] & 0x7F)
                    o += 1
                }
            }
            if x & 0x40 != 0 {  // L
                guard o < p.count else { return .failure(.badCodecPayload) }
                d.tl0Offset = o
                d.tl0PicIdx = p[o]
                o += 1
            }
            if x & 0x30 != 0 {  // T or K
                guard o < p.count else { return .failure(.badCodecPayload) }
                d.tkOffset = o
                if x & 0x20 != 0 { d.temporalLayer = p[o] >> 6; d.layerSync = p[o] & 0x20 != 0 }
                if x & 0x10 != 0 { d.keyIndex = p[o] & 0x1F }
                o += 1
            }
        }
        d.size = o
        if d.startOfPartition && d.partitionIndex == 0 {
            guard o < p.count else { return .failure(.badCodecPayload) }
            d.isKeyframeStart = p[o] & 0x01 == 0
        }
        return .success(d)
    }

    /// Writes a picture ID (same width as received: 7 or 15 bits), TL0PICIDX and KEYIDX into `payload`, where
    /// this descriptor was parsed from. Fields the descriptor does not carry are left alone.
    public func rewrite(pictureID: UInt16?, tl0PicIdx: UInt8?, keyIndex: UInt8?, in payload: UnsafeMutableRawBufferPointer) {
        if let pid = pictureID, self.pictureID != nil { writePictureID(pid, is15Bit: pictureIDIs15Bit, at: pictureIDOffset, in: payload) }
        if let t = tl0PicIdx, self.tl0PicIdx != nil { payload[tl0Offset] = t }
        if let k = keyIndex, self.keyIndex != nil { payload[tkOffset] = (payload[tkOffset] & 0xE0) | (k & 0x1F) }
    }

    /// Modulus of the picture ID as carried: 2^15 or 2^7.
    public var pictureIDModulus: UInt16 { pictureIDIs15Bit ? 0x8000 : 0x80 }
}
