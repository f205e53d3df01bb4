import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

@Suite struct ModerationScenarioTests {
    func code(_ body: () throws -> Void) -> Int? {
        do { try body(); return nil } catch let e as RoomError { return e.code.rawValue } catch { return -1 }
    }

    @Test func roomHardMuteSilencesEveryoneButModeratorsIncludingLateJoiners() throws {
        let h = try RoomHarness()
        let sm = SpeechScript(Voices.a, seed: 1), sp = SpeechScript(Voices.c, seed: 2), quiet = SpeechScript([], seed: 3)
        let m = SimulatedParticipant(try h.join("M", role: .moderator)) { sm.frame(at: $0, speaking: 0..<30) }
        let p = SimulatedParticipant(try h.join("P")) { sp.frame(at: $0, speaking: 0..<30) }
        let l = SimulatedParticipant(try h.join("L")) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([m, p, l], from: 0, seconds: 2)
        #expect(code { try h.room.moderation.hardMuteRoom(by: "P", audio: true, now: h.now, into: h.batch) } == 5001)
        try h.room.moderation.hardMuteRoom(by: "M", audio: true, now: h.now, into: h.batch)
        #expect(code { try h.room.moderation.hardMuteRoom(by: "M", audio: true, now: h.now, into: h.batch) } == 5038)
        let lateSpeech = SpeechScript(Voices.c, seed: 4)
        let late = SimulatedParticipant(try h.join("Late")) { lateSpeech.frame(at: $0, speaking: 0..<30) }
        h.clearReceived()
        h.run([m, p, l, late], from: 2, seconds: 3)
        #expect(h.audio(to: l.member, from: p).isEmpty)
        #expect(h.audio(to: l.member, from: late).isEmpty, "late joiners are muted too")
        #expect(h.audio(to: l.member, from: m).count > 100, "moderators are exempt")
        #expect(code { try h.room.moderation.hardMuteRoom(by: "P", audio: false, now: h.now, into: h.batch) } == 5002)
        try h.room.moderation.hardMuteRoom(by: "M", audio: false, now: h.now, into: h.batch)
        #expect(code { try h.room.moderation.hardMuteRoom(by: "M", audio: false, now: h.now, into: h.batch) } == 5039)
        h.clearReceived()
        h.run([m, p, l, late], from: 5, seconds: 3)
        #expect(h.audio(to: l.member, from: p).count > 100)
    }

    @Test func hardMutingATalkerMakesItsSlotsSilenceFramesDueBeforeTheCachedDeadline() throws {
        let h = try RoomHarness()
        let sp = SpeechScript(Voices.a, seed: 1), quiet = SpeechScript([], seed: 2)
        let m = SimulatedParticipant(try h.join("M", role: .moderator)) { quiet.frame(at: $0, speaking: 0..<0) }
        let p = SimulatedParticipant(try h.join("P")) { sp.frame(at: $0, speaking: 0..<30) }
        h.run([m, p], from: 0, seconds: 2)
        #expect(!h.audio(to: m.member, from: p).isEmpty, "P holds a slot at M")
        let cached = h.room.nextDeadline
        #expect(cached > h.now, "the worker asked: the deadline is cached")
        try h.room.moderation.hardMute(by: "M", target: "P", audio: true, video: nil, now: h.now, into: h.batch)
        // The first silence frame goes out with the mute; the next is due one frame later, before the cached time.
        #expect(cached > h.now + .milliseconds(20))
        #expect(h.room.nextDeadline == h.now + .milliseconds(20), "the freed slot's silence frames, not the cached time")
    }

    @Test func lectureModeForwardsOnlyModeratorsAndTheFloorHolder() throws {
        var config = RoomConfiguration()
        config.mode = .lecture
        let h = try RoomHarness(configuration: config)
        let s1 = SpeechScript(Voices.a, seed: 1), s2 = SpeechScript(Voices.c, seed: 2), quiet = SpeechScript([], seed: 3)
        let m = SimulatedParticipant(try h.join("M", role: .moderator)) { quiet.frame(at: $0, speaking: 0..<0) }
        let p1 = SimulatedParticipant(try h.join("P1")) { s1.frame(at: $0, speaking: 0..<30) }
        let p2 = SimulatedParticipant(try h.join("P2")) { s2.frame(at: $0, speaking: 0..<30) }
        h.run([m, p1, p2], from: 0, seconds: 2)
        #expect(h.audio(to: m.member, from: p1).isEmpty && h.audio(to: m.member, from: p2).isEmpty)
        #expect(h.room.counters.drops[.noFloor] > 150)

        try h.room.moderation.floor(by: "P1", action: .request, now: h.now, into: h.batch)
        #expect(h.room.raisedHands == ["P1"])
        try h.room.moderation.floor(by: "M", action: .grant, target: "P1", now: h.now, into: h.batch)
        #expect(h.room.raisedHands.isEmpty && h.room.approvedHands == ["P1"])
        h.clearReceived()
        h.run([m, p1, p2], from: 2, seconds: 2)
        #expect(h.audio(to: m.member, from: p1).count > 80)
        #expect(h.audio(to: m.member, from: p2).isEmpty)

        try h.room.moderation.floor(by: "M", action: .release, target: "P1", now: h.now, into: h.batch)
        h.clearReceived()
        h.run([m, p1, p2], from: 4, seconds: 2)
        #expect(h.audio(to: m.member, from: p1).isEmpty, "released: dropped again")
    }

    @Test func floorProtocolAnswersTheSeedsErrorCodes() throws {
        var config = RoomConfiguration()
        config.mode = .lecture
        let h = try RoomHarness(configuration: config)
        for (id, role) in [("M", Role.moderator), ("P1", .participant), ("P2", .participant)] { _ = try h.join(id, role: role) }
        let r = h.room
        func floor(_ by: String, _ a: FloorAction, _ t: String? = nil) -> Int? {
            code { try r.moderation.floor(by: by, action: a, target: t, now: h.now, into: h.batch) }
        }
        #expect(floor("M", .request) == 5003)
        #expect(floor("P1", .request) == nil)
        #expect(floor("P1", .request) == 5042)
        #expect(floor("P1", .grant, "P1") == 5004)
        #expect(floor("M", .grant, "nobody") == 5045)
        #expect(floor("M", .grant, "P1") == nil)
        #expect(floor("M", .grant, "P1") == 5044)
        #expect(floor("P2", .request) == nil)
        #expect(floor("M", .grant, "P2") == 5046)
        #expect(floor("M", .deny, "P1") == 5048)
        #expect(floor("P1", .deny, "P2") == 5005)
        #expect(floor("M", .deny, "P2") == nil)
        #expect(floor("M", .release, "P2") == 5050)
        #expect(floor("P1", .release, "P1") == 5006)
        #expect(floor("P1", .finish) == nil)
        #expect(r.approvedHands.isEmpty)
        // Invitations: invite, then the invitee accepts and holds the floor; a second invite is rejected.
        #expect(floor("M", .invite, "P2") == nil)
        #expect(floor("P1", .accept) == 5045, "not invited")
        #expect(floor("P2", .accept) == nil)
        #expect(r.approvedHands == ["P2"])
        #expect(floor("M", .invite, "P1") == nil)
        #expect(floor("P1", .reject) == nil)
        #expect(floor("M", .cancelInvite, "P1") == 5045)
        #expect(floor("M", .invite, "P1") == nil)
        #expect(floor("M", .cancelInvite, "P1") == nil)
        // Group mode refuses floor calls.
        let g = try RoomHarness()
        _ = try g.join("P")
        #expect(code { try g.room.moderation.floor(by: "P", action: .request, now: g.now, into: g.batch) } == 5067)
        h.flush()
        let floorEvents = h.events.filter { if case .floor = $0.1 { return true } else { return false } }
        #expect(floorEvents.count == 11, "one event per accepted call")
    }

    @Test func pinsComeAfterTalkersAreLimitedToKMinusOneAndCheckedForRoleAndIdentity() throws {
        // media-core check 9: K = 3 with 2 pins gives exactly one non-pinned talker place.
        var config = RoomConfiguration()
        config.maxActiveTalkers = 3
        let h = try RoomHarness(configuration: config)
        let s1 = SpeechScript(Voices.a, seed: 1), s2 = SpeechScript(Voices.c, seed: 2), quiet = SpeechScript([], seed: 3)
        let m = SimulatedParticipant(try h.join("M", role: .moderator, audioSlots: 3)) { quiet.frame(at: $0, speaking: 0..<0) }
        let x = SimulatedParticipant(try h.join("X")) { quiet.frame(at: $0, speaking: 0..<0) }
        let y = SimulatedParticipant(try h.join("Y")) { quiet.frame(at: $0, speaking: 0..<0) }
        let t1 = SimulatedParticipant(try h.join("T1")) { s1.frame(at: $0, speaking: 0..<30) }
        let t2 = SimulatedParticipant(try h.join("T2")) { s2.frame(at: $0, speaking: 3..<30) }
        #expect(code { try h.room.moderation.pin(by: "X", ["Y"], now: h.now, into: h.batch) } == 5003)
        #expect(code { try h.room.moderation.pin(by: "M", ["ghost"], now: h.now, into: h.batch) } == 5126)
        try h.room.moderation.pin(by: "M", ["X", "Y"], now: h.now, into: h.batch)
        #expect(code { try h.room.moderation.pin(by: "M", ["T1"], now: h.now, into: h.batch) } == 6001)
        h.run([m, x, y, t1, t2], from: 0, seconds: 6)
        let list = try #require(h.talkerEvents(for: "M").last?.1)
        #expect(list.count == 3)
        #expect(list.filter { !$0.pinned }.count == 1, "one place follows the conversation")
        #expect(list.filter(\.pinned).map(\.participant) == ["X", "Y"])
        #expect(list.first?.speaking == true, "talkers first")
        #expect(h.events.contains { $0.1 == .pins(["X", "Y"]) })
        try h.room.moderation.unpin(by: "M", ["X"], now: h.now, into: h.batch)
        h.flush()
        #expect(h.room.pinned == ["Y"])
        #expect(h.talkerEvents(for: "M").last?.1.filter { !$0.pinned }.count == 2)
        #expect(code { try h.room.update(now: h.now, into: h.batch) { $0.maxActiveTalkers = 1 } } == 6001,
                "cannot lower K below pins + 1")
    }

    @Test func lockRefusesNewParticipantsAndAnswersTheSeedsCodes() throws {
        let h = try RoomHarness()
        _ = try h.join("M", role: .moderator)
        _ = try h.join("P")
        #expect(code { try h.room.moderation.lock(by: "P", locked: true) } == 5115)
        try h.room.moderation.lock(by: "M", locked: true)
        #expect(code { try h.room.moderation.lock(by: "M", locked: true) } == 5117)
        #expect(code { try h.room.admit("Q", now: h.now) } == 6002)
        try h.room.moderation.lock(by: "M", locked: false)
        #expect(code { try h.room.moderation.lock(by: "M", locked: false) } == 5118)
        try h.room.admit("Q", now: h.now)
        #expect(code { try h.room.admit("Q", now: h.now) } == 6003)
    }

    @Test func droppingAParticipantClosesItsRoutesAndFreesItsSlots() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1), quiet = SpeechScript([], seed: 3)
        let m = SimulatedParticipant(try h.join("M", role: .moderator)) { quiet.frame(at: $0, speaking: 0..<0) }
        let a = SimulatedParticipant(try h.join("A")) { s.frame(at: $0, speaking: 0..<30) }
        h.run([m, a], from: 0, seconds: 2)
        #expect(code { try h.room.remove("M", by: "A", now: h.now, into: h.batch) } == 5116)
        #expect(Set(h.room.sessions.connections(of: "A")) == [a.member.publish.connection, a.member.subscribe.connection])
        try h.room.remove("A", by: "M", now: h.now, into: h.batch)
        h.flush()
        #expect(h.events.contains { $0.1 == .participantState(participant: "A", state: .left, reason: "dropped by M") })
        #expect(h.talkerEvents(for: "M").last?.1.isEmpty == true)
        h.clearReceived()
        h.run([m, a], from: 2, seconds: 1)
        #expect(h.audio(to: m.member, from: a).isEmpty)
        #expect(h.room.counters.drops[.unknownConnection] >= 50, "its datagrams no longer route")
    }

    @Test func switchingRoleHandsOverModeration() throws {
        var config = RoomConfiguration()
        config.mode = .lecture
        let h = try RoomHarness(configuration: config)
        let s = SpeechScript(Voices.a, seed: 1), quiet = SpeechScript([], seed: 3)
        let m = SimulatedParticipant(try h.join("M", role: .moderator)) { quiet.frame(at: $0, speaking: 0..<0) }
        let p = SimulatedParticipant(try h.join("P")) { s.frame(at: $0, speaking: 0..<30) }
        #expect(code { try h.room.moderation.setRole(by: "P", target: "P", role: .moderator, now: h.now, into: h.batch) } == 5085)
        try h.room.moderation.setRole(by: "M", target: "P", role: .moderator, now: h.now, into: h.batch)
        h.flush()
        #expect(h.events.contains { $0.1 == .role(participant: "P", role: .moderator, by: "M") })
        #expect(h.events.contains { $0.1 == .role(participant: "M", role: .participant, by: "M") })
        h.run([m, p], from: 0, seconds: 2)
        #expect(h.audio(to: m.member, from: p).count > 80, "the new moderator may publish in lecture mode")
    }
}
