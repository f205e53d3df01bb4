/// What the load generator embeds in each media payload so that a receiver can tell who sent a packet and
/// when, after the node has rewritten everything in the RTP header: 12 bytes at the very end of the payload,
/// `[send time ns: u64][publisher: u16]["SB"]`.
///
/// Opus packets carry it as padding (RFC 6716 section 3.2.5: a code 3 packet with one frame and the padding
/// flag), so the node's decoder - and any decoder - ignores it. VP8 payloads carry it after the frame data:
/// the generator's receivers never decode, and the node reads only the payload descriptor and frame header.
public enum BenchStamp {
    public static let size = 12
    static let magic: (UInt8, UInt8) = (0x53, 0x42)

    /// An Opus packet with the stamp as padding. Only code 0 packets (one frame; what a 20 ms encoder makes)
    /// are rewritten; others come back unchanged.
    public static func opus(_ packet: [UInt8], sentAt ns: UInt64, publisher: UInt16) -> [UInt8] {
        guard let toc = packet.first, toc & 0x03 == 0 else { return packet }
        var out: [UInt8] = [toc | 0x03, 0x41, UInt8(size)]  // code 3; count byte: VBR 0, padding 1, M = 1; padding length
        out += packet[1...]
        out += bytes(ns, publisher)
        return out
    }

    /// A VP8 RTP payload (descriptor + frame data) with the stamp appended.
    public static func vp8(_ payload: [UInt8], sentAt ns: UInt64, publisher: UInt16) -> [UInt8] {
        payload + bytes(ns, publisher)
    }

    static func bytes(_ ns: UInt64, _ publisher: UInt16) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: size)
        for i in 0..<8 { b[i] = UInt8(truncatingIfNeeded: ns >> (56 - 8 * UInt64(i))) }
        b[8] = UInt8(publisher >> 8)
        b[9] = UInt8(publisher & 0xFF)
        b[10] = magic.0
        b[11] = magic.1
        return b
    }

    /// Reads the stamp at the end of a payload, if there is one.
    public static func read(_ payload: UnsafeRawBufferPointer) -> (sentAt: UInt64, publisher: UInt16)? {
        let n = payload.count
        guard n >= size, payload[n - 2] == magic.0, payload[n - 1] == magic.1 else { return nil }
        var ns: UInt64 = 0
        for i in 0..<8 { ns = ns << 8 | UInt64(payload[n - size + i]) }
        return (ns, UInt16(payload[n - 4]) << 8 | UInt16(payload[n - 3]))
    }
}
