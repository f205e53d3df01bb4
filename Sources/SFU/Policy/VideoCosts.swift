/// What one video costs in a room: the mean measured bitrate of the live video sources (re-measured at most
/// every 500 ms), or the configured `stream_bandwidth` before any is measured. A simulcast source counts at
/// its lowest live layer and a single layered stream at its base layer (`VideoDegradation.layersFirst`: a
/// subscriber whose share shrinks takes lower layers first, and only when even those do not fit is it shown
/// fewer videos, and back up in the reverse order), or at its highest (`.videosFirst`: fewer videos first,
/// each kept at the best layer that fits). A camera and a screen share are two videos. ABWD weighs videos at
/// what they measure, not at a configured figure.
struct VideoCosts {
    /// A video's mean cost at its sources' lowest and at their highest live layers (kbit/s).
    struct Measure {
        var lowest: Int
        var highest: Int

        func perVideo(_ degradation: VideoDegradation) -> Int { degradation == .layersFirst ? lowest : highest }
    }

    private var cache: (at: MonoTime, measure: Measure)?

    mutating func measure(_ publishers: some Sequence<Publisher>, fallbackKbps: Int, now: MonoTime) -> Measure {
        if let c = cache, now - c.at < .milliseconds(500) { return c.measure }
        var lowest = 0.0, highest = 0.0, n = 0
        for publisher in publishers {
            for source in VideoSource.allCases {
                var low: Double?, high: Double?
                let all = publisher.tracks(source)
                for track in all {
                    guard track.live, let bps = track.rate.bitsPerSecond(now: now), bps > 30_000 else { continue }
                    // A single layered stream can be capped to its base layer; a simulcast layer is sent whole
                    // but for its temporal layers, which only the lowest layer drops below its rate.
                    let cheapest = all.count == 1 ? track.cheapestBitsPerSecond(now: now) ?? bps : bps
                    low = min(low ?? cheapest, cheapest)
                    high = max(high ?? bps, bps)
                }
                guard let low, let high else { continue }
                lowest += low
                highest += high
                n += 1
            }
        }
        func kbps(_ total: Double) -> Int { n == 0 ? fallbackKbps : max(50, Int(total / Double(n) / 1000)) }
        let m = Measure(lowest: kbps(lowest), highest: kbps(highest))
        cache = (now, m)
        return m
    }
}
