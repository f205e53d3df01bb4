/// Shares one subscriber's downlink among the simulcast sources it is shown, without touching a slot (the
/// room applies the choice with its hold times, `Room.reviewLayers`). Pure, so the rule has table tests:
/// - every source starts at its lowest live layer (or keeps the layer it shows while that one is not measured
///   yet: there is no evidence it is too dear), and those floors are paid first;
/// - then, in priority order (the room passes screen shares first, then cameras in the subscriber's talker
///   order: the dominant speaker first), each source climbs to the highest layer the budget left pays for;
/// - a layer above the one a source shows must fit `upMargin` times over, so an estimate hovering at a
///   layer's rate does not switch layers (and ask for keyframes) back and forth; a layer without a measured
///   rate is never climbed to;
/// - a layer below the one a source shows must also pass its key frame (`keyframeBits`) within
///   `keyframeWindow`: a slot moves down because its link is full, and the new layer's key frame crosses that
///   link first. Measured with Chromium under a 500 kbit/s cap (scripts/shaped-test.sh): from 1280x720 the
///   slot went to 640x360 (~360 kbit/s, which the estimate's ~400 kbit/s less audio fit), its key frame took
///   the rest of the link for most of a second, and the subscriber froze 0.5-1 s before the slot went on to
///   320x180 - in 5 of 5 runs; to the layer whose key frame passes, it goes down once.
/// Production SFUs serve the most relevant sources first too (Jitsi Videobridge's allocation orders them by
/// relevance); an equal split would give two talkers 300 kbit/s each where the dominant one could have had 600.
public enum LayerAllocator {
    public struct Source: Equatable, Sendable {
        /// Each live layer's measured rate (bits/s), lowest layer first; nil while it is not measured.
        public var rates: [Double?]
        /// The index of the layer the slot shows or waits for, when it is one of these.
        public var shown: Int?
        /// Each layer's last key frame in bits (nil or absent: not seen; 0: the slot needs none to show it).
        public var keyframeBits: [Double?]

        public init(rates: [Double?], shown: Int?, keyframeBits: [Double?] = []) {
            self.rates = rates
            self.shown = shown
            self.keyframeBits = keyframeBits
        }

        /// What showing layer `i` costs: its rate, or the nearest measured one below it while it has none.
        func cost(_ i: Int) -> Double { rates[i] ?? rates[..<i].lazy.compactMap { $0 }.last ?? 0 }
    }

    /// How soon a key frame of a layer the slot moves down to should have crossed, on top of the layer's rate.
    public static let keyframeWindow = 0.5

    /// The layer index chosen for each source, in the order given (most important first).
    public static func allocate(_ sources: [Source], budget: Double, upMargin: Double) -> [Int] {
        var choice = sources.map { s in s.shown.flatMap { s.rates[$0] == nil ? $0 : nil } ?? 0 }
        var left = budget
        for (k, s) in sources.enumerated() where !s.rates.isEmpty { left -= s.cost(choice[k]) }
        for (k, s) in sources.enumerated() {
            for i in stride(from: s.rates.count - 1, to: choice[k], by: -1) {
                guard let rate = s.rates[i] else { continue }
                let above = s.shown.map { i > $0 } ?? false
                let below = s.shown.map { i < $0 } ?? false
                let keyframe = below && i < s.keyframeBits.count ? (s.keyframeBits[i] ?? 0) / keyframeWindow : 0
                let extra = rate - s.cost(choice[k])
                guard (above ? rate * upMargin - s.cost(choice[k]) : extra + keyframe) <= left else { continue }
                left -= extra
                choice[k] = i
                break
            }
        }
        return choice
    }
}
