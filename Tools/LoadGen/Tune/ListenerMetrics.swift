/// What one listener missed of a meeting, from what it received (`ListenerTally`) set against what was said
/// (`ConversationScript`): the "what K buys" half of the tuning report.
public struct ListenerMetrics: Sendable, Codable, Equatable {
    /// Share of all speech frames (talkspurts and backchannels) that reached the listener.
    public var coverage: Double
    /// The same over talkspurts only (backchannels left out).
    public var spurtCoverage: Double
    /// The lowest coverage of one talker with at least a second of speech.
    public var worstTalkerCoverage: Double
    /// Each talker's coverage, by participant id (who was not heard).
    public var talkerCoverage: [String: Double] = [:]
    /// From a turn's first speech frame to the first of its frames the listener received, over the turns it
    /// received at all: median, 90th and 95th percentile, milliseconds.
    public var clippedOnsetMedianMs: Double?
    public var clippedOnsetP90Ms: Double?
    public var clippedOnsetP95Ms: Double?
    public var turns: Int
    /// Turns of which the listener received nothing.
    public var missedTurns: Int
    /// Times an audio slot was taken (emptied slot filled or source replaced) for an utterance shorter than the
    /// intrusion threshold: a backchannel or a short remark took a place in the list.
    public var intrusions: Int
    public var intrusionsPerMinute: Double
    public var audioSwitchesPerMinute: Double
    public var videoSwitchesPerMinute: Double
    public var kbps: Double
    public var packetsPerSecond: Double

    /// `intrusionThreshold` in frames; a take counts against the utterance under way at that frame, that
    /// starts at most 100 ms after it (a slot that takes a talker over sends its utterance from a few frames
    /// before its first word: the onset replay), or that ended at most half a second before (the room hears
    /// speech some frames after it starts).
    public init(_ tally: ListenerTally, script: ConversationScript, intrusionThreshold: Int) {
        let minutes = Double(script.frames) * ConversationParameters.frameSeconds / 60
        var heardAll = 0, saidAll = 0, heardSpurts = 0, saidSpurts = 0
        var worst = 1.0
        for (i, person) in script.participants.enumerated() {
            var heardHere = 0, saidHere = 0
            for u in person.utterances {
                let n = (u.start..<u.end).filter { tally.heard(i, frame: $0) }.count
                heardHere += n
                saidHere += u.count
                if !u.isBackchannel {
                    heardSpurts += n
                    saidSpurts += u.count
                }
            }
            heardAll += heardHere
            saidAll += saidHere
            if saidHere >= 50 { worst = min(worst, Double(heardHere) / Double(saidHere)) }
            if saidHere > 0 { talkerCoverage[person.id] = Double(heardHere) / Double(saidHere) }
        }
        coverage = saidAll > 0 ? Double(heardAll) / Double(saidAll) : 1
        spurtCoverage = saidSpurts > 0 ? Double(heardSpurts) / Double(saidSpurts) : 1
        worstTalkerCoverage = worst
        var onsets: [Double] = []
        var missed = 0
        for turn in script.turns {
            if let first = (turn.start..<turn.end).first(where: { tally.heard(turn.speaker, frame: $0) }) {
                onsets.append(Double(first - turn.start) * ConversationParameters.frameSeconds * 1000)
            } else {
                missed += 1
            }
        }
        onsets.sort()
        clippedOnsetMedianMs = Self.percentile(onsets, 0.5)
        clippedOnsetP90Ms = Self.percentile(onsets, 0.9)
        clippedOnsetP95Ms = Self.percentile(onsets, 0.95)
        turns = script.turns.count
        missedTurns = missed
        intrusions = tally.audioTakes.filter { take in
            guard let u = script.participants[take.publisher].utterances.last(where: { $0.start <= take.frame + 5 }),
                  take.frame < u.end + 25 else { return false }
            return u.count < intrusionThreshold
        }.count
        intrusionsPerMinute = Double(intrusions) / minutes
        audioSwitchesPerMinute = Double(tally.audioTakes.filter(\.replaced).count) / minutes
        videoSwitchesPerMinute = Double(tally.videoSwitches) / minutes
        kbps = Double(tally.wireBytes) * 8 / (minutes * 60) / 1000
        packetsPerSecond = Double(tally.packets) / (minutes * 60)
    }

    static func percentile(_ sorted: [Double], _ q: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))]
    }
}
