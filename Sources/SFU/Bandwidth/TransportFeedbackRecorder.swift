/// The receiving side of transport-wide congestion control for one connection: records when each packet
/// arrived, by its transport-wide sequence number, and writes the feedback the sender's estimator reads
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 section 3.1). The node sends it to publishers about
/// every 100 ms (libwebrtc sends 50-250 ms apart), so their own GCC sees the uplink as it is.
///
/// Arrivals live in a fixed ring indexed by sequence number: recording allocates nothing. A feedback packet
/// covers the losses since the previous one plus at most `maxPacketsPerFeedback` sequence numbers (its size
/// stays well under the MTU); more make several packets. A packet that arrives after the feedback covering it
/// was sent is not reported again.
public struct TransportFeedbackRecorder: Sendable {
    public static let capacity = 1024
    public static let maxPacketsPerFeedback = 400
    public var interval: MonoTime.Interval = .milliseconds(100)

    private var unwrapper = SequenceUnwrapper()
    private var sequences = [Int64](repeating: -1, count: capacity)
    private var arrivals = [Int64](repeating: 0, count: capacity)
    /// The first sequence number not yet reported, and the highest seen.
    private var lowest: Int64?
    private var highest: Int64 = -1
    private var feedbackCount: UInt8 = 0
    public private(set) var nextFeedback: MonoTime = .never
    private var symbols: [UInt8] = []
    private var deltas: [Int32] = []

    public init() {}

    /// Notes that the packet with transport-wide sequence number `sequence` arrived at `now`.
    public mutating func record(sequence: UInt16, arrival now: MonoTime) {
        if !hasPending, nextFeedback < now { nextFeedback = now + interval }  // after a pause, report in an interval
        let ext = unwrapper.unwrap(sequence)
        guard ext >= 0 else { return }
        if lowest == nil {
            lowest = ext
            nextFeedback = now + interval
        }
        guard let low = lowest, ext >= low else { return }  // already reported
        let i = Int(ext) & (Self.capacity - 1)
        sequences[i] = ext
        arrivals[i] = now.nanoseconds / 1000
        if ext > highest { highest = ext }
        if highest - low >= Int64(Self.capacity) { lowest = highest - Int64(Self.capacity) + 1 }  // the ring forgot them
    }

    private func arrival(_ ext: Int64) -> Int64? {
        let i = Int(ext) & (Self.capacity - 1)
        return sequences[i] == ext ? arrivals[i] : nil
    }

    /// Whether a feedback is due at `now` (there is something to report and the interval has passed).
    public func isDue(_ now: MonoTime) -> Bool { now >= nextFeedback && hasPending }

    /// Arrivals not yet reported.
    public var hasPending: Bool { (lowest ?? .max) <= highest }

    /// Writes one feedback packet for what arrived since the last one into `out`; nil when nothing is left to
    /// report (call again while it returns a length: a long gap takes several packets). `sender` is the
    /// node's RTCP SSRC, `media` one of the connection's media SSRCs.
    public mutating func writeFeedback(sender: UInt32, media: UInt32, now: MonoTime, into out: UnsafeMutableRawBufferPointer) -> Int? {
        nextFeedback = now + interval
        guard let base = lowest, base <= highest else { return nil }
        // The feedback starts at the first packet not yet reported, received or not: packets lost after the
        // last one the previous feedback reported (a burst under way when it was sent) are reported lost here.
        var firstReceived = base
        while firstReceived <= highest, arrival(firstReceived) == nil { firstReceived += 1 }
        guard firstReceived <= highest, let first = arrival(firstReceived) else { lowest = highest + 1; return nil }
        // Reference time in 64 ms units (24 bits, signed), deltas in 250 us units from it; the first received
        // packet's delta is from the reference, each later one from the packet before it.
        let reference = first / 64_000
        var t = reference * 64_000
        symbols.removeAll(keepingCapacity: true)
        deltas.removeAll(keepingCapacity: true)
        // Leading losses cost one run-length chunk per 8,191 and at most the ring's size: only what follows
        // them counts towards the packet's bound.
        symbols.append(contentsOf: repeatElement(0, count: Int(firstReceived - base)))
        let limit = symbols.count + Self.maxPacketsPerFeedback
        var s = firstReceived
        while s <= highest, symbols.count < limit {
            if let a = arrival(s) {
                let ticks = (a - t) / 250
                if (0...255).contains(ticks) {
                    symbols.append(1)
                } else if (Int64(Int16.min)...Int64(Int16.max)).contains(ticks) {
                    symbols.append(2)
                } else {
                    break  // a jump no delta can carry: the next feedback starts here
                }
                deltas.append(Int32(ticks))
                t += ticks * 250
            } else {
                symbols.append(0)
            }
            s += 1
        }
        while symbols.last == 0 { symbols.removeLast(); s -= 1 }  // end on a received packet
        var w = ByteWriter(out)
        let headerAt = w.offset
        w.zeros(4)
        w.u32(sender)
        w.u32(media)
        w.u16(UInt16(truncatingIfNeeded: base))
        w.u16(UInt16(symbols.count))
        w.u24(UInt32(truncatingIfNeeded: reference) & 0xFF_FFFF)
        w.u8(feedbackCount)
        var i = 0
        while i < symbols.count {
            var run = 1
            while i + run < symbols.count, symbols[i + run] == symbols[i], run < 0x1FFF { run += 1 }
            if run >= 7 {
                w.u16(UInt16(symbols[i]) << 13 | UInt16(run))  // run-length chunk
                i += run
            } else {
                var chunk: UInt16 = 0xC000  // status vector, 7 two-bit symbols
                for k in 0..<7 where i + k < symbols.count { chunk |= UInt16(symbols[i + k]) << (12 - 2 * UInt16(k)) }
                w.u16(chunk)
                i += 7
            }
        }
        var d = 0
        for sym in symbols where sym != 0 {
            if sym == 1 { w.u8(UInt8(deltas[d])) } else { w.u16(UInt16(bitPattern: Int16(deltas[d]))) }
            d += 1
        }
        let padding = (4 - (w.offset - headerAt) % 4) % 4
        guard w.zeros(padding), w.offset <= out.count else { return nil }
        let words = (w.offset - headerAt) / 4 - 1
        out[headerAt] = 0x80 | FeedbackFormat.transportCC
        out[headerAt + 1] = RTCPPacketType.transportFeedback.rawValue
        out.setU16(UInt16(words), at: headerAt + 2)
        feedbackCount &+= 1
        lowest = s
        return w.offset
    }
}
