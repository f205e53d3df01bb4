import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// Whole-room scenarios on virtual time with real speech through a real Opus encoder and SRTP.
@Suite struct TalkerScenarioTests {
    @Test func speakerGetsTheSlotAndTheEventsSaySo() throws {
        let h = try RoomHarness()
        let speechA = SpeechScript(Voices.a)
        let quiet = SpeechScript([], noiseDbfs: -65)
        let a = SimulatedParticipant(try h.join("A")) { speechA.frame(at: $0, speaking: 0.5..<10) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 2)) { quiet.frame(at: $0, speaking: 0..<0) }
        let c = SimulatedParticipant(try h.join("C")) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b, c], from: 0, seconds: 4)

        #expect(h.dominantSpeakers.first?.1 == "A")
        let elected = try #require(h.dominantSpeakers.first?.0)
        #expect(elected - (h.scenarioOrigin + .milliseconds(500)) < .milliseconds(1500), "A elected \(elected)")
        let last = try #require(h.talkerEvents(for: "B").last)
        #expect(last.1.first == .init(participant: "A", pinned: false, speaking: true, video: false))
        #expect(!last.1.contains { $0.participant == "B" }, "B never receives itself")
        #expect(last.2.first { $0.mid == "a0" }?.participant == "A")
        // B's slot a0 carries A's Opus payloads, rewritten to the slot SSRC and payload type.
        let slot = h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0))
        #expect(slot.count > 150)
        #expect(slot.allSatisfy { $0.header.payloadType == 109 })
        let seqs = slot.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "slot sequence numbers are contiguous")
        #expect(h.room.counters.drops.total == 0, "\(h.room.counters.drops.nonZero)")
    }

    @Test func switchingSpeakersSwitchesTheSlotKeepingOneContinuousStream() throws {
        var config = RoomConfiguration()
        config.maxActiveTalkers = 1
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a), sc = SpeechScript(Voices.c, seed: 5), quiet = SpeechScript([])
        let a = SimulatedParticipant(try h.join("A")) { sa.frame(at: $0, speaking: 0.2..<4) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        let c = SimulatedParticipant(try h.join("C")) { sc.frame(at: $0, speaking: 4.5..<9) }
        h.run([a, b, c], from: 0, seconds: 9)

        #expect(h.dominantSpeakers.map(\.1) == ["A", "C"])
        let maps = h.talkerEvents(for: "B").map { $0.2.first?.participant }
        #expect(maps.contains("A") && maps.last == "C")
        let slot = h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0))
        let seqs = slot.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "no gap or repeat across the switch")
        let ts = slot.map(\.header.timestamp)
        #expect(zip(ts, ts.dropFirst()).allSatisfy { Int32(bitPattern: $1 &- $0) > 0 }, "timestamps keep increasing")
        // The first packet from C carries the marker bit (RFC 3551 section 4.1: start of a talkspurt).
        #expect(slot.filter(\.header.marker).count == 2, "marker on the first packet and on the first after the switch")
    }

    @Test func levelsDecodedWithoutTheExtensionElectTheSameDominant() throws {
        // media-core check 8: Opus without the level extension; the node decodes.
        func run(extensionOn: Bool) throws -> [(MonoTime, String?)] {
            var config = RoomConfiguration()
            config.levelSource = .extension
            let h = try RoomHarness(configuration: config)
            let sa = SpeechScript(Voices.a), sc = SpeechScript(Voices.c, seed: 5), quiet = SpeechScript([])
            let a = SimulatedParticipant(try h.join("A", levelExtension: extensionOn), levelExtension: extensionOn) { sa.frame(at: $0, speaking: 0.2..<4) }
            let b = SimulatedParticipant(try h.join("B", levelExtension: extensionOn), levelExtension: extensionOn) { quiet.frame(at: $0, speaking: 0..<0) }
            let c = SimulatedParticipant(try h.join("C", levelExtension: extensionOn), levelExtension: extensionOn) { sc.frame(at: $0, speaking: 4.5..<9) }
            h.run([a, b, c], from: 0, seconds: 9)
            return h.dominantSpeakers
        }
        let claimed = try run(extensionOn: true)
        let decoded = try run(extensionOn: false)
        #expect(claimed.map(\.1) == decoded.map(\.1))
        for (x, y) in zip(claimed, decoded) {
            #expect(abs((x.0 - y.0).milliseconds) <= 300, "within one decision tick: \(x.0) vs \(y.0)")
        }
    }

    @Test func verifyModeFlagsAParticipantWhoseClaimedLevelIsALie() throws {
        var config = RoomConfiguration()
        config.levelSource = .verify
        let h = try RoomHarness(configuration: config)
        let quiet = SpeechScript([], noiseDbfs: -60)
        let liar = SimulatedParticipant(try h.join("L")) { quiet.frame(at: $0, speaking: 0..<0) }
        liar.claimedLevel = 5  // claims to shout
        let honest = SimulatedParticipant(try h.join("H")) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([liar, honest], from: 0, seconds: 25)
        let flagged = Set(h.events.compactMap { if case .levelMismatch(let p, _) = $0.1 { return p } else { return nil } })
        #expect(flagged == ["L"])
    }

    @Test func aClientClaimingToShoutWhileSilentNeverRanksInVerifyMode() throws {
        // Issue 13: in verify mode a claim that mismatched the decoded level still drove the ranking.
        var config = RoomConfiguration()
        config.levelSource = .verify
        let h = try RoomHarness(configuration: config)
        let quiet = SpeechScript([], noiseDbfs: -60), speech = SpeechScript(Voices.a, seed: 1)
        let liar = SimulatedParticipant(try h.join("L")) { quiet.frame(at: $0, speaking: 0..<0) }
        liar.claimedLevel = 0  // claims 0 dBov
        let honest = SimulatedParticipant(try h.join("H")) { speech.frame(at: $0, speaking: 3..<30) }
        let s = SimulatedParticipant(try h.join("S", audioSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([liar, honest, s], from: 0, seconds: 10)
        #expect(!h.dominantSpeakers.contains { $0.1 == "L" }, "\(h.dominantSpeakers)")
        #expect(h.dominantSpeakers.first?.1 == "H")
        let mismatch = try #require(h.events.first { if case .levelMismatch("L", _) = $0.1 { true } else { false } })
        #expect(mismatch.0 - h.scenarioOrigin < .seconds(1), "found out within a second: \(mismatch.0)")
        #expect(!h.talkerEvents(for: "S").contains { $0.1.contains { $0.participant == "L" && $0.speaking } })
    }

    @Test func levelsAreDecodedByDefaultSoAClaimChangesNothing() throws {
        let h = try RoomHarness()
        #expect(h.room.configuration.levelSource == .decode)
        let quiet = SpeechScript([], noiseDbfs: -60)
        let liar = SimulatedParticipant(try h.join("L")) { quiet.frame(at: $0, speaking: 0..<0) }
        liar.claimedLevel = 0
        let s = SimulatedParticipant(try h.join("S", audioSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([liar, s], from: 0, seconds: 5)
        #expect(h.dominantSpeakers.isEmpty)
    }

    @Test func maxActiveTalkersChangesLiveAndIsValidated() throws {
        let h = try RoomHarness()
        let speech = SpeechScript(Voices.a)
        var people: [SimulatedParticipant] = []
        for i in 0..<5 {
            people.append(SimulatedParticipant(try h.join("P\(i)", audioSlots: 4)) { speech.frame(at: $0, speaking: Double(i)..<20) })
        }
        h.run(people, from: 0, seconds: 6)
        #expect(h.talkerEvents(for: "P0").last?.1.count == 4)
        try h.room.update(now: h.now, into: h.batch) { $0.maxActiveTalkers = 2 }
        h.flush()
        #expect(h.talkerEvents(for: "P0").last?.1.count == 2)
        #expect(throws: RoomError.self) { try h.room.update(now: h.now, into: h.batch) { $0.maxActiveTalkers = 13 } }
        #expect(h.room.configuration.maxActiveTalkers == 2)
    }

    @Test func subscriberTalkerCountShortensOnlyItsOwnList() throws {
        let h = try RoomHarness()
        let speech = SpeechScript(Voices.a)
        var people: [SimulatedParticipant] = []
        for i in 0..<5 {
            people.append(SimulatedParticipant(try h.join("P\(i)", audioSlots: 4)) { speech.frame(at: $0, speaking: 0..<20) })
        }
        try h.room.downlinks.setTalkerCount("P0", 2, now: h.now, into: h.batch)
        #expect(throws: RoomError.self) { try h.room.downlinks.setTalkerCount("P0", 0, now: h.now, into: h.batch) }
        h.run(people, from: 0, seconds: 3)
        #expect(h.talkerEvents(for: "P0").last?.1.count == 2)
        #expect(h.talkerEvents(for: "P0").last?.2.filter { $0.participant != nil }.count == 2, "only two slots fed")
        #expect(h.talkerEvents(for: "P1").last?.1.count == 4)
    }

    @Test func sourcesStayInTheirSlotsWhileOthersComeAndGo() throws {
        // Three talkers in three slots; when a fourth starts and one stops, the two who go on keep their slots
        // and the newcomer takes the slot of the one who stopped.
        let h = try RoomHarness()
        let s = (0..<4).map { SpeechScript(Voices.a, seed: UInt64(20 + $0)) }
        let quiet = SpeechScript([], seed: 30)
        let l = SimulatedParticipant(try h.join("L", audioSlots: 3)) { quiet.frame(at: $0, speaking: 0..<0) }
        let t = (0..<4).map { i in
            SimulatedParticipant(try! h.join("T\(i)", audioSlots: 1)) { s[i].frame(at: $0, speaking: i == 3 ? 6..<12 : (i == 0 ? 0..<5 : 0..<12)) }
        }
        h.run([l] + t, from: 0, seconds: 4)
        func slotOf(_ who: String) -> String? { h.talkerEvents(for: "L").last?.2.first { $0.participant == who }?.mid }
        let before = (slotOf("T1"), slotOf("T2"), slotOf("T0"))
        #expect(before.0 != nil && before.1 != nil && before.2 != nil)
        h.run([l] + t, from: 4, seconds: 8)
        #expect(slotOf("T1") == before.0 && slotOf("T2") == before.1, "talkers who go on keep their slots")
        #expect(slotOf("T3") == before.2, "the newcomer takes the slot of the one who stopped")
    }
}

/// Backchannels and the dominant speaker (issue 13): a 300 ms "yeah" is heard where there is room for it but
/// takes neither the dominant speaker's slot nor anyone's video.
@Suite struct BackchannelScenarioTests {
    nonisolated(unsafe) static let quiet = SpeechScript([], seed: 3)

    @Test func withOneSlotTheDominantSpeakerKeepsItThroughABackchannel() throws {
        var config = RoomConfiguration()
        config.maxActiveTalkers = 1
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a, seed: 1), sb = SpeechScript(Voices.c, seed: 5)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0..<20) }
        let b = SimulatedParticipant(try h.join("B", publishVideo: true), video: true, seed: 2) { sb.frame(at: $0, speaking: 6..<6.3) }
        let s = SimulatedParticipant(try h.join("S", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b, s], from: 0, seconds: 5)
        #expect(h.talkerEvents(for: "S").last?.2.map(\.participant) == ["A", "A"])
        h.clearEvents()
        h.run([a, b, s], from: 5, seconds: 4)
        let maps = h.talkerEvents(for: "S").map { $0.2.map(\.participant) }
        #expect(!maps.contains { $0.contains("B") }, "B's yeah took a slot: \(maps)")
        #expect(b.plisReceived == 0, "nobody asked B for a keyframe")
        #expect(h.dominantSpeakers.isEmpty, "A stays dominant")
    }

    @Test func aBackchannelIsHeardInAFreeAudioSlotButTakesNoVideo() throws {
        var config = RoomConfiguration()
        config.maxActiveTalkers = 2
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a, seed: 1), sb = SpeechScript(Voices.c, seed: 5), sc = SpeechScript(Voices.c, seed: 9)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 3..<20) }
        let b = SimulatedParticipant(try h.join("B", publishVideo: true), video: true, seed: 2) { sb.frame(at: $0, speaking: 9..<9.3) }
        let c = SimulatedParticipant(try h.join("C", publishVideo: true), video: true, seed: 3) { sc.frame(at: $0, speaking: 0..<2.5) }
        let s = SimulatedParticipant(try h.join("S", audioSlots: 2, videoSlots: 2)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        var remb = [UInt8](repeating: 0, count: 24)
        let n = remb.withUnsafeMutableBytes { REMB(senderSSRC: 5, bitrate: 5_000_000, ssrcs: [1]).write(into: $0) }!
        h.send(Array(remb[0..<n]), from: s.member.subscribe)  // room for two videos
        h.run([a, b, c, s], from: 0, seconds: 8)
        let before = try #require(h.talkerEvents(for: "S").last?.2)
        #expect(Set(before.filter { $0.kind == .video }.map(\.participant)) == ["A", "C"], "\(before)")
        h.clearEvents()
        h.clearReceived()
        let plis = b.plisReceived  // from the first seconds, when nobody spoke and the slots filled by join order
        h.run([a, b, c, s], from: 8, seconds: 3)
        let maps = h.talkerEvents(for: "S").map(\.2)
        #expect(maps.contains { $0.contains { $0.kind == .audio && $0.participant == "B" } }, "B is heard: \(maps)")
        #expect(!maps.contains { $0.contains { $0.kind == .video && $0.participant == "B" } }, "B takes no video: \(maps)")
        #expect(b.plisReceived == plis, "nobody asked B for a keyframe for its yeah")
        #expect(h.audio(to: s.member, from: b, slots: 2).count >= 5, "B's audio reached S")
    }
}
