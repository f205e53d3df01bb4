/// How many videos a subscriber's downlink can take (EnableX ABWD, `media-core.md` section 4), with hysteresis
/// so the count does not flap.
///
/// With estimate B, per-video bandwidth S and audio reserve A (the forwarded talkers' audio), R = max(S, A)
/// and n_fit = floor((B - R) / S), clamped to [0, maxVideos]:
/// - before any estimate n is 1; the first estimate sets n = n_fit at once;
/// - down: at once when B < 0.5 (R + n S), else when n_fit < n has held for 1 s;
/// - up: when B >= R + (n + 1) S * 1.15 has held for 3 s and 5 s have passed since the last change, to the
///   largest k with B >= R + k S * 1.15: back from a dip in one move, not one video per 5 s (the target is the
///   full number back within 10 s, `media-core.md`), while the 3 s hold still keeps a wobbling estimate from
///   raising it.
/// An alert `{bandwidth, stream_bandwidth, number_of_videos}` is due only when n changes.
///
/// Two guards keep real receivers' estimates from taking video away for the wrong reason, because
/// receiver-side estimators (libwebrtc's REMB) report what they have seen, not what the link could carry:
/// - until the estimate settles, n is not lowered below 1 ("start at n = 1 until the estimate settles",
///   `media-core.md`): Chromium's first REMB is ~170 kbps whatever its link and then climbs ~8 %/s, and
///   only while it receives video. Settled = at least `settlePeriod` since the first estimate and no rise of
///   `settleRise` within `settleQuiet` (or `settleLimit` in all);
/// - after that, an estimate between `cappedLow` and `cappedHigh` x what the node sends the subscriber
///   (`sentKbps`, plus 20 kbps) never lowers n: libwebrtc caps its estimate at 1.5 x the received rate + 10
///   kbps, so such a figure says "I take what you send", not what the link would carry. Congestion shows as
///   an estimate below what is sent (LiveKit commits downward below 0.95 x the expected rate); an estimate
///   well above the cap is a real figure and the rule applies as is.
/// Both are off in the default parameters (the pure rule above); rooms turn them on.
public struct VideoCountPolicy: Sendable {
    public struct Parameters: Sendable, Equatable {
        public var downHold: MonoTime.Interval = .seconds(1)
        public var upHold: MonoTime.Interval = .seconds(3)
        public var minTimeBetweenIncreases: MonoTime.Interval = .seconds(5)
        public var upMargin = 1.15
        public var emergencyFraction = 0.5
        public var settlePeriod = MonoTime.Interval(nanoseconds: 0)
        public var settleQuiet = MonoTime.Interval.seconds(3)
        public var settleRise = 0.03
        public var settleLimit = MonoTime.Interval.seconds(60)
        public var cappedLow = 0.95
        public var cappedHigh = 1.6
        public init() {}

        /// What rooms use: the pure rule plus the guards for real receivers.
        public static var forRealReceivers: Parameters {
            var p = Parameters()
            p.settlePeriod = .seconds(8)
            return p
        }
    }

    public struct Alert: Equatable, Sendable {
        public var bandwidthKbps: Int
        public var streamBandwidthKbps: Int
        public var numberOfVideos: Int
    }

    public var parameters: Parameters
    public private(set) var numberOfVideos: Int
    private var settled = false
    private var firstEstimateAt: MonoTime?
    /// The last estimate that rose by `settleRise` over the one before it, and when.
    private var lastRise: (at: MonoTime, kbps: Int)?
    private var estimateSettled = false
    private var lastChange: MonoTime?
    private var downSince: MonoTime?
    private var upSince: MonoTime?

    public init(parameters: Parameters = .init(), initial: Int = 1) {
        self.parameters = parameters
        self.numberOfVideos = initial
    }

    /// Feeds an estimate (kbps). `maxVideos` is the subscriber's video slot count; `minVideos` what fits
    /// whatever the rule says (a room that counts videos at their best layer may still show one at a lower
    /// one); `audioKbps` the reserve for its forwarded audio; `sentKbps`, when known, what the node sent the
    /// subscriber lately. Returns an alert when the number of videos changed.
    public mutating func update(
        estimateKbps b: Int, streamKbps s: Int, audioKbps a: Int, minVideos: Int = 0, maxVideos: Int, sentKbps: Int? = nil,
        now: MonoTime
    ) -> Alert? {
        guard s > 0 else { return nil }
        let r = max(s, a)
        var fit = max(min(minVideos, maxVideos), min(maxVideos, (b - r) / s))
        let n = numberOfVideos
        let firstAt = firstEstimateAt ?? now
        firstEstimateAt = firstAt
        if let rise = lastRise {
            if Double(b) > Double(rise.kbps) * (1 + parameters.settleRise) { lastRise = (now, b) }
        } else {
            lastRise = (now, b)
        }
        if !estimateSettled, now - firstAt >= parameters.settlePeriod,
           now - lastRise!.at >= parameters.settleQuiet || now - firstAt >= parameters.settleLimit {
            estimateSettled = true
        }
        let settling = parameters.settlePeriod.nanoseconds > 0 && !estimateSettled
        let capped = sentKbps.map { Double(b) >= parameters.cappedLow * Double($0) && Double(b) <= parameters.cappedHigh * Double($0) + 20 } ?? false
        let appLimited = settling || capped
        if appLimited { fit = max(fit, min(settling ? 1 : n, n, maxVideos)) }
        var next = n
        if !settled {
            settled = true
            next = fit
        } else if !appLimited, Double(b) < parameters.emergencyFraction * Double(r + n * s) {
            next = fit
        } else if fit < n {
            upSince = nil
            if let since = downSince {
                if now - since >= parameters.downHold { next = fit }
            } else {
                downSince = now
            }
        } else {
            downSince = nil
            if n < maxVideos, Double(b) >= Double(r) + Double((n + 1) * s) * parameters.upMargin {
                if let since = upSince {
                    let spacedEnough = lastChange.map { now - $0 >= parameters.minTimeBetweenIncreases } ?? true
                    if now - since >= parameters.upHold, spacedEnough {
                        var k = n + 1
                        while k < maxVideos, Double(b) >= Double(r) + Double((k + 1) * s) * parameters.upMargin { k += 1 }
                        next = k
                    }
                } else {
                    upSince = now
                }
            } else {
                upSince = nil
            }
        }
        if next > maxVideos { next = maxVideos }
        guard next != n else { return nil }
        numberOfVideos = next
        lastChange = now
        downSince = nil
        upSince = nil
        return Alert(bandwidthKbps: b, streamBandwidthKbps: s, numberOfVideos: next)
    }

    /// Applies a smaller slot count at once (the subscriber renegotiated fewer video slots).
    public mutating func clamp(maxVideos: Int) {
        if numberOfVideos > maxVideos { numberOfVideos = maxVideos }
    }
}
