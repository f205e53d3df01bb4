import Foundation

/// One speaker's level history and the three time-scale activity scores of Volfin & Cohen, "Dominant Speaker
/// Identification for Multipoint Videoconferencing" (2012), with the parameters jitsi-utils and mediasoup use.
///
/// Levels arrive as RFC 6464 values (0 loud ... 127 silence) and are kept as volumes v = 127 - L, one per
/// 20 ms, in a ring of 50 (one second).
struct SpeechActivity {
    static let historyLength = 50
    static let minLevelWindow = 750  // 15 s of samples

    private var ring = [UInt8](repeating: 0, count: historyLength)
    private var head = 0  // next write position
    private(set) var samplesSeen = 0

    // Noise floor (volume units). 0 = not yet known.
    private(set) var minLevel: Int = 0
    private var nextMinLevel: Int = 0
    private var nextMinLevelWindow = 0

    /// The speaker's background over the last 5 s.
    private var floor = NoiseFloor()

    private(set) var immediateScore = 1e-10
    private(set) var mediumScore = 1e-10
    private(set) var longScore = 1e-10

    /// The i-th newest volume (0 = newest).
    func volume(_ i: Int) -> Int {
        Int(ring[(head - 1 - i + 2 * Self.historyLength) % Self.historyLength])
    }

    mutating func push(level: UInt8) {
        let v = 127 - Int(min(level, 127))
        ring[head] = UInt8(v)
        head = (head + 1) % Self.historyLength
        samplesSeen += 1
        updateMinLevel(v)
        floor.push(level)
    }

    /// The background level (RFC 6464 units: larger is quieter) over the last 5 s: the quietest sample seen
    /// in that time. 127 (digital silence) until a block is complete.
    var noiseFloor: UInt8 { floor.level ?? 127 }

    /// The lowest non-zero volume replaces the floor at once; otherwise the floor follows the minimum over
    /// 15 s windows through a geometric mean, so it rises slowly when the background gets louder.
    private mutating func updateMinLevel(_ v: Int) {
        guard v > 0 else { return }
        if minLevel == 0 || v < minLevel {
            minLevel = v
            nextMinLevel = 0
            nextMinLevelWindow = 0
            return
        }
        if nextMinLevel == 0 {
            nextMinLevel = v
            nextMinLevelWindow = 1
        } else {
            nextMinLevel = min(nextMinLevel, v)
            nextMinLevelWindow += 1
            if nextMinLevelWindow >= Self.minLevelWindow {
                minLevel = Int(sqrt(Double(minLevel * nextMinLevel)).rounded(.down))
                nextMinLevel = 0
                nextMinLevelWindow = 0
            }
        }
    }

    /// Quantised volume of the i-th newest sample: 0 below the noise floor + 10, else v / 10 (0...12).
    func immediate(_ i: Int) -> Int {
        let v = volume(i)
        return v < minLevel + 10 ? 0 : v / 10
    }

    /// Recomputes the three scores from the history (called once per decision, not per packet).
    mutating func computeScores() {
        // Counted in place, with no arrays: this runs for every speaker of a room at every election.
        var firstMedium = 0, long = 0
        for b in 0..<10 {
            var c = 0
            for k in (5 * b)..<(5 * b + 5) where immediate(k) > 7 { c += 1 }
            if b == 0 { firstMedium = c }
            if c > 4 { long += 1 }
        }
        immediateScore = Self.score(immediate(0), n: 13, lambda: 0.78)
        mediumScore = Self.score(firstMedium, n: 5, lambda: 24)
        longScore = Self.score(long, n: 10, lambda: 47)
    }

    /// S(v; n, lambda) = max(1e-10, ln C(n, v) + n ln 0.5 - ln lambda + lambda v): the log-likelihood ratio of
    /// speech (exponential prior with rate lambda) against a binomial(n, 0.5) non-speech model.
    static func score(_ v: Int, n: Int, lambda: Double) -> Double {
        let lnBinomial = lgamma(Double(n + 1)) - lgamma(Double(v + 1)) - lgamma(Double(n - v + 1))
        return max(1e-10, lnBinomial + Double(n) * log(0.5) - log(lambda) + lambda * Double(v))
    }

    /// The scores of a speaker that has only ever been silent: what an absent dominant speaker counts as.
    static let silentScores = (
        immediate: score(0, n: 13, lambda: 0.78), medium: score(0, n: 5, lambda: 24), long: score(0, n: 10, lambda: 47)
    )

    /// Samples in `range` (newest = 0) at or above `-threshold` dBov and at least `margin` dB above the
    /// speaker's noise floor: speech, not a loud but steady background.
    func loudSamples(in range: Range<Int>, threshold: UInt8, margin: UInt8 = 0) -> Int {
        let minVolume = 127 - Int(min(threshold, noiseFloor > margin ? noiseFloor - margin : 0))
        var c = 0
        for i in range where i < min(samplesSeen, Self.historyLength) && volume(i) >= minVolume { c += 1 }
        return c
    }
}
