/// Throttles keyframe requests (PLI) to one video source: at most one per `minInterval` (200 ms), and while a
/// switch waits for a keyframe, one repeat every clamp(2 RTT, 200 ms, 1000 ms) (`media-core.md` section 5).
public struct KeyframeRequester: Sendable {
    public var minInterval: MonoTime.Interval = .milliseconds(200)
    public private(set) var lastSent: MonoTime?
    /// Set while someone waits for a keyframe from this source.
    public private(set) var waitingSince: MonoTime?
    public private(set) var sentCount = 0

    public init() {}

    /// Whether a PLI may go out now; records it when it may.
    public mutating func request(now: MonoTime) -> Bool {
        if let last = lastSent, now - last < minInterval { return false }
        lastSent = now
        sentCount += 1
        return true
    }

    public mutating func startWaiting(now: MonoTime) { if waitingSince == nil { waitingSince = now } }
    public mutating func keyframeArrived() { waitingSince = nil }

    /// Repeat interval while waiting, from the round-trip time when known.
    public static func retryInterval(rtt: MonoTime.Interval?) -> MonoTime.Interval {
        let twice = (rtt?.nanoseconds ?? 100_000_000) * 2
        return MonoTime.Interval(nanoseconds: min(1_000_000_000, max(200_000_000, twice)))
    }

    /// When the next repeat is due, if waiting.
    public func nextRetry(rtt: MonoTime.Interval?) -> MonoTime? {
        guard waitingSince != nil, let last = lastSent else { return nil }
        return last + Self.retryInterval(rtt: rtt)
    }
}
