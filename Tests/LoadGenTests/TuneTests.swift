import SFU
import SFUMedia
import SFUSimulation
import Testing
@testable import LoadGen

/// The listener metrics, first from hand-made packets, then from the real room on virtual time.
@Suite struct ListenerMetricsTests {
    /// Two people; A says frames 100-199 (one turn), B says 300-349 then a 10-frame "yeah" at 500.
    static let script = ConversationScript(frames: 1000, participants: [
        .init(id: "A", voice: 0, gainStep: 0, noiseDbov: -65, publishesAudio: true,
              utterances: [.init(start: 100, count: 100, kind: .spurt(turn: 0, offset: 0))]),
        .init(id: "B", voice: 0, gainStep: 0, noiseDbov: -65, publishesAudio: true,
              utterances: [.init(start: 300, count: 50, kind: .spurt(turn: 1, offset: 0)), .init(start: 500, count: 10, kind: .backchannel(clip: 0))]),
    ], turns: [.init(speaker: 0, start: 100, end: 200, interrupted: false), .init(speaker: 1, start: 300, end: 350, interrupted: false)])

    static func packet(ssrc: UInt32, publisher: Int, frame: Int) -> [UInt8] {
        var w = RTPStreamWriter(ssrc: ssrc, payloadType: 109)
        return w.packet(BenchStamp.opus([0x78, 1, 2, 3], sentAt: UInt64(max(0, frame)) * 20_000_000, publisher: UInt16(publisher), frame: frame))
    }

    @Test func coverageOnsetMissedTurnsAndIntrusionsComeFromWhatArrived() {
        var tally = ListenerTally(publishers: 2, frames: 1000, audioSlotSSRCs: [7], videoSlotSSRCs: [])
        // A arrives from frame 120 (20 frames clipped), B never in its turn, B's "yeah" arrives whole.
        for f in 120..<200 { tally.receive(Self.packet(ssrc: 7, publisher: 0, frame: f)) }
        for f in 500..<510 { tally.receive(Self.packet(ssrc: 7, publisher: 1, frame: f)) }
        tally.receive(Self.packet(ssrc: 99, publisher: 1, frame: 300))  // not one of this listener's slots
        let m = ListenerMetrics(tally, script: Self.script, intrusionThreshold: 50)
        #expect(m.coverage == Double(80 + 10) / Double(100 + 50 + 10))
        #expect(m.spurtCoverage == 80.0 / 150.0)
        #expect(m.worstTalkerCoverage == 10.0 / 60.0)
        #expect(m.clippedOnsetMedianMs == 400)
        #expect(m.missedTurns == 1)
        #expect(m.intrusions == 1, "the yeah took the slot from A")
        #expect(m.audioSwitchesPerMinute == 1 / (1000 * 0.02 / 60))
    }

    @Test func theStampsAreNotCountedAsBandwidth() {
        var tally = ListenerTally(publishers: 1, frames: 10, audioSlotSSRCs: [7], videoSlotSSRCs: [])
        let p = Self.packet(ssrc: 7, publisher: 0, frame: 1)
        tally.receive(p)
        #expect(tally.wireBytes == p.count - BenchStamp.framedSize - 2 + 28 + 16)
    }

    @Test func packetsSentBeforeTheMeetingOnlySayWhoHoldsTheSlot() {
        // A bench publisher sends its room noise, stamped frame -1, while everyone joins.
        var tally = ListenerTally(publishers: 2, frames: 1000, audioSlotSSRCs: [7], videoSlotSSRCs: [])
        for _ in 0..<5 { tally.receive(Self.packet(ssrc: 7, publisher: 0, frame: -1)) }
        for f in 100..<200 { tally.receive(Self.packet(ssrc: 7, publisher: 0, frame: f)) }
        for f in 500..<510 { tally.receive(Self.packet(ssrc: 7, publisher: 1, frame: f)) }
        let m = ListenerMetrics(tally, script: Self.script, intrusionThreshold: 50)
        #expect(tally.audioTakes.map(\.publisher) == [1], "A held the slot before the meeting; only B's take is new")
        #expect(m.clippedOnsetMedianMs == 0)
        #expect(m.coverage == Double(100 + 10) / Double(100 + 50 + 10))
    }
}

/// `sfu tune`'s runs: real speech through the real room on virtual time (a minute or two each).
@Suite struct TuneRunTests {
    static let media = try! ConversationMedia(voiceNames: ["en-us", "en-gb"])

    static func plan(_ ks: [Int], roomPerK: Bool = false) -> TunePlan {
        var plan = TunePlan()
        plan.ks = ks
        plan.video = false
        plan.roomPerK = roomPerK
        return plan
    }

    static func quietRoom(_ c: inout ConversationParameters) {
        c.gainSpreadDb = 0
        c.noisyShare = 0
    }

    /// Two people talking at once for 30 s.
    static func twoAtOnce() -> ConversationScript {
        let frames = 2000
        func person(_ i: Int) -> ConversationScript.Person {
            .init(id: "p\(i)", voice: i, gainStep: 0, noiseDbov: -65, publishesAudio: true,
                  utterances: [.init(start: 100, count: 1500, kind: .spurt(turn: i, offset: 200 * i))])
        }
        return ConversationScript(frames: frames, participants: [person(0), person(1)],
                                  turns: [.init(speaker: 0, start: 100, end: 1600, interrupted: false),
                                          .init(speaker: 1, start: 100, end: 1600, interrupted: false)])
    }

    @Test func oneSlotForTwoSimultaneousTalkersHearsAboutHalfOfTheSpeech() throws {
        let results = try TuneRun(plan: Self.plan([1, 2]), script: Self.twoAtOnce(), media: Self.media).run()
        let one = try #require(results.first { $0.k == 1 }).metrics
        let two = try #require(results.first { $0.k == 2 }).metrics
        #expect(one.coverage > 0.4 && one.coverage < 0.6, "K = 1 heard \(one.coverage)")
        #expect(two.coverage == 1, "K = 2 heard \(two.coverage)")
    }

    @Test func everySpeechFrameArrivesWhenKCoversEveryoneWhoTalks() throws {
        var plan = Self.plan([3, 4])
        plan.conversation.participants = 8
        plan.conversation.silentShare = 0.6  // three talk
        plan.conversation.silentListenOnly = true
        plan.conversation.minutes = 1.5
        plan.conversation.seed = 7
        Self.quietRoom(&plan.conversation)
        let script = ConversationModel.generate(plan.conversation, voices: Self.media.voiceCount, backchannelFrames: Self.media.backchannelFrames)
        #expect(script.talkers == 3)
        for r in try TuneRun(plan: plan, script: script, media: Self.media).run() {
            #expect(r.metrics.coverage == 1, "K = \(r.k) heard \(r.metrics.coverage)")
            #expect(r.metrics.missedTurns == 0)
            #expect(r.metrics.clippedOnsetP90Ms == 0)
        }
    }

    @Test func aSweepOverTalkersRecommendsAtMostAsManySlotsAsPeopleTalk() throws {
        var plan = Self.plan([1, 2, 3, 4])
        plan.conversation.participants = 8
        plan.conversation.silentListenOnly = true
        plan.conversation.minutes = 1
        plan.conversation.seed = 7
        plan.targetCoverage = 0.999
        Self.quietRoom(&plan.conversation)
        let (key, runs) = try plan.sweep("talkers=1,2")
        var reports: [(value: String, report: TuneReport)] = []
        for (value, p) in runs {
            let script = ConversationModel.generate(p.conversation, voices: Self.media.voiceCount, backchannelFrames: Self.media.backchannelFrames)
            let results = try TuneRun(plan: p, script: script, media: Self.media).run()
            reports.append((value, TuneReport(plan: p, statistics: ConversationStatistics(script), results: results)))
        }
        let sweep = TuneSweep(key: key, runs: reports)
        #expect(reports.map(\.report.statistics.talkers) == [1, 2])
        // Enough slots for everyone who talks hear everything, so the recommendation is never above that.
        #expect(try #require(reports[0].report.recommended).k == 1)
        #expect(try #require(reports[1].report.recommended).k <= 2)
        let lines = sweep.text.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[1].hasPrefix("1 | 8 (1) | 1 | 100.00 |"), "\(lines[1])")
        #expect(lines[2].hasPrefix("2 | 8 (2) | "), "\(lines[2])")
        let json = sweep.json
        #expect(json["sweep"] as? String == "talkers")
        #expect((json["runs"] as? [[String: Any]])?.count == 2)
    }

    @Test func anObserverAskingForKHearsWhatARoomSetToKGives() throws {
        var plan = Self.plan([1, 2])
        plan.conversation.participants = 6
        plan.conversation.silentShare = 0
        plan.conversation.minutes = 2
        plan.conversation.seed = 11
        Self.quietRoom(&plan.conversation)
        let script = ConversationModel.generate(plan.conversation, voices: Self.media.voiceCount, backchannelFrames: Self.media.backchannelFrames)
        // With and without the onset replay (which alone makes K = 2 of 6 talkers hear all of this short meeting).
        for replay in [0, 500] {
            plan.onsetReplay = .milliseconds(Int64(replay))
            plan.roomPerK = false
            let shared = try TuneRun(plan: plan, script: script, media: Self.media).run()
            plan.roomPerK = true
            let separate = try TuneRun(plan: plan, script: script, media: Self.media).run()
            for (a, b) in zip(shared, separate) {
                #expect(a.k == b.k)
                #expect(a.metrics.coverage == b.metrics.coverage, "K = \(a.k), replay \(replay): \(a.metrics.coverage) shared, \(b.metrics.coverage) alone")
                #expect(a.metrics.missedTurns == b.metrics.missedTurns)
                if replay == 0 { #expect(a.metrics.coverage < 1, "with K below the talkers something is missed") }
            }
        }
    }
}

@Suite struct TunePlanTests {
    @Test func aScenarioFileAppliesItsPresetFirstThenItsKeysInOrder() throws {
        var plan = TunePlan()
        try plan.apply(scenario: """
            participants = 50   # more than the preset
            preset = webinar
            ks = 1-3, 6
            video = false
            """)
        #expect(plan.preset == .webinar)
        #expect(plan.conversation.participants == 50)
        #expect(plan.conversation.silentListenOnly)
        #expect(plan.ks == [1, 2, 3, 6])
        #expect(!plan.video)
    }

    @Test func aBadLineIsRefusedWithItsNumber() {
        var plan = TunePlan()
        #expect(throws: TunePlan.Invalid("line 2: ks must list values 1-12 (e.g. 1,2,4 or 1-12), got '0-3'")) {
            try plan.apply(scenario: "minutes = 5\nks = 0-3\n")
        }
        #expect(throws: TunePlan.Invalid.self) { try plan.apply(scenario: "talkspurts = 3") }
    }

    @Test func aSweepOverTalkersKeepsTheMeetingsSizeAndOverridesItsSilentShare() throws {
        var plan = TunePlan()
        try plan.apply(scenario: "preset = webinar\nparticipants = 40\nsilent_share = 0.9")
        let (key, runs) = try plan.sweep("talkers=2, 8,16")
        #expect(key == "talkers")
        #expect(runs.map(\.value) == ["2", "8", "16"])
        #expect(runs.map(\.plan.conversation.speakers) == [2, 8, 16])
        #expect(runs.allSatisfy { $0.plan.conversation.participants == 40 && $0.plan.preset == .webinar })
        #expect(plan.conversation.speakers == 4, "the plan swept is left as it was")
    }

    @Test func aSweepIsRefusedWhenAValueIsBadOrItWouldResetThePlan() {
        let plan = TunePlan()
        #expect(throws: TunePlan.Invalid("talkers (13) cannot exceed participants (12)")) { try plan.sweep("talkers=4,13") }
        #expect(throws: TunePlan.Invalid.self) { try plan.sweep("talkers=") }
        #expect(throws: TunePlan.Invalid.self) { try plan.sweep("talkers") }
        #expect(throws: TunePlan.Invalid.self) { try plan.sweep("preset=standup,lecture") }
        #expect(throws: TunePlan.Invalid.self) { try plan.sweep("nonsense=1,2") }
    }

    @Test func aSweepsChartsAreNamedByValue() {
        #expect(TuneSweep.chartPath("docs/talkers.svg", value: "8") == "docs/talkers-8.svg")
        #expect(TuneSweep.chartPath("out", value: "0.5") == "out-0.5")
        #expect(TuneSweep.chartPath("a.svg", value: "1/2") == "a-1_2.svg")
    }
}
