/// The shape of one benchmark run: rooms, who publishes what, who subscribes to how many slots, for how long.
/// Set from flags or a scenario file (`key = value` lines, `#` comments); a sweep runs the plan once per value
/// of one key.
public struct BenchPlan: Sendable, Codable, Equatable {
    public var rooms = 1
    /// Publishers per room; `speakers` of them take turns talking, the others stay silent.
    public var publishers = 4
    public var speakers = 2
    /// Subscribe-only participants per room, each with `maxActiveTalkers` audio (and video) slots.
    public var subscribers = 10
    public var maxActiveTalkers = 4
    public var video = false
    /// Publishers send their video as three simulcast layers (`MediaLibrary.simulcastScales`).
    public var simulcast = false
    public var videoKbps = 500
    public var fps = 30
    public var width = 640
    public var height = 360
    /// Publishers send the audio level extension; without it the node decodes Opus to measure levels.
    public var levelExtension = true
    public var seconds = 20.0
    public var rampSeconds = 5.0
    /// Seconds everyone runs after the ramp before the measured window: time for the estimates and
    /// number_of_videos to settle (a transport-cc subscriber starts at one video; ABWD raises it after 3-5 s).
    public var settleSeconds = 0.0
    /// Seconds each speaker talks before the next one takes over.
    public var turnSeconds = 4.0
    /// Subscribers offer transport-cc (and RTX on video slots), record the transport-wide sequence number of
    /// every packet they receive and send transport-cc feedback every 100 ms, as browsers do: the node then
    /// estimates their downlink with GCC and probes it. Without it they send REMB at `rembKbps`.
    public var transportCC = true
    /// What subscribers report in REMB, kbps (a cap exercises the video-count rule); only without transport-cc.
    public var rembKbps = 50_000
    /// Several REMB figures, given to subscribers in turn (`remb_kbps = 300/1200/5000`): a room of receivers
    /// on different links, each shown the simulcast layers its figure fits.
    public var rembKbpsEach: [Int]?
    /// Decrypt one video packet in this many for latency (audio: every packet).
    public var sampleEvery = 16
    /// Subscribers replaced per second during the measured window (one leaves, a new one joins its room).
    public var churnPerSecond = 0.0
    /// The bench polls the node's room stats once a second (subscribers' estimates and number_of_videos) and
    /// watches its events WebSocket (talker switch delays). Both cost the node CPU that the report counts;
    /// `--against` turns them off, as it observes the peer SFU in neither way.
    public var observe = true
    /// The rooms are recorded from their start (`auto_recording`): every published stream written to disk by
    /// the node's recording writer - what recording costs, run beside `record=false` (`--sweep record=false,true`).
    public var record = false
    /// How every client reaches the node: UDP, or ICE-TCP (the node's passive TCP candidate, RFC 6544) - what
    /// TCP costs the node, run beside UDP (`--sweep transport=udp,tcp`).
    public var overTCP = false
    /// Subscribers per room that connect over ICE-TCP and then never read (from the measured window on): what
    /// slow TCP readers cost everyone else (`--sweep stalled_tcp_readers=0,20`). They are not in the report's
    /// receiver figures.
    public var stalledTCPReaders = 0
    /// A simulated meeting instead of turns at one sentence (`preset` or any conversation key in the scenario;
    /// docs/conversation-model.md): the publishers are its participants who publish audio and say what its
    /// seeded script says, the measured window is the meeting, and the subscribers report what they missed of
    /// it (`ListenerMetrics`, the figures `sfu tune` reports on virtual time). `publishers`, `speakers`,
    /// `seconds` and `turn_seconds` then follow from the meeting.
    public var conversation: ConversationParameters?
    /// The preset the meeting started from (for the report).
    public var preset: String?

    public init() {}

    public static let keys: [(key: String, help: String)] = [
        ("rooms", "rooms"), ("publishers", "publishers per room"), ("speakers", "publishers per room that take turns talking"),
        ("subscribers", "subscribe-only participants per room"), ("max_active_talkers", "talker slots per subscriber (1-12)"),
        ("video", "publishers also send VP8 (true/false)"), ("video_kbps", "VP8 bitrate"), ("fps", "VP8 frame rate"),
        ("simulcast", "publishers send VP8 as 3 simulcast layers: 1/4, 1/2 and full size at 15, 35 and 100 % of video_kbps (true/false)"),
        ("width", "VP8 width"), ("height", "VP8 height"), ("level_extension", "send the audio level extension (true/false)"),
        ("seconds", "measured duration"), ("ramp_seconds", "time over which participants join"),
        ("settle_seconds", "time after the ramp before measuring (estimates and video counts settle)"),
        ("turn_seconds", "seconds per speaker turn"),
        ("transport_cc", "subscribers negotiate transport-cc and send its feedback (true, default; false with --against) or send REMB (false)"),
        ("remb_kbps", "subscribers' REMB when transport_cc is false; several as 300/1200/5000 go to subscribers in turn"), ("sample_every", "decrypt 1 video packet in N"),
        ("churn_per_second", "subscribers leaving and joining per second while measuring"),
        ("observe", "poll the node's room stats every second and watch its events (true, default; false with --against)"),
        ("record", "the node records every room from its start (auto_recording; true/false)"),
        ("transport", "how clients reach the node: udp (default) or tcp (ICE-TCP, the node's passive TCP candidate)"),
        ("stalled_tcp_readers", "subscribers per room that connect over ICE-TCP and stop reading when the measurement starts"),
        ("preset", "a simulated meeting (standup, discussion, lecture, webinar) instead of turns at one sentence; applied first"),
    ] + ConversationParameters.keys.map { ($0.key, "meeting: " + $0.help) }

    public struct Invalid: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// Sets one key from text, checking its range.
    public mutating func set(_ key: String, _ text: String) throws(Invalid) {
        func int(_ range: ClosedRange<Int>) throws(Invalid) -> Int {
            guard let v = Int(text), range.contains(v) else { throw Invalid(description: "\(key) must be a whole number \(range.lowerBound)-\(range.upperBound), got '\(text)'") }
            return v
        }
        func double(_ range: ClosedRange<Double>) throws(Invalid) -> Double {
            guard let v = Double(text), range.contains(v) else { throw Invalid(description: "\(key) must be a number \(range.lowerBound)-\(range.upperBound), got '\(text)'") }
            return v
        }
        func bool() throws(Invalid) -> Bool {
            switch text.lowercased() {
            case "true", "yes", "1": return true
            case "false", "no", "0": return false
            default: throw Invalid(description: "\(key) must be true or false, got '\(text)'")
            }
        }
        switch key {
        case "rooms": rooms = try int(1...1000)
        case "publishers": publishers = try int(1...1000)
        case "speakers": speakers = try int(0...1000)
        case "subscribers": subscribers = try int(0...10_000)
        case "max_active_talkers": maxActiveTalkers = try int(1...12)
        case "video": video = try bool()
        case "simulcast": simulcast = try bool()
        case "video_kbps": videoKbps = try int(50...10_000)
        case "fps": fps = try int(1...60)
        case "width": width = try int(16...1920)
        case "height": height = try int(16...1080)
        case "level_extension": levelExtension = try bool()
        case "seconds": seconds = try double(1...3600)
        case "ramp_seconds": rampSeconds = try double(0...600)
        case "settle_seconds": settleSeconds = try double(0...600)
        case "turn_seconds": turnSeconds = try double(0.5...600)
        case "transport_cc": transportCC = try bool()
        case "remb_kbps":
            let each = try text.split(separator: "/").map { part throws(Invalid) -> Int in
                guard let v = Int(part), (10...1_000_000).contains(v) else {
                    throw Invalid(description: "remb_kbps must be whole numbers 10-1000000 (several as 300/1200/5000), got '\(text)'")
                }
                return v
            }
            guard let first = each.first else { throw Invalid(description: "remb_kbps must not be empty") }
            rembKbps = first
            rembKbpsEach = each.count > 1 ? each : nil
        case "sample_every": sampleEvery = try int(1...1000)
        case "churn_per_second": churnPerSecond = try double(0...100)
        case "observe": observe = try bool()
        case "record": record = try bool()
        case "stalled_tcp_readers": stalledTCPReaders = try int(0...1000)
        case "transport":
            switch text {
            case "udp": overTCP = false
            case "tcp": overTCP = true
            default: throw Invalid(description: "transport must be udp or tcp, got '\(text)'")
            }
        case "preset":
            guard let p = ConversationPreset(rawValue: text) else {
                throw Invalid(description: "preset must be one of \(ConversationPreset.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
            }
            preset = text
            conversation = p.parameters
        default:
            guard ConversationParameters.knows(key) else {
                throw Invalid(description: "unknown key '\(key)' (known: \(Self.keys.map(\.key).joined(separator: ", ")))")
            }
            // A meeting key without a preset starts from the discussion, as `sfu tune` does.
            var c = conversation ?? ConversationPreset.discussion.parameters
            if preset == nil { preset = ConversationPreset.discussion.rawValue }
            do { try c.set(key, text) } catch { throw Invalid(description: error.description) }
            conversation = c
        }
        if speakers > publishers { speakers = publishers }
    }

    /// Applies a scenario file's `key = value` lines, a `preset` line first wherever it stands (as `sfu tune`
    /// reads the same file); errors name the line.
    public mutating func apply(scenario text: String) throws(Invalid) {
        var lines: [(Int, String, String)] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            guard !line.isEmpty else { continue }
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty else { throw Invalid(description: "line \(i + 1): expected key = value, got '\(line)'") }
            lines.append((i + 1, parts[0], parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))))
        }
        for (n, k, v) in lines.filter({ $0.1 == "preset" }) + lines.filter({ $0.1 != "preset" }) {
            do { try set(k, v) } catch { throw Invalid(description: "line \(n): \(error.description)") }
        }
    }

    /// `key=v1,v2,...` for `--sweep`.
    public static func sweep(_ text: String) throws(Invalid) -> (key: String, values: [String]) {
        guard let (key, values) = splitSweep(text) else { throw Invalid(description: "--sweep expects key=v1,v2,..., got '\(text)'") }
        guard !values.isEmpty else { throw Invalid(description: "--sweep \(key) has no values") }
        var probe = BenchPlan()
        for v in values { try probe.set(key, v) }
        return (key, values)
    }

    /// The REMB figure (kbps) the `i`th subscriber of a room sends.
    public func rembKbps(subscriber i: Int) -> Int { rembKbpsEach.map { $0[i % $0.count] } ?? rembKbps }

    /// Participants the node serves in this plan.
    public var participants: Int { rooms * (publishers + subscribers) }
}

import Foundation
