import SFU

/// One `sfu tune` run: the meeting (a preset and its conversation parameters) and what to sweep and measure.
/// Read from a scenario file in the `sfu bench --scenario` format (`key = value` lines, `#` comments): a
/// `preset` line applies first wherever it stands, then every other line, conversation keys and tuning keys
/// alike, in order.
public struct TunePlan: Sendable {
    public var preset: ConversationPreset = .discussion
    public var conversation = ConversationPreset.discussion.parameters
    /// The values of max_active_talkers to compare.
    public var ks = Array(1...12)
    /// Publishers who speak or keep their microphone open also send VP8 from a camera.
    public var video = true
    public var videoKbps = 500
    /// Video slots per listener at most (each listener takes min(K, this)).
    public var maxVideos = 12
    /// What each listener reports in REMB every second: its downlink.
    public var downlinkKbps = 20_000
    /// Where the room takes levels from. The extension (what browsers send, computed here from the same PCM
    /// that was encoded) keeps a long run fast; `decode` makes the room decode every Opus frame.
    public var levelSource: LevelSource = .extension
    /// The recommendation: the smallest K whose listeners hear at least this share of the speech.
    public var targetCoverage = 0.99
    /// Utterances shorter than this (seconds) that take an audio slot count as intrusions.
    public var intrusionThresholdSeconds = 1.0
    /// One room per K, each with its own listener, instead of one room whose listeners ask for K talkers each
    /// (see `TuneRun`).
    public var roomPerK = false
    /// SRTP with libsrtp's null cipher on every connection (`SRTPKeyingMaterial.nullCipher`): the room runs the
    /// same code, the metrics read nothing the cipher changes, and AES-GCM would take a fifth of the run.
    /// Wire bytes are counted with the GCM tag either way.
    public var nullCipher = true
    /// The room's talker detection (`RoomConfiguration.detector`, `sustainedSpeech`): to see how its
    /// parameters move the same metrics.
    public var detector = DominantSpeakerDetector.Configuration()
    public var sustainedSpeech: MonoTime.Interval = RoomConfiguration().sustainedSpeech
    /// How much of a new talker's utterance its audio slot sends first (`RoomConfiguration.onsetReplay`).
    public var onsetReplay: MonoTime.Interval = RoomConfiguration().onsetReplay
    public var onsetPause: MonoTime.Interval = RoomConfiguration().onsetPause

    public init() {}

    public static let keys: [(key: String, help: String)] = [
        ("preset", "standup, discussion, lecture or webinar (applied first)"),
        ("ks", "max_active_talkers values to compare, e.g. 1,2,4,6 or 1-12"),
        ("video", "participants who publish audio also send VP8 (true/false)"), ("video_kbps", "VP8 bitrate"),
        ("max_videos", "video slots per listener at most"), ("downlink_kbps", "each listener's REMB"),
        ("level_source", "extension or decode"), ("target_coverage", "coverage the recommended K must reach (0-1)"),
        ("intrusion_threshold_s", "utterances shorter than this that take a slot are intrusions"),
        ("room_per_k", "one room per K (true) or one room with a listener per K (false)"),
        ("null_cipher", "SRTP with the null cipher (true, faster) or AES-GCM (false)"),
        ("decision_interval_ms", "how often the detector elects the dominant speaker, ms"),
        ("speaking_interval_ms", "how often the detector re-evaluates who is speaking, ms"),
        ("speaking_threshold", "loudness (-dBov) a sample needs to count toward speaking"),
        ("speaking_min_samples", "loud 20 ms samples in 400 ms that make a participant speaking"),
        ("hold_min_samples", "loud samples in 800 ms that keep a participant speaking through a pause (0: any speaking_min_samples)"),
        ("sustained_speech_ms", "speech after which a non-dominant talker holds the floor, ms"),
        ("onset_replay_ms", "how much of a new talker's utterance its audio slot sends first, ms (0: none)"),
        ("onset_pause_ms", "quiet shorter than this stays in the utterance a slot sends first, ms"),
    ] + ConversationParameters.keys

    public typealias Invalid = ConversationParameters.Invalid

    /// `key=v1,v2,...` for `sfu tune --sweep`: the plan once per value, each set after everything else (so
    /// `--sweep talkers=4,8` overrides the preset's and the scenario's silent share), every value checked here.
    public func sweep(_ text: String) throws(Invalid) -> (key: String, runs: [(value: String, plan: TunePlan)]) {
        guard let (key, values) = splitSweep(text) else { throw Invalid("--sweep expects key=v1,v2,..., got '\(text)'") }
        guard !values.isEmpty else { throw Invalid("--sweep \(key) has no values") }
        guard key != "preset" else { throw Invalid("--sweep preset would reset every other key; run one tune per preset") }
        var runs: [(value: String, plan: TunePlan)] = []
        for v in values {
            var p = self
            try p.set(key, v)
            try p.conversation.validate()
            runs.append((v, p))
        }
        return (key, runs)
    }

    public mutating func set(_ key: String, _ text: String) throws(Invalid) {
        func bool() throws(Invalid) -> Bool {
            switch text.lowercased() {
            case "true", "yes", "1": return true
            case "false", "no", "0": return false
            default: throw Invalid("\(key) must be true or false, got '\(text)'")
            }
        }
        func int(_ range: ClosedRange<Int>) throws(Invalid) -> Int {
            guard let v = Int(text), range.contains(v) else { throw Invalid("\(key) must be a whole number \(range.lowerBound)-\(range.upperBound), got '\(text)'") }
            return v
        }
        switch key {
        case "preset":
            guard let p = ConversationPreset(rawValue: text) else {
                throw Invalid("preset must be one of \(ConversationPreset.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
            }
            preset = p
            conversation = p.parameters
        case "ks": ks = try Self.parseKs(text)
        case "video": video = try bool()
        case "video_kbps": videoKbps = try int(50...10_000)
        case "max_videos": maxVideos = try int(0...12)
        case "downlink_kbps": downlinkKbps = try int(50...1_000_000)
        case "level_source":
            guard let s = LevelSource(rawValue: text), s != .verify else { throw Invalid("level_source must be extension or decode, got '\(text)'") }
            levelSource = s
        case "target_coverage":
            guard let v = Double(text), (0...1).contains(v) else { throw Invalid("target_coverage must be a number 0-1, got '\(text)'") }
            targetCoverage = v
        case "intrusion_threshold_s":
            guard let v = Double(text), (0.02...60).contains(v) else { throw Invalid("intrusion_threshold_s must be a number 0.02-60, got '\(text)'") }
            intrusionThresholdSeconds = v
        case "room_per_k": roomPerK = try bool()
        case "null_cipher": nullCipher = try bool()
        case "decision_interval_ms": detector.decisionInterval = .milliseconds(Int64(try int(20...5000)))
        case "speaking_interval_ms": detector.speakingInterval = .milliseconds(Int64(try int(20...5000)))
        case "speaking_threshold": detector.speakingThreshold = UInt8(try int(0...127))
        case "speaking_min_samples": detector.speakingMinSamples = try int(1...20)
        case "hold_min_samples": detector.holdMinSamples = try int(0...40)
        case "sustained_speech_ms": sustainedSpeech = .milliseconds(Int64(try int(0...10_000)))
        case "onset_replay_ms": onsetReplay = .milliseconds(Int64(try int(0...1_000)))
        case "onset_pause_ms": onsetPause = .milliseconds(Int64(try int(20...2_000)))
        default:
            guard ConversationParameters.knows(key) else {
                throw Invalid("unknown key '\(key)' (known: \(Self.keys.map(\.key).joined(separator: ", ")))")
            }
            try conversation.set(key, text)
        }
    }

    /// `1,2,4` or `1-12` or a mix; each 1-12 (`RoomConfiguration.maxActiveTalkersRange`).
    static func parseKs(_ text: String) throws(Invalid) -> [Int] {
        var out: [Int] = []
        for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            let ends = part.split(separator: "-").compactMap { Int($0) }
            guard (1...2).contains(ends.count), ends.count == part.split(separator: "-").count,
                  ends.allSatisfy(RoomConfiguration.maxActiveTalkersRange.contains), ends[0] <= ends[ends.count - 1] else {
                throw Invalid("ks must list values 1-12 (e.g. 1,2,4 or 1-12), got '\(text)'")
            }
            out += Array(ends[0]...ends[ends.count - 1])
        }
        guard !out.isEmpty else { throw Invalid("ks is empty") }
        return Array(Set(out)).sorted()
    }

    /// Applies a scenario file: its `preset` first, then every other line in order; errors name the line.
    public mutating func apply(scenario text: String) throws(Invalid) {
        var lines: [(Int, String, String)] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            guard !line.isEmpty else { continue }
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty else { throw Invalid("line \(i + 1): expected key = value, got '\(line)'") }
            lines.append((i + 1, parts[0], parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))))
        }
        for (n, k, v) in lines.filter({ $0.1 == "preset" }) + lines.filter({ $0.1 != "preset" }) {
            do { try set(k, v) } catch { throw Invalid("line \(n): \(error.description)") }
        }
    }
}

import Foundation
