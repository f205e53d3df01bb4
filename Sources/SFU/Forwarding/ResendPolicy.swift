/// The NACK responder's decisions, apart from the packets they concern: whether a packet a subscriber NACKs
/// is sent again, and whether its subscriber can still pay for it. A client decides what it NACKs and reports
/// its own round trip, so each packet is resent at most `maxResendsPerPacket` times, never twice within the
/// longer of `minInterval` and the round trip, and resends are paid from a per-subscriber byte budget: at most
/// `kbps`, and at most `shareOfEstimate` of its downlink estimate (RFC 4585 section 3.2 leaves repair policy
/// to the sender; these bounds keep one NACK from amplifying into a flood).
public struct ResendPolicy: Sendable, Equatable {
    public var maxResendsPerPacket: Int
    public var minInterval: MonoTime.Interval
    public var kbps: Int
    public var shareOfEstimate: Double

    public init(maxResendsPerPacket: Int, minInterval: MonoTime.Interval, kbps: Int, shareOfEstimate: Double) {
        self.maxResendsPerPacket = maxResendsPerPacket
        self.minInterval = minInterval
        self.kbps = kbps
        self.shareOfEstimate = shareOfEstimate
    }

    public enum Verdict: Equatable, Sendable {
        case resend
        /// Resent within the interval: the NACK crossed the resend in flight; ignored, not counted.
        case tooSoon
        case refused(DropReason)
    }

    /// For a packet resent `resends` times already, last at `lastResend`, to a slot whose round trip is `rtt`.
    public func admits(resends: Int, lastResend: MonoTime?, rtt: MonoTime.Interval?, now: MonoTime) -> Verdict {
        guard resends < maxResendsPerPacket else { return .refused(.resendLimit) }
        let interval = max(rtt ?? .milliseconds(100), minInterval)
        if let last = lastResend, now - last < interval { return .tooSoon }
        return .resend
    }

    /// What a subscriber with downlink estimate `estimate` (bit/s) may spend on resends, in bytes per second.
    public func bytesPerSecond(estimate: UInt64?) -> Double {
        let cap = Double(kbps) * 125
        guard let bps = estimate else { return cap }
        return min(cap, Double(bps) / 8 * shareOfEstimate)
    }

    /// Takes `bytes` from the subscriber's budget when it has them (bursts of a quarter second, at least 4 kB).
    public func pay(_ bytes: Int, from budget: inout TokenBucket, estimate: UInt64?, now: MonoTime) -> Bool {
        let rate = bytesPerSecond(estimate: estimate)
        return budget.take(bytes, perSecond: rate, burst: max(rate / 4, 4_000), now: now)
    }
}
