import Foundation
/// Elects the dominant speaker of a room and tracks who is speaking, on the caller's clock.
///
/// Feeding (see `media-core.md` section 1): one level sample per 20 ms of audio. `push` takes how many
/// samples a packet stands for (a DTX gap in RTP time fills silence); `fillSilence` pushes silence for any
/// speaker whose samples stopped arriving (absent, dead or muted stream). Elections run every
/// `decisionInterval` (300 ms by default): a challenger replaces the dominant speaker when its immediate,
/// medium and long log-score ratios exceed 3, 2 and 0; the largest medium ratio wins. Who is speaking is
/// re-evaluated every `speakingInterval`, which may be shorter: it costs a count over 40 samples per speaker,
/// where an election scores all three time scales.
public struct DominantSpeakerDetector {
    public struct Configuration: Sendable, Equatable {
        /// How often the dominant speaker is elected (Volfin and Cohen's decision; mediasoup's default).
        public var decisionInterval: MonoTime.Interval = .milliseconds(300)
        /// How often "speaking" is re-evaluated. A talker outside a subscriber's list is forwarded only once
        /// it counts as speaking, so the wait for the next evaluation adds to its clipped onset (half an
        /// interval on average). Two frames: `sfu tune` found 20 ms no better than 40 and 300 ms (the
        /// election's tick) 60-140 ms later at the median (Benchmarks/README.md, "Choosing the detector's
        /// defaults").
        public var speakingInterval: MonoTime.Interval = .milliseconds(40)
        /// Silence is pushed for a speaker after this long without a sample.
        public var idleFill: MonoTime.Interval = .milliseconds(40)
        /// A sample at or above this loudness (-dBov) counts toward "speaking" (LiveKit's default, 35).
        public var speakingThreshold: UInt8 = 35
        /// Loud samples (of 20 ms) needed in a 400 ms window to count as speaking (80 ms). LiveKit asks for
        /// 160 ms; with it a new talker's first 200-300 ms are lost before it is forwarded, and `sfu tune` found
        /// 80 ms took 4-8 points more coverage at the K where talkers outnumber slots without more slots taken
        /// by backchannels (Benchmarks/README.md). Steady noise is kept out by `speakingMarginDb`, short
        /// bursts from others' video and the floor by `RoomConfiguration.sustainedSpeech`.
        public var speakingMinSamples = 4
        /// Loud samples in the last 800 ms that earn the hold: a talker stays speaking through a pause while
        /// the 400 ms before the last 400 ms had `speakingMinSamples`, but only if it said this much (320 ms)
        /// in all. A "yeah" of 300 ms never earns it, so it stops speaking within about 400 ms of its end and
        /// never lasts the `RoomConfiguration.sustainedSpeech` that would let it take a video or the front of
        /// the recency order (issue 13); a phrase does, and is carried over the gap to its next one.
        public var holdMinSamples = 16
        /// A speaking sample must also stand this many dB above the speaker's own noise floor (its quietest
        /// level over 5 s), so steady noise louder than `speakingThreshold` (a fan at -30 dBov) is never
        /// speech, while speech 10 dB or more above its background still is.
        public var speakingMarginDb: UInt8 = 6

        public init() {}
    }

    public var configuration: Configuration
    private var speakers: [Int: Entry] = [:]
    public private(set) var dominant: Int?
    private var nextElection: MonoTime
    private var nextSpeakingCheck: MonoTime
    /// When `decideIfDue` next has something to do: an election or a speaking check; `.never` while the room
    /// is quiet (nobody speaking, and nobody's newest sample loud enough to count for speech or an election):
    /// then no check or election could change anything, and a room of silent or absent publishers costs
    /// nothing until a sample that counts arrives (`push`), which makes the next decision due at once.
    public var nextDecision: MonoTime {
        speakingCount == 0 && activeCount == 0 ? .never : min(nextElection, nextSpeakingCheck)
    }

    struct Entry {
        var activity = SpeechActivity()
        var lastSample: MonoTime
        /// Excluded from candidacy (hard-muted, floor-less): never dominant, never speaking.
        var paused = false
        var speaking = false
        /// Its newest sample could count: above its noise floor (for an election's scores) or at the speaking
        /// threshold.
        var active = false
    }

    /// Speakers speaking, and speakers whose newest sample is active: both zero, the room is quiet.
    private var speakingCount = 0
    private var activeCount = 0

    public init(configuration: Configuration = .init(), now: MonoTime) {
        self.configuration = configuration
        nextElection = now + configuration.decisionInterval
        nextSpeakingCheck = now + configuration.speakingInterval
    }

    public mutating func addSpeaker(_ id: Int, now: MonoTime) {
        if speakers[id] == nil { speakers[id] = Entry(lastSample: now) }
    }

    public mutating func removeSpeaker(_ id: Int) {
        if let e = speakers.removeValue(forKey: id) {
            if e.speaking { speakingCount -= 1 }
            if e.active { activeCount -= 1 }
        }
        if dominant == id { dominant = nil }
    }

    /// Takes a speaker out of (or back into) candidacy. Pausing the dominant speaker clears it at once, so the
    /// next decision elects someone else.
    public mutating func setPaused(_ id: Int, _ paused: Bool) {
        guard speakers[id] != nil else { return }
        speakers[id]!.paused = paused
        if paused {
            if speakers[id]!.speaking { speakingCount -= 1 }
            speakers[id]!.speaking = false
            if dominant == id { dominant = nil }
        }
    }

    public func isSpeaking(_ id: Int) -> Bool { speakers[id]?.speaking ?? false }

    /// Records `count` samples: `count - 1` of silence (a DTX gap) followed by `level`.
    public mutating func push(_ id: Int, level: UInt8, count: Int = 1, now: MonoTime) {
        guard speakers[id] != nil else { return }
        let n = max(1, min(count, SpeechActivity.historyLength))
        for _ in 0..<(n - 1) { speakers[id]!.activity.push(level: LevelMath.silence) }
        speakers[id]!.activity.push(level: level)
        speakers[id]!.lastSample = now
        setActive(id, speakers[id]!.activity.immediate(0) > 0 || level <= configuration.speakingThreshold)
    }

    private mutating func setActive(_ id: Int, _ active: Bool) {
        guard speakers[id]!.active != active else { return }
        speakers[id]!.active = active
        activeCount += active ? 1 : -1
    }

    /// Pushes silence for speakers whose samples stopped: one sample per 20 ms of the gap.
    public mutating func fillSilence(now: MonoTime) {
        let idleFill = configuration.idleFill
        var quieted = 0
        updateEach { _, e in
            let gap = now - e.lastSample
            guard gap >= idleFill else { return }
            let n = Int(gap.nanoseconds / 20_000_000)
            for _ in 0..<min(n, SpeechActivity.historyLength) { e.activity.push(level: LevelMath.silence) }
            e.lastSample = e.lastSample + .init(nanoseconds: Int64(n) * 20_000_000)
            if n > 0, e.active {
                e.active = false
                quieted += 1
            }
        }
        activeCount -= quieted
    }

    public struct Decision: Equatable, Sendable {
        /// Set when the dominant speaker changed at this decision.
        public var newDominant: Int?
        /// Speakers whose speaking state changed, with the new state.
        public var speakingChanges: [(id: Int, speaking: Bool)]

        public static func == (a: Decision, b: Decision) -> Bool {
            a.newDominant == b.newDominant && a.speakingChanges.map(\.id) == b.speakingChanges.map(\.id)
                && a.speakingChanges.map(\.speaking) == b.speakingChanges.map(\.speaking)
        }
    }

    /// Runs an election or a speaking check if one is due (an election checks speaking too). Returns nil
    /// when `now` is before `nextDecision`, and after a speaking check that changed nothing (the caller has
    /// nothing to apply; on a 40 ms check that is most of them).
    public mutating func decideIfDue(now: MonoTime) -> Decision? {
        let elect = now >= nextElection, check = now >= nextSpeakingCheck
        guard elect || check else { return nil }
        if check { nextSpeakingCheck = now + configuration.speakingInterval }
        guard elect else {
            let changes = updateSpeaking(now: now)
            return changes.isEmpty ? nil : Decision(newDominant: nil, speakingChanges: changes)
        }
        nextElection = now + configuration.decisionInterval
        return decide(now: now)
    }

    /// Re-evaluates who is speaking: at least `speakingMinSamples` loud samples in the last 400 ms, or in the
    /// 400 ms before with `holdMinSamples` over both (a hold that carries a talker over the pauses between
    /// its phrases).
    mutating func updateSpeaking(now: MonoTime) -> [(id: Int, speaking: Bool)] {
        fillSilence(now: now)
        // Visited in the dictionary's order and the few changes sorted after: this runs every 40 ms in every
        // room, and sorting the keys each time would allocate where nothing changes.
        var changes: [(id: Int, speaking: Bool)] = []
        let c = configuration
        updateEach { id, e in
            let recent = e.activity.loudSamples(in: 0..<20, threshold: c.speakingThreshold, margin: c.speakingMarginDb)
            let previous = e.activity.loudSamples(in: 20..<40, threshold: c.speakingThreshold, margin: c.speakingMarginDb)
            let held = previous >= c.speakingMinSamples && recent + previous >= c.holdMinSamples
            let speaking = !e.paused && (recent >= c.speakingMinSamples || held)
            if speaking != e.speaking {
                e.speaking = speaking
                changes.append((id, speaking))
            }
        }
        for change in changes { speakingCount += change.speaking ? 1 : -1 }
        if changes.count > 1 { changes.sort { $0.id < $1.id } }
        return changes
    }

    /// Runs a decision now: who is speaking, and who is dominant.
    public mutating func decide(now: MonoTime) -> Decision {
        let changes = updateSpeaking(now: now)
        updateEach { _, e in e.activity.computeScores() }
        let reference: (immediate: Double, medium: Double, long: Double)
        if let d = dominant, let e = speakers[d] {
            reference = (e.activity.immediateScore, e.activity.mediumScore, e.activity.longScore)
        } else {
            reference = SpeechActivity.silentScores
        }
        var best: Int?
        var bestR2 = 2.0
        for (id, e) in speakers where id != dominant && !e.paused {
            let r1 = log(e.activity.immediateScore / reference.immediate)
            let r2 = log(e.activity.mediumScore / reference.medium)
            let r3 = log(e.activity.longScore / reference.long)
            // Equal ratios go to the lower id, whatever order the dictionary keeps.
            guard r1 > 3, r2 > 2, r3 > 0, r2 > bestR2 || (r2 == bestR2 && id < (best ?? .max)) else { continue }
            best = id
            bestR2 = r2
        }
        if let best { dominant = best }
        return Decision(newDominant: best, speakingChanges: changes)
    }

    /// Runs `body` on every speaker in place. A `for id in speakers.keys` loop that writes `speakers[id]`
    /// keeps the storage shared with its iterator, so the first write copies the whole table.
    private mutating func updateEach(_ body: (Int, inout Entry) -> Void) {
        var i = speakers.startIndex
        while i != speakers.endIndex {
            body(speakers.keys[i], &speakers.values[i])
            speakers.formIndex(after: &i)
        }
    }
}
