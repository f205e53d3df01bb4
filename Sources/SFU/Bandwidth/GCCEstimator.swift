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
    /// Acknowledged packets (arrival micros, bytes), newest last, for the acknowledged rate, and their bytes.
    private var acked = RingBuffer<(arrival: Int64, size: Int)>(capacity: 256)
    private var ackedBytes = 0
    private var highestSequence: Int64 = -1
    public private(set) var acknowledgedBitrate: Double?
    public private(set) var lastProbeResult: Double?
    public static let ackWindowMicros: Int64 = 500_000
    /// The last `deliveryWindowPackets` acknowledged media packets (send time, arrival micros, bytes), newest
    /// last, and the rates they gave over the last `peakWindowMicros` of arrivals (arrival micros, bits/s).
    /// Over-use is judged on a smoothed delay trend and may be called only once the queue that caused it has
    /// drained and the sender sends less again - keyframes of videos coming back after a quiet spell, then
    /// frames: the decrease starts from the highest rate the path delivered meanwhile, which is what it can
    /// carry, not from the acknowledged rate of the quiet second before.
    private var delivered = RingBuffer<(send: MonoTime, arrival: Int64, size: Int)>(capacity: deliveryWindowPackets + 1)
    private var deliveryRates = RingBuffer<(arrival: Int64, bps: Double)>(capacity: 16)
    public static let deliveryWindowPackets = 20
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
            // Probe clusters go out faster than the path may carry, by design: they measure the path through
            // `ProbeMeasurement` and must not read as self-inflicted congestion or loss.
            let probe = p.probeCluster != nil
            if probe { probes.add(p) } else { total += 1 }
            guard let arrival = p.arrivalMicros else { if !probe { lost += 1 }; continue }
            started = true
            acked.append((arrival, p.size))
            ackedBytes += p.size
            if !probe {
                delayTrend.update(sendTime: p.sendTime, arrivalMicros: arrival, size: p.size)
                delivered.append((p.sendTime, arrival, p.size))
                if delivered.count > Self.deliveryWindowPackets { delivered.removeFirst() }
            }
        }
        guard started else { return }
        acknowledgedBitrate = ackedRate()
        if let bps = deliveryRate(), let newest = delivered.last?.arrival {
            deliveryRates.append((newest, bps))
            deliveryRates.removeAll { $0.arrival < newest - Self.peakWindowMicros }
        }
        if let r = probes.highestCompletedRate(reportedUpTo: newestSend) {
            lastProbeResult = r
            if r > delay.bitrate { delay.setEstimate(r, now: now) }
            if r > loss.bitrate { loss.reset(to: r) }
        }
        let overusing = delayTrend.usage == .overusing
        delay.update(delayTrend.usage, acknowledged: overusing ? peakDeliveryRate ?? acknowledgedBitrate : acknowledgedBitrate, now: now)
        loss.update(lost: lost, total: total, ceiling: delay.bitrate, now: now)
    }

    /// Bytes acknowledged over the last `ackWindowMicros` of arrival time, as bits per second.
    private mutating func ackedRate() -> Double? {
        guard let newest = acked.last?.arrival else { return acknowledgedBitrate }
        let from = newest - Self.ackWindowMicros
        while let first = acked.first, first.arrival < from { ackedBytes -= acked.removeFirst().size }
        guard let oldest = acked.first?.arrival, newest - oldest >= Self.ackWindowMicros / 2 else { return acknowledgedBitrate }
        return Double(ackedBytes) * 8 / (Double(newest - oldest) / 1e6)
    }

    /// The highest delivery rate of the last `peakWindowMicros`.
    private var peakDeliveryRate: Double? {
        var peak: Double?
        for r in deliveryRates { peak = max(peak ?? r.bps, r.bps) }
        return peak
    }

    /// The bytes of the last `deliveryWindowPackets` media packets (but the first) over the longer of the time
    /// they took to send and to arrive, as bits per second: packets sent in a burst count at the rate the path
    /// spread them to, packets a queue released at once at the rate they were sent.
    private func deliveryRate() -> Double? {
        guard delivered.count >= Self.deliveryWindowPackets, let first = delivered.first, let last = delivered.last else { return nil }
        var earliest = Int64.max, latest = Int64.min, bytes = 0
        for (i, d) in delivered.enumerated() {
            earliest = min(earliest, d.arrival)
            latest = max(latest, d.arrival)
            if i > 0 { bytes += d.size }
        }
        let seconds = max((last.send - first.send).seconds, Double(latest - earliest) / 1e6)
        guard seconds > 0 else { return nil }
        return Double(bytes) * 8 / seconds
    }
}
