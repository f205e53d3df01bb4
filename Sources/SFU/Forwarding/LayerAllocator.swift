/// Shares one subscriber's downlink among the simulcast sources it is shown, without touching a slot (the
/// room applies the choice with its hold times, `Subscriber.reviewLayers`). Pure, so the rule has table tests:
/// - every source starts at its lowest live layer (or keeps the layer it shows while that one is not measured
///   yet: there is no evidence it is too dear), and those floors are paid first;
/// - then, in priority order (the room passes screen shares first, then cameras in the subscriber's talker
///   order: the dominant speaker first), each source climbs to the highest layer the budget left pays for;
/// - a layer above the one a source shows must fit `upMargin` times over, so an estimate hovering at a
///   layer's rate does not switch layers (and ask for keyframes) back and forth; a layer without a measured
///   rate is never climbed to.
/// Production SFUs serve the most relevant sources first too (Jitsi Videobridge's allocation orders them by
/// relevance); an equal split would give two talkers 300 kbit/s each where the dominant one could have had 600.
public enum LayerAllocator {
    public struct Source: Equatable, Sendable {
        /// Each live layer's measured rate (bits/s), lowest layer first; nil while it is not measured.
        public var rates: [Double?]
        /// The index of the layer the slot shows or waits for, when it is one of these.
        public var shown: Int?

        public init(rates: [Double?], shown: Int?) {
            self.rates = rates
            self.shown = shown
        }

        /// What showing layer `i` costs: its rate, or the nearest measured one below it while it has none.
        func cost(_ i: Int) -> Double { rates[i] ?? rates[..<i].lazy.compactMap { $0 }.last ?? 0 }
    }

    /// The layer index chosen for each source, in the order given (most important first).
    public static func allocate(_ sources: [Source], budget: Double, upMargin: Double) -> [Int] {
        var choice = sources.map { s in s.shown.flatMap { s.rates[$0] == nil ? $0 : nil } ?? 0 }
        var left = budget
        for (k, s) in sources.enumerated() where !s.rates.isEmpty { left -= s.cost(choice[k]) }
        for (k, s) in sources.enumerated() {
            for i in stride(from: s.rates.count - 1, to: choice[k], by: -1) {
                guard let rate = s.rates[i] else { continue }
                let above = s.shown.map { i > $0 } ?? false
                let extra = rate - s.cost(choice[k])
                guard (above ? rate * upMargin - s.cost(choice[k]) : extra) <= left else { continue }
                left -= extra
                choice[k] = i
                break
            }
        }
        return choice
    }
}
