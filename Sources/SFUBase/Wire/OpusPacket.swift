/// What the TOC byte and the first payload bits of an Opus packet say without decoding (RFC 6716).
public struct OpusPacketInfo: Equatable, Sendable {
    public enum Mode: Sendable { case silk, hybrid, celt }
    /// Voice activity from the SILK VAD flags (section 4.2.3); `.unknown` for CELT-only packets.
    public enum Activity: Sendable, Equatable { case voice, noVoice, unknown }

    public var config: UInt8
    public var stereo: Bool
    public var frameCount: Int
    /// Duration of one Opus frame in units of 0.5 ms (2.5 ms frames are 5).
    public var frameHalfMillis: Int
    /// A DTX "no data" packet (section 3.2.1: a zero-length frame as a 1-byte code 0/1 packet, or a 2-byte
    /// code 2 packet): silence that must never be decoded for level.
    public var isDTX: Bool
    public var activity: Activity
    /// Whether any frame carries a SILK LBRR (in-band FEC) flag.
    public var hasLBRR: Bool

    public var mode: Mode { config < 12 ? .silk : (config < 16 ? .hybrid : .celt) }
    /// Samples at 48 kHz in the whole packet.
    public var samples48k: Int { frameCount * frameHalfMillis * 24 }

    /// Section 3.1, Table 2: frame sizes by configuration number.
    static func frameHalfMillis(config: UInt8) -> Int {
        switch config {
        case 0...11: return [20, 40, 80, 120][Int(config & 3)]
        case 12...15: return [20, 40][Int(config & 1)]
        default: return [5, 10, 20, 40][Int(config & 3)]
        }
    }

    /// Parses the TOC and frame layout (section 3.2). Malformed packets (section 3.4 requirements R1-R7 that
    /// can be checked cheaply) are refused with `.badCodecPayload`.
    public static func parse(_ p: UnsafeRawBufferPointer) -> Result<OpusPacketInfo, DropReason> {
        guard p.count >= 1 else { return .failure(.badCodecPayload) }
        let toc = p[0]
        let config = toc >> 3
        let stereo = toc & 0x04 != 0
        let code = toc & 0x03
        var info = OpusPacketInfo(config: config, stereo: stereo, frameCount: 1,
                                  frameHalfMillis: frameHalfMillis(config: config),
                                  isDTX: false, activity: .unknown, hasLBRR: false)
        // Locate the first byte of each frame (only the first byte matters for VAD/LBRR).
        var frameStarts: (Int, Int) = (-1, -1)  // first two frames; enough for the VAD gate
        var framesWithData = 0
        switch code {
        case 0:
            info.isDTX = p.count == 1
            if p.count > 1 { frameStarts.0 = 1; framesWithData = 1 }
        case 1:
            guard (p.count - 1) % 2 == 0 else { return .failure(.badCodecPayload) }
            info.frameCount = 2
            info.isDTX = p.count == 1
            if p.count > 1 { frameStarts = (1, 1 + (p.count - 1) / 2); framesWithData = 2 }
        case 2:
            info.frameCount = 2
            guard p.count >= 2 else { return .failure(.badCodecPayload) }
            var o = 1
            var len1 = Int(p[1])
            if len1 >= 252 {
                guard p.count >= 3 else { return .failure(.badCodecPayload) }
                len1 += 4 * Int(p[2])  // section 3.2.1: first + 4 * second
                o = 3
            } else {
                o = 2
            }
            guard o + len1 <= p.count else { return .failure(.badCodecPayload) }
            info.isDTX = p.count == 2
            if len1 > 0 { frameStarts.0 = o; framesWithData += 1 }
            if o + len1 < p.count { frameStarts.1 = o + len1; framesWithData += 1 }
        default:
            guard p.count >= 2 else { return .failure(.badCodecPayload) }
            let b1 = p[1]
            let m = Int(b1 & 0x3F)
            guard m >= 1, m * info.frameHalfMillis <= 240 else { return .failure(.badCodecPayload) }  // <= 120 ms
            info.frameCount = m
            var o = 2
            var padding = 0
            if b1 & 0x40 != 0 {
                while true {
                    guard o < p.count else { return .failure(.badCodecPayload) }
                    let v = Int(p[o]); o += 1
                    padding += v == 255 ? 254 : v
                    if v != 255 { break }
                }
            }
            let vbr = b1 & 0x80 != 0
            var lengths: (Int, Int) = (0, 0)
            if vbr {
                var sum = 0
                for i in 0..<(m - 1) {
                    guard o < p.count else { return .failure(.badCodecPayload) }
                    var len = Int(p[o]); o += 1
                    if len >= 252 {
                        guard o < p.count else { return .failure(.badCodecPayload) }
                        len += 4 * Int(p[o]); o += 1
                    }
                    if i == 0 { lengths.0 = len } else if i == 1 { lengths.1 = len }
                    sum += len
                }
                guard o + sum + padding <= p.count else { return .failure(.badCodecPayload) }
                let last = p.count - padding - o - sum
                if m == 1 { lengths.0 = last } else if m == 2 { lengths.1 = last }
            } else {
                let body = p.count - padding - o
                guard body >= 0, body % m == 0 else { return .failure(.badCodecPayload) }
                lengths = (body / m, body / m)
            }
            if lengths.0 > 0 { frameStarts.0 = o; framesWithData += 1 }
            if m >= 2, lengths.1 > 0 { frameStarts.1 = o + lengths.0; framesWithData += 1 }
            info.isDTX = framesWithData == 0
        }
        if info.mode != .celt, !info.isDTX {
            // Section 4.2.3: the header bits of each SILK channel: one VAD flag per SILK frame, then LBRR.
            let n = info.frameHalfMillis <= 40 ? 1 : info.frameHalfMillis / 40
            var voice = false
            var lbrr = false
            for start in [frameStarts.0, frameStarts.1] where start >= 0 && start < p.count {
                let b0 = p[start]
                if b0 >> (8 - n) != 0 { voice = true }
                if (b0 >> (7 - n)) & 1 != 0 { lbrr = true }
                if stereo {
                    let side = UInt8(truncatingIfNeeded: Int(b0) << (n + 1))
                    if side >> (8 - n) != 0 { voice = true }
                }
            }
            info.activity = voice ? .voice : .noVoice
            info.hasLBRR = lbrr
        } else if info.isDTX {
            info.activity = .noVoice
        }
        return .success(info)
    }
}

/// The client-to-mixer audio level header extension (RFC 6464 section 3): V flag and level 0-127 in -dBov.
public struct AudioLevelExtension: Equatable, Sendable {
    public var voiceActivity: Bool
    /// 0 (loudest) to 127 (digital silence), in -dBov.
    public var level: UInt8

    public static let uri = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"

    public init(voiceActivity: Bool, level: UInt8) {
        self.voiceActivity = voiceActivity
        self.level = min(level, 127)
    }

    /// Reads the first byte of the element; the one-byte form carries one byte, the two-byte form may pad.
    public static func read(_ p: UnsafeRawBufferPointer, range: Range<Int>) -> AudioLevelExtension? {
        guard !range.isEmpty else { return nil }
        let b = p[range.lowerBound]
        return AudioLevelExtension(voiceActivity: b & 0x80 != 0, level: b & 0x7F)
    }

    public var byte: UInt8 { (voiceActivity ? 0x80 : 0) | level }
}
