/// The lowest a subscriber's downlink estimate has been over the last few seconds, in fixed memory (the
/// minimum per 250 ms bucket over `buckets`). A delay-based estimate (GCC, RFC 8698's family) saws: it climbs
/// until the bottleneck's queue grows, then cuts to 0.85 x what arrived. A layer that fits only the sawtooth's
/// tops is left at its next cut; a slot climbs to a layer the estimate's floor over the last 3 s fits
/// (`Subscriber.reviewLayers`). Measured with Chromium under a 500 kbit/s cap: the estimate ran 380-560 kbit/s,
/// the middle layer plus audio needs ~405 to stay and 465 to be climbed to.
struct EstimateFloor {
    static let bucketNanos: Int64 = 250_000_000
    static let buckets = 24  // 6 s

    private var mins = [Double](repeating: .infinity, count: buckets)
    private var current: Int64 = -1

    mutating func note(_ estimate: Double, now: MonoTime) {
        roll(to: now)
        let i = Int(current % Int64(Self.buckets))
        mins[i] = min(mins[i], estimate)
    }

    /// The lowest estimate noted over the last `window` (up to 6 s; the bucket under way included), nil when
    /// none was.
    mutating func floor(over window: MonoTime.Interval, now: MonoTime) -> Double? {
        roll(to: now)
        guard current >= 0 else { return nil }
        let n = min(Self.buckets, max(1, Int((window.nanoseconds + Self.bucketNanos - 1) / Self.bucketNanos)))
        var lowest = Double.infinity
        for k in 0..<n { lowest = min(lowest, mins[Int((current - Int64(k) + Int64(Self.buckets) * 2) % Int64(Self.buckets))]) }
        return lowest.isFinite ? lowest : nil
    }

    private mutating func roll(to now: MonoTime) {
        let b = now.nanoseconds / Self.bucketNanos
        if current < 0 { current = b; return }
        guard b > current else { return }
        for k in 1...min(b - current, Int64(Self.buckets)) { mins[Int((current + k) % Int64(Self.buckets))] = .infinity }
        current = b
    }
}
