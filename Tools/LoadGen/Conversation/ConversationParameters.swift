/// The shape of a simulated meeting's talk: how many people, how many of them ever speak, how long they speak
/// and pause, how turns change hands, how often someone says "yeah", and what their microphones pick up.
///
/// Durations follow the on-off speech model of Brady (1969, "A model for generating on-off speech patterns in
/// two-way conversation", Bell System Technical Journal 48(7) 2445-2472): talkspurts and pauses drawn from
/// exponential distributions. Which figures come from the literature and which are this project's choices is
/// written beside each field and in `docs/conversation-model.md`.
///
/// Set from a scenario file (`key = value` lines, the format of `sfu bench --scenario`) or `--set key=value`,
/// starting from a preset (`ConversationPreset`).
public struct ConversationParameters: Sendable, Equatable, Codable {
    /// People in the meeting (each publishes, unless it is a listen-only listener).
    public var participants = 12
    public var minutes = 10.0
    /// Share of participants who never make a sound: they only listen.
    public var silentShare = 0.5
    /// Those who never speak publish no audio at all (muted, listen-only) instead of their room's noise. A
    /// listener with an open microphone is still a talker candidate and can fill a slot with its noise.
    public var silentListenOnly = false
    /// Mean talkspurt, seconds. Brady's two-party conversations and ITU-T P.59's artificial conversational speech
    /// put it near 1 s; durations are `talkspurtMinSeconds` plus an exponential, so the mean is exact.
    public var talkspurtMeanSeconds = 1.0
    /// The shortest talkspurt: Brady fills gaps under 200 ms, so nothing shorter counts as a spurt.
    public var talkspurtMinSeconds = 0.2
    /// Mean silence between two talkspurts of the same turn (exponential). P.59's 1.5 s pause in two-party talk
    /// includes listening to the other party, which here is the other turns; within one's own turn the
    /// default is shorter (this project's choice).
    public var pauseMeanSeconds = 0.6
    /// Talkspurts per turn (geometric, at least one).
    public var spurtsPerTurnMean = 3.0
    /// Mean silence between one speaker's end and the next one's start when they do not overlap. Levinson and
    /// Torreira (2015, Frontiers in Psychology 6:731) and Stivers et al. (2009, PNAS 106(26)) find gaps of the
    /// order of 200 ms across languages.
    public var gapMeanSeconds = 0.2
    /// Share of turn changes in which the next speaker starts before the current one stops (interruptions
    /// included). Laskowski, Heldner and Edlund (Interspeech 2012) find overlap frequent in multi-party talk
    /// and short; the share itself is this project's choice.
    public var overlapShare = 0.3
    /// Mean overlap, seconds (exponential, at least one frame).
    public var overlapMeanSeconds = 0.25
    /// Share of turn changes that are interruptions: the next speaker starts in the middle of the current turn,
    /// which stops `overlap` later. Counted within `overlapShare`.
    public var interruptionShare = 0.05
    /// Short acknowledgements ("yeah", "mm-hm", "right") by someone other than the speaker, per minute in the
    /// whole room; each is one short utterance played whole.
    public var backchannelsPerMinute = 6.0
    /// How unequally the floor is shared among those who speak: speaker i (0-based) is chosen with weight
    /// 1 / (i + 1)^skew (0: everyone alike; 1: Zipf).
    public var talkativenessSkew = 1.0
    /// Probability that the next turn is the host's (participant 0: the presenter, lecturer or chair).
    public var hostShare = 0.0
    /// Talkspurts per turn when the host speaks.
    public var hostSpurtsPerTurnMean = 3.0
    /// Microphone gains are spread uniformly over +-this many dB (in 3 dB steps).
    public var gainSpreadDb = 6.0
    /// Steady background noise of most participants, dBov.
    public var noiseDbov = -65.0
    /// Share of participants in a noisy place, at `noisyDbov`.
    public var noisyShare = 0.1
    public var noisyDbov = -45.0
    /// Seconds before the first turn: everyone has joined and the room has settled.
    public var leadInSeconds = 2.0
    public var seed: UInt64 = 1

    public init() {}

    /// How many participants ever speak, when given: replaces `silentShare`, so a sweep over the number of
    /// talkers keeps the meeting's size (`sfu tune --sweep talkers=4,8,16`).
    public var talkers: Int?

    /// Participants who ever speak (at least one).
    public var speakers: Int {
        let wanted = talkers ?? Int((Double(participants) * (1 - silentShare)).rounded())
        return max(1, min(participants, wanted))
    }

    public static let frameSeconds = 0.02
    public var frames: Int { Int((minutes * 60 / Self.frameSeconds).rounded()) }

    public static let keys: [(key: String, help: String)] = [
        ("participants", "people in the meeting"), ("minutes", "length of the meeting"),
        ("silent_share", "share of participants who never speak (0-1)"),
        ("talkers", "participants who ever speak (replaces silent_share)"),
        ("silent_listen_only", "those who never speak publish no audio (true) or their room noise (false)"),
        ("talkspurt_mean_s", "mean talkspurt, s"), ("talkspurt_min_s", "shortest talkspurt, s"),
        ("pause_mean_s", "mean pause between talkspurts of one turn, s"), ("spurts_per_turn", "mean talkspurts per turn"),
        ("gap_mean_s", "mean silence between turns that do not overlap, s"),
        ("overlap_share", "share of turn changes that overlap (0-1, interruptions included)"),
        ("overlap_mean_s", "mean overlap, s"), ("interruption_share", "share of turn changes that interrupt mid-turn (0-1)"),
        ("backchannels_per_minute", "short acknowledgements per minute in the room"),
        ("talkativeness_skew", "Zipf exponent of who takes the floor (0: all alike)"),
        ("host_share", "probability the next turn is the host's (participant 0)"),
        ("host_spurts_per_turn", "mean talkspurts per host turn"),
        ("gain_spread_db", "microphone gains spread over +- this many dB"),
        ("noise_dbov", "background noise of most participants, dBov"), ("noisy_share", "share of participants in a noisy place"),
        ("noisy_dbov", "their background noise, dBov"), ("lead_in_s", "seconds before the first turn"), ("seed", "random seed"),
    ]

    public struct Invalid: Error, CustomStringConvertible, Equatable {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Whether `key` is one of this model's keys (a scenario file mixes them with the tuning keys).
    public static func knows(_ key: String) -> Bool { keys.contains { $0.key == key } }

    /// Sets one key from text, checking its range.
    public mutating func set(_ key: String, _ text: String) throws(Invalid) {
        func number(_ range: ClosedRange<Double>) throws(Invalid) -> Double {
            guard let v = Double(text), range.contains(v) else {
                throw Invalid("\(key) must be a number \(range.lowerBound)-\(range.upperBound), got '\(text)'")
            }
            return v
        }
        switch key {
        case "participants":
            guard let v = Int(text), (1...1000).contains(v) else { throw Invalid("participants must be a whole number 1-1000, got '\(text)'") }
            participants = v
        case "minutes": minutes = try number(0.1...600)
        case "talkers":
            guard let v = Int(text), (1...1000).contains(v) else { throw Invalid("talkers must be a whole number 1-1000, got '\(text)'") }
            talkers = v
        case "silent_share": silentShare = try number(0...1)
        case "silent_listen_only":
            switch text.lowercased() {
            case "true", "yes", "1": silentListenOnly = true
            case "false", "no", "0": silentListenOnly = false
            default: throw Invalid("silent_listen_only must be true or false, got '\(text)'")
            }
        case "talkspurt_mean_s": talkspurtMeanSeconds = try number(0.1...60)
        case "talkspurt_min_s": talkspurtMinSeconds = try number(0.02...10)
        case "pause_mean_s": pauseMeanSeconds = try number(0.02...60)
        case "spurts_per_turn": spurtsPerTurnMean = try number(1...1000)
        case "gap_mean_s": gapMeanSeconds = try number(0.02...60)
        case "overlap_share": overlapShare = try number(0...1)
        case "overlap_mean_s": overlapMeanSeconds = try number(0.02...10)
        case "interruption_share": interruptionShare = try number(0...1)
        case "backchannels_per_minute": backchannelsPerMinute = try number(0...600)
        case "talkativeness_skew": talkativenessSkew = try number(0...5)
        case "host_share": hostShare = try number(0...1)
        case "host_spurts_per_turn": hostSpurtsPerTurnMean = try number(1...10_000)
        case "gain_spread_db": gainSpreadDb = try number(0...30)
        case "noise_dbov": noiseDbov = try number(-90...(-20))
        case "noisy_share": noisyShare = try number(0...1)
        case "noisy_dbov": noisyDbov = try number(-90...(-20))
        case "lead_in_s": leadInSeconds = try number(0...600)
        case "seed":
            guard let v = UInt64(text) else { throw Invalid("seed must be a whole number, got '\(text)'") }
            seed = v
        default: throw Invalid("unknown key '\(key)'")
        }
    }

    /// Checks what one key alone cannot: the shortest talkspurt below the mean, interruptions within overlaps.
    public func validate() throws(Invalid) {
        guard talkspurtMinSeconds < talkspurtMeanSeconds else {
            throw Invalid("talkspurt_min_s (\(talkspurtMinSeconds)) must be below talkspurt_mean_s (\(talkspurtMeanSeconds))")
        }
        guard interruptionShare <= overlapShare else {
            throw Invalid("interruption_share (\(interruptionShare)) counts within overlap_share (\(overlapShare)): it cannot be larger")
        }
        if let talkers, talkers > participants {
            throw Invalid("talkers (\(talkers)) cannot exceed participants (\(participants))")
        }
    }
}
