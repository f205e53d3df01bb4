/// What the node sent one subscriber lately (kbps), measured between downlink estimates over at least 500 ms.
struct EgressRate {
    private var lastBytes: UInt64 = 0
    private var lastTime: MonoTime?
    private var rate: Int?

    mutating func kbps(bytes: UInt64, now: MonoTime) -> Int? {
        guard let t = lastTime else {
            lastBytes = bytes
            lastTime = now
            return nil
        }
        // Fewer bytes than last time: slots were removed (a renegotiation) and took their counts with them.
        guard bytes >= lastBytes else {
            lastBytes = bytes
            lastTime = now
            return rate
        }
        let dt = now - t
        guard dt >= .milliseconds(500) else { return rate }
        rate = Int(Double(bytes &- lastBytes) * 8 / dt.seconds / 1000)
        lastBytes = bytes
        lastTime = now
        return rate
    }
}
