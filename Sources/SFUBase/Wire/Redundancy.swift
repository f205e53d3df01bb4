/// RTP retransmission payloads (RFC 4588 section 4): an RTX packet carries the original packet's sequence
/// number (OSN) in its payload's first two bytes, then the original payload, on its own SSRC and payload type.
public enum RTXPayload {
    /// Turns the RTX packet of `length` bytes in `buffer` back into the original, in place: payload type,
    /// sequence number and SSRC of the original stream, the OSN removed, padding dropped. Returns the new
    /// length, or nil for a padding-only RTX packet (a sender's bandwidth probe, RFC 4588 section 4:
    /// "not a retransmission").
    public static func restore(_ buffer: UnsafeMutableRawBufferPointer, header: RTPHeader, payloadType: UInt8,
                               ssrc: UInt32) -> Int? {
        guard header.payloadLength >= 2 else { return nil }
        let start = header.payloadOffset
        let osn = UnsafeRawBufferPointer(buffer).u16(start)
        let moved = header.payloadLength - 2
        if moved > 0 {
            buffer.baseAddress!.advanced(by: start).copyMemory(from: buffer.baseAddress!.advanced(by: start + 2), byteCount: moved)
        }
        buffer[0] &= ~0x20  // padding gone
        buffer[1] = (buffer[1] & 0x80) | (payloadType & 0x7F)
        buffer.setU16(osn, at: 2)
        buffer.setU32(ssrc, at: 8)
        return start + moved
    }
}

/// Audio redundancy (RFC 2198, what Chromium's Opus RED sends): block headers (4 bytes each for the
/// redundant blocks: F=1, payload type, timestamp offset, length; 1 byte for the primary: F=0, payload
/// type), then the redundant blocks' data, then the primary block's. Located in place, allocating nothing.
public struct REDPayload: Equatable, Sendable {
    /// Blocks, the primary included; block i's header starts at 4 i.
    public var blocks: Int
    /// The primary block, relative to the payload.
    public var primary: Range<Int>
    public var primaryPayloadType: UInt8

    /// At most this many blocks: Chromium sends 1-2 redundant ones; more is refused.
    public static let maxBlocks = 8

    public static func parse(_ payload: UnsafeRawBufferPointer) -> Result<REDPayload, DropReason> {
        var o = 0
        var data = 0
        var blocks = 1
        while true {
            guard o < payload.count else { return .failure(.truncated) }
            if payload[o] & 0x80 == 0 { break }
            guard o + 4 <= payload.count else { return .failure(.truncated) }
            data += Int(payload.u16(o + 2) & 0x3FF)
            o += 4
            blocks += 1
            guard blocks <= maxBlocks else { return .failure(.badCodecPayload) }
        }
        let start = o + 1 + data
        guard start <= payload.count else { return .failure(.badLength) }
        return .success(REDPayload(blocks: blocks, primary: start..<payload.count, primaryPayloadType: payload[o] & 0x7F))
    }

    /// Rewrites every block's payload type to `payloadType` in a copy of the payload (the subscriber's Opus
    /// number may differ from the publisher's).
    public func rewritePayloadTypes(_ payloadType: UInt8, in payload: UnsafeMutableRawBufferPointer) {
        for i in 0..<blocks { payload[4 * i] = (payload[4 * i] & 0x80) | (payloadType & 0x7F) }
    }
}
