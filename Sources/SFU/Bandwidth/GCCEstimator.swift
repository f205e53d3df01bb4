/// A subscriber's downlink estimate computed by the node, the sender, from the subscriber's transport-cc
/// feedback, in the spirit of GCC (draft-ietf-rmcat-gcc-02): a delay-based rate (trend of the queueing
/// delay, `DelayTrend`, driving `AIMDRateControl`) and a loss-based rate (`LossBasedControl`); the estimate
/// is the lower of the two. Probe clusters the node sent (`SendHistory`'s probe cluster ids) that arrive
/// at a higher rate lift the estimate at once: without them an application-limited sender never learns
/// that the link would carry more.
public struct GCCEstimator: DownlinkEstimator {
    public var delayTrend = DelayTrend()
    public private(set) var delay: AIMDRateControl
    public private(set) var loss: LossBasedControl
    private var probes = ProbeMeasurement()
    private var started = false
    /// The last `ackWindowPackets` acknowledged media packets (send time, arrival micros, bytes), newest last.
    private var acked: [(send: MonoTime, arrival: Int64, size: Int)] = []
    private var highestSequence: Int64 = -1
    public private(set) var acknowledgedBitrate: Double?
    public private(set) var lastProbeResult: Double?
    /// The acknowledged rate is measured over this many packets, not over a fixed time: when a sender that
    /// sent little (audio only, after a cap) steps up and its first keyframes queue at the bottleneck, the
    /// over-use decrease must take what the link carried while the queue built, not the quiet second before.
    public static let ackWindowPackets = 20
    /// The acknowledged rates of the last `peakWindowMicros` of arrivals (arrival micros, bits/s). Over-use
    /// is judged on a smoothed delay trend and may be called only once the queue that caused it has drained
    /// and the sender sends less again (keyframes, then frames): the decrease starts from the highest rate the
    /// path delivered meanwhile, which is what it can carry.
    private var recentRates: [(arrival: Int64, bps: Double)] = []
    public static let peakWindowMicros: Int64 = 500_000

    public init(startBitrate: Double = 500_000) {
        delay = AIMDRateControl(start: startBitrate)
        loss = LossBasedControl(start: startBitrate)
    }

    public var estimate: UInt64? { started ? UInt64(min(delay.bitrate, loss.bitrate)) : nil }

    public var usage: BandwidthUsage { delayTrend.usage }

    public var rtt: MonoTime.Interval {
        get { delay.rtt }
        set { delay.rtt = newValue }
    }

    public mutating func onREMB(bitrate: UInt64, now: MonoTime) {}

    public mutating func setRTT(_ rtt: MonoTime.Interval) { delay.rtt = rtt }

    /// Feedback matched with what was sent (`SendHistory.resolve`), in sequence order.
    public mutating func onPacketFeedback(_ results: [PacketFeedback], now: MonoTime) {
        var lost = 0, total = 0
        var newestSend = MonoTime.zero
        for p in results where p.sequence > highestSequence {
            highestSequence = p.sequence
            newestSend = max(newestSend, p.sendTime)
            if p.arrivalMicros != nil { started = true }
            // Probe clusters go out faster than the path may carry, by design: they measure the path through
            // `ProbeMeasurement` and must not read as self-inflicted congestion, loss or throughput.
            if p.probeCluster != nil { probes.add(p); continue }
            total += 1
            guard let arrival = p.arrivalMicros else { lost += 1; continue }
            acked.append((p.sendTime, arrival, p.size))
            if acked.count > Self.ackWindowPackets { acked.removeFirst() }
            delayTrend.update(sendTime: p.sendTime, arrivalMicros: arrival, size: p.size)
        }
        guard started else { return }
        acknowledgedBitrate = ackedRate()
        if let bps = acknowledgedBitrate, let newest = acked.last?.arrival {
            recentRates.append((newest, bps))
            recentRates.removeAll { $0.arrival < newest - Self.peakWindowMicros }
        }
        if let r = probes.measureCompleted(reportedUpTo: newestSend).max() {
            lastProbeResult = r
            if r > delay.bitrate { delay.setEstimate(r, now: now) }
            if r > loss.bitrate { loss.reset(to: r) }
        }
        let peak = recentRates.map(\.bps).max() ?? acknowledgedBitrate
        delay.update(delayTrend.usage, acknowledged: delayTrend.usage == .overusing ? peak : acknowledgedBitrate, now: now)
        loss.update(lost: lost, total: total, ceiling: delay.bitrate, now: now)
    }

    /// The bytes of the last `ackWindowPackets` acknowledged packets (but the first) over the longer of the
    /// time they took to send and to arrive, as bits per second: packets sent in a burst count at the rate
    /// the path spread them to, packets a queue released at once at the rate they were sent.
    private func ackedRate() -> Double? {
        guard acked.count >= Self.ackWindowPackets, let first = acked.first, let last = acked.last,
              let earliest = acked.map(\.arrival).min(), let latest = acked.map(\.arrival).max() else { return acknowledgedBitrate }
        let seconds = max((last.send - first.send).seconds, Double(latest - earliest) / 1e6)
        guard seconds > 0 else { return acknowledgedBitrate }
        return Double(acked.dropFirst().reduce(0) { $0 + $1.size }) * 8 / seconds
    }
}
