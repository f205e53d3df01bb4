/// What the node has received of one RTP stream, for its receiver reports to the publisher (RFC 3550 section
/// 6.4.1): packets against the extended sequence range (appendix A.3) and interarrival jitter (appendix A.8).
/// Fed every authenticated packet, policy or not, so a muted publisher's reports stay true.
struct ReceptionStatistics {
    let clockRate: Int
    private(set) var packets: UInt64 = 0
    private(set) var bytes: UInt64 = 0
    private(set) var lastPacketAt: MonoTime?
    /// Interarrival jitter in RTP timestamp units, smoothed by 1/16 per packet.
    private(set) var jitter: Double = 0
    private var baseSequence: Int64?
    private var expectedPrior: Int64 = 0
    private var receivedPrior: UInt64 = 0
    private var lastTransit: Int32?

    init(clockRate: Int) { self.clockRate = clockRate }

    mutating func record(extendedSequence ext: Int64, timestamp: UInt32, payloadBytes: Int, now: MonoTime) {
        packets &+= 1
        bytes &+= UInt64(payloadBytes)
        lastPacketAt = now
        if baseSequence == nil { baseSequence = ext }
        // Arrival in RTP units, modulo 2^32 like the timestamps it is compared with (32-bit arithmetic as in
        // appendix A.8, so uptime never overflows it).
        let arrival = UInt32(truncatingIfNeeded: Int64((Double(now.nanoseconds) * Double(clockRate) / 1e9).rounded(.down)))
        let transit = Int32(bitPattern: arrival &- timestamp)
        if let last = lastTransit {
            let d = Double(abs(Int64(transit &- last)))
            jitter += (d - jitter) / 16
        }
        lastTransit = transit
    }

    /// The loss figures of a report block whose extended highest sequence number is `highest`: lost since
    /// the stream began (24 bits, never negative here) and the fraction lost since the previous block, in
    /// 1/256 (appendix A.3). Starts the next interval. Nil before the first packet.
    /// Packets arrived since the last report: a stream that fell silent is not reported on again.
    var arrivedSinceReport: Bool { packets != receivedPrior }

    mutating func nextReport(highest: Int64) -> (cumulativeLost: Int32, fractionLost: UInt8)? {
        guard let base = baseSequence else { return nil }
        let expected = highest - base + 1
        let lost = max(0, expected - Int64(packets))
        let expectedInterval = expected - expectedPrior
        let receivedInterval = Int64(packets) - Int64(receivedPrior)
        expectedPrior = expected
        receivedPrior = packets
        let lostInterval = expectedInterval - receivedInterval
        let fraction = expectedInterval <= 0 || lostInterval <= 0 ? 0 : UInt8(min(255, (lostInterval << 8) / expectedInterval))
        return (Int32(min(lost, 0x7FFFFF)), fraction)
    }
}
