/// When a live stream's encoder needs a key frame. FFmpeg shows nothing until its VP8 decoder has had one, and
/// the publisher sends one only when asked (a browser sends no periodic key frames). A key frame that reaches
/// the encoder's port before FFmpeg has bound it, or loses a packet on the way there (plain RTP in from the
/// node: no retransmission, and FFmpeg reading an SDP file sends no PLI, RFC 4585 section 6.3.1), is gone, and
/// with a fixed handful of asks after a start an encoder slow to come up on a loaded machine could wait for
/// ever. So the asking follows what FFmpeg reports (`-progress`, its `frame=` count): after a (re)start, ask at
/// `firstAsk` and then every `untilUp` until a picture comes out; once up, ask every `stalledAfter` while no new
/// picture comes (a lost packet left the decoder waiting). A slot with nobody in it makes an ask a no-op at the
/// room, so an idle stream costs nothing at the publishers.
///
/// Pure: fed seconds on any monotonic clock and FFmpeg's frame counts, it answers whether to ask now.
struct EncoderPictureWatch {
    static let firstAsk = 0.3
    static let untilUp = 1.0
    static let stalledAfter = 2.0

    let startedAt: Double
    /// FFmpeg's output frames so far (this process's count; a restart starts a new watch).
    private(set) var frames = 0
    /// When the count last grew.
    private(set) var advancedAt: Double?
    private(set) var askedAt: Double?
    /// Asks since the start, and how many before the first picture.
    private(set) var asks = 0
    private(set) var asksBeforeUp: Int?

    init(startedAt: Double) { self.startedAt = startedAt }

    var isUp: Bool { frames > 0 }

    /// A progress report's frame count. True for the report that shows the first picture.
    mutating func progress(frames n: Int, at now: Double) -> Bool {
        guard n > frames else { return false }
        let first = frames == 0
        frames = n
        advancedAt = now
        if first { asksBeforeUp = asks }
        return first
    }

    /// Whether to ask for a key frame now; records the ask when so.
    mutating func shouldAsk(at now: Double) -> Bool {
        let due: Bool
        if let advancedAt {
            due = now - advancedAt >= Self.stalledAfter && askedAt.map { now - $0 >= Self.stalledAfter } ?? true
        } else {
            due = now - startedAt >= Self.firstAsk && askedAt.map { now - $0 >= Self.untilUp } ?? true
        }
        if due {
            askedAt = now
            asks += 1
        }
        return due
    }
}

/// FFmpeg's `-progress` output, read as it comes: blocks of `key=value` lines, one block per stats period,
/// each ending with `progress=continue` (or `progress=end`). `frame=` gives the pictures out; the first block
/// says the output is open - FFmpeg opens its output (for RTMP: connect, handshake, the server's answer to
/// `publish`) before its first report, and a server that refuses or never answers leaves it without any. A
/// line longer than `maxLine` bytes is not FFmpeg's; it is skipped whole.
struct FFmpegProgressReader {
    static let maxLine = 256
    private var line: [UInt8] = []
    private var skipping = false
    /// Complete blocks read so far.
    private(set) var reports = 0
    private static let blockEnd = Array("progress=".utf8)

    init() { line.reserveCapacity(Self.maxLine) }

    /// The frame counts in `bytes`, in order (a line split across reads is joined).
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [Int] {
        var out: [Int] = []
        for b in bytes {
            if b == UInt8(ascii: "\n") {
                if !skipping, let n = Self.frameCount(line) { out.append(n) }
                if !skipping, line.starts(with: Self.blockEnd) { reports += 1 }
                line.removeAll(keepingCapacity: true)
                skipping = false
            } else if !skipping {
                if line.count < Self.maxLine { line.append(b) } else { skipping = true; line.removeAll(keepingCapacity: true) }
            }
        }
        return out
    }

    /// `frame=<digits>` (a carriage return before the newline allowed), nil for any other line.
    static func frameCount(_ line: [UInt8]) -> Int? {
        let prefix = Array("frame=".utf8)
        guard line.count > prefix.count, line.starts(with: prefix) else { return nil }
        var digits = line[prefix.count...]
        if digits.last == UInt8(ascii: "\r") { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.count <= 12, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }
}
