/// What the load generator embeds in each media payload so that a receiver can tell who sent a packet and
/// when, after the node has rewritten everything in the RTP header: bytes at the very end of the payload,
/// `[send time ns: u64][publisher: u16]["SB"]` (12 bytes), or with a frame number
/// `[send time ns: u64][frame: u32][publisher: u16]["SF"]` (16 bytes).
///
/// The frame number is the 20 ms frame of a scripted meeting (`ConversationScript`) the packet belongs to:
/// listeners compare what arrived with what was said frame by frame (`ListenerTally`), and a send time alone
/// cannot say which frame it was once publishers drift from their schedule on a loaded machine.
///
/// Opus packets carry it as padding (RFC 6716 section 3.2.5: a code 3 packet with one frame and the padding
/// flag), so the node's decoder - and any decoder - ignores it. VP8 payloads carry it after the frame data:
/// the generator's receivers never decode, and the node reads only the payload descriptor and frame header.
public enum BenchStamp {
    public static let size = 12
    public static let framedSize = 16
    static let magic: (UInt8, UInt8) = (0x53, 0x42)  // "SB"
    static let framedMagic: (UInt8, UInt8) = (0x53, 0x46)  // "SF"

    /// What a stamp says.
    public struct Stamp: Equatable, Sendable {
        public var sentAt: UInt64
        public var publisher: UInt16
        public var frame: Int?
        /// Bytes it takes in the payload (left out when counting bandwidth).
        public var size: Int { frame == nil ? BenchStamp.size : BenchStamp.framedSize }
    }

    /// An Opus packet with the stamp as padding. Only code 0 packets (one frame; what a 20 ms encoder makes)
    /// are rewritten; others come back unchanged.
    public static func opus(_ packet: [UInt8], sentAt ns: UInt64, publisher: UInt16, frame: Int? = nil) -> [UInt8] {
        guard let toc = packet.first, toc & 0x03 == 0 else { return packet }
        let stamp = bytes(ns, publisher, frame)
        // code 3; count byte: VBR 0, padding 1, M = 1; padding length
        var out: [UInt8] = [toc | 0x03, 0x41, UInt8(stamp.count)]
        out += packet[1...]
        out += stamp
        return out
    }

    /// A VP8 RTP payload (descriptor + frame data) with the stamp appended.
    public static func vp8(_ payload: [UInt8], sentAt ns: UInt64, publisher: UInt16, frame: Int? = nil) -> [UInt8] {
        payload + bytes(ns, publisher, frame)
    }

    static func bytes(_ ns: UInt64, _ publisher: UInt16, _ frame: Int?) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: frame == nil ? size : framedSize)
        for i in 0..<8 { b[i] = UInt8(truncatingIfNeeded: ns >> (56 - 8 * UInt64(i))) }
        if let frame {
            let f = UInt32(truncatingIfNeeded: frame)
            for i in 0..<4 { b[8 + i] = UInt8(truncatingIfNeeded: f >> (24 - 8 * UInt32(i))) }
        }
        let n = b.count
        b[n - 4] = UInt8(publisher >> 8)
        b[n - 3] = UInt8(publisher & 0xFF)
        (b[n - 2], b[n - 1]) = frame == nil ? magic : framedMagic
        return b
    }

    /// Reads the stamp at the end of a payload, if there is one.
    public static func read(_ payload: UnsafeRawBufferPointer) -> Stamp? {
        let n = payload.count
        guard n >= size, payload[n - 2] == magic.0 else { return nil }
        let framed: Bool
        switch payload[n - 1] {
        case magic.1: framed = false
        case framedMagic.1 where n >= framedSize: framed = true
        default: return nil
        }
        let start = n - (framed ? framedSize : size)
        var ns: UInt64 = 0
        for i in 0..<8 { ns = ns << 8 | UInt64(payload[start + i]) }
        var frame: Int?
        if framed {
            var f: UInt32 = 0
            for i in 0..<4 { f = f << 8 | UInt32(payload[start + 8 + i]) }
            frame = Int(f)
        }
        return Stamp(sentAt: ns, publisher: UInt16(payload[n - 4]) << 8 | UInt16(payload[n - 3]), frame: frame)
    }
}
