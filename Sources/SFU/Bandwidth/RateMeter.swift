/// A stream's bitrate over the last second or two, in fixed memory: bytes counted in 250 ms buckets, the
/// rate taken over the last `buckets` complete ones (ABWD's measured per-video bandwidth, the egress of a
/// subscriber, what a publisher sends).
public struct RateMeter: Sendable {
    static let bucketNanos: Int64 = 250_000_000
    static let buckets = 8  // 2 s

    private var counts = [Int](repeating: 0, count: buckets)
    private var current: Int64 = -1  // index of the bucket being filled (time / bucket length)
    private var filled = 0

    public init() {}

    public mutating func add(bytes: Int, now: MonoTime) {
        roll(to: now)
        counts[Int(current % Int64(Self.buckets))] += bytes
    }

    private mutating func roll(to now: MonoTime) {
        let b = now.nanoseconds / Self.bucketNanos
        if current < 0 { current = b; return }
        guard b > current else { return }
        let steps = min(b - current, Int64(Self.buckets))
        for k in 1...steps { counts[Int((current + k) % Int64(Self.buckets))] = 0 }
        filled = min(filled + Int(b - current), Self.buckets - 1)
        current = b
    }

    /// Bits per second over the complete buckets (nil before one is complete).
    public mutating func bitsPerSecond(now: MonoTime) -> Double? {
        roll(to: now)
        guard filled > 0 else { return nil }
        var bytes = 0
        for k in 1...filled { bytes += counts[Int((current - Int64(k) + Int64(Self.buckets)) % Int64(Self.buckets))] }
        return Double(bytes) * 8 / (Double(filled) * Double(Self.bucketNanos) / 1e9)
    }

    /// The median of the complete buckets' rates (nil before one is complete): what a stream carries when
    /// it is not bursting. A video layer's key frames - three or four at once when subscribers join or switch,
    /// each several times a delta frame - doubled the mean of a 1280x720 layer for two seconds in a Chromium
    /// run. A stream with fewer frames than buckets (a screen share at a few frames a second) leaves buckets
    /// empty, and its median would be 0: when a third of them are empty, the mean.
    public mutating func sustainedBitsPerSecond(now: MonoTime) -> Double? {
        roll(to: now)
        guard filled > 0 else { return nil }
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: Self.buckets) { xs in
            for k in 1...filled { xs[k - 1] = counts[Int((current - Int64(k) + Int64(Self.buckets)) % Int64(Self.buckets))] }
            var sorted = UnsafeMutableBufferPointer(rebasing: xs[0..<filled])
            if sorted.count(where: { $0 == 0 }) * 3 >= filled {
                return Double(sorted.reduce(0, +)) * 8 / (Double(filled) * Double(Self.bucketNanos) / 1e9)
            }
            sorted.sort()
            let middle = filled % 2 == 1 ? Double(sorted[filled / 2]) : Double(sorted[filled / 2 - 1] + sorted[filled / 2]) / 2
            return middle * 8 / (Double(Self.bucketNanos) / 1e9)
        }
    }
}
