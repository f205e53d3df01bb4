import Foundation
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// What a participant awaited in a knock-enabled room may do and have done to it (issue 40; EnableX "Moderate
/// Participants' entry": while awaited it cannot communicate with others). It is not in the session yet: no
/// floor action of its own, no moderator's command naming it but a hard mute or a drop, no moderator command
/// of its own whatever role it holds; and whether it waits at all is decided by the role in force after a
/// rejoin restored what the room kept of it, not by the role asked for.
@Suite struct AwaitedCommandsTests {
    func code(_ body: () throws -> Void) -> Int? {
        do { try body(); return nil } catch let e as RoomError { return e.code.rawValue } catch { return -1 }
    }

    static func knockRoom(lecture: Bool = false) -> RoomConfiguration {
        var c = RoomConfiguration()
        c.levelSource = .extension
        c.maxActiveTalkers = 3
        c.knock = true
        if lecture { c.mode = .lecture }
        return c
    }

    /// A's raised hand would be in everyone's `floor` event and the moderator could grant it the floor.
    @Test func anAwaitedParticipantTakesNoPartInTheFloor() throws {
        let h = try RoomHarness(configuration: Self.knockRoom(lecture: true))
        _ = try h.join("M", role: .moderator, audioSlots: 1)
        _ = try h.join("P", audioSlots: 1)
        _ = try h.join("A", audioSlots: 1)
        try h.room.moderation.approve(by: "M", ["P"], now: h.now, into: h.batch)
        _ = h.room.drainEvents()
        for action in [FloorAction.request, .cancel, .finish, .accept, .reject] {
            #expect(code { try h.room.moderation.floor(by: "A", action: action, now: h.now, into: h.batch) } == 5003, "A \(action)")
        }
        for action in [FloorAction.grant, .deny, .release, .invite, .cancelInvite] {
            #expect(code { try h.room.moderation.floor(by: "M", action: action, target: "A", now: h.now, into: h.batch) } == 5045, "M \(action) A")
        }
        #expect(h.room.raisedHands.isEmpty && h.room.approvedHands.isEmpty && h.room.home.moderationState.invited.isEmpty)
        #expect(!h.room.drainEvents().contains { if case .floor = $0 { true } else { false } }, "no floor event names A")
        // The same through the command the API and the other nodes use, and once let in A takes part.
        #expect(code { try h.room.moderation.moderate(.floor(.request, target: nil), by: "A", now: h.now, into: h.batch) } == 5003)
        try h.room.moderation.approve(by: "M", ["A"], now: h.now, into: h.batch)
        try h.room.moderation.moderate(.floor(.request, target: nil), by: "A", now: h.now, into: h.batch)
        try h.room.moderation.moderate(.floor(.grant, target: "A"), by: "M", now: h.now, into: h.batch)
        #expect(h.room.approvedHands == ["A"])
    }

    /// Pins and roles name participants in the session; a hard mute and a drop only restrict, and hold.
    @Test func aModeratorCanNeitherPinNorPromoteAnAwaitedParticipantButMayMuteOrDropIt() throws {
        let h = try RoomHarness(configuration: Self.knockRoom())
        _ = try h.join("M", role: .moderator, audioSlots: 1)
        _ = try h.join("A", audioSlots: 1)
        _ = try h.join("B", audioSlots: 1)
        #expect(code { try h.room.moderation.moderate(.pin(["A"]), by: "M", now: h.now, into: h.batch) } == 5126)
        #expect(code { try h.room.moderation.moderate(.unpin(["A"]), by: "M", now: h.now, into: h.batch) } == 5126)
        #expect(code { try h.room.moderation.moderate(.role(target: "A", .moderator), by: "M", now: h.now, into: h.batch) } == 5126)
        let (m, a) = (try h.room.participant("M"), try h.room.participant("A"))
        #expect(h.room.pinned.isEmpty && m.role == .moderator && a.role == .participant, "nothing changed: M is still the moderator")
        try h.room.moderation.moderate(.hardMute(target: "A", audio: true, video: nil), by: "M", now: h.now, into: h.batch)
        try h.room.moderation.approve(by: "M", ["A"], now: h.now, into: h.batch)
        #expect(try h.room.participant("A").hardMutedAudio, "the hard mute holds once A is let in")
        try h.room.remove("B", by: "M", now: h.now, into: h.batch)
        #expect(!h.room.contains(participant: "B"))
        try h.room.moderation.moderate(.pin(["A"]), by: "M", now: h.now, into: h.batch)
        #expect(h.room.pinned == ["A"], "in the session, A can be pinned")
    }

    /// No moderator command, recording or live stream comes from an awaited participant, whatever its role says.
    @Test func anAwaitedParticipantIssuesNoModeratorCommandEvenWithTheRole() throws {
        let h = try RoomHarness(configuration: Self.knockRoom())
        _ = try h.join("M", role: .moderator, audioSlots: 1)
        _ = try h.join("A", audioSlots: 1)
        try h.room.participant("A").role = .moderator  // however it came to hold it (a stale state, a rejoin)
        #expect(code { try h.room.moderation.approve(by: "A", ["A"], now: h.now, into: h.batch) } == 5003)
        #expect(code { try h.room.moderation.moderate(.lock(true), by: "A", now: h.now, into: h.batch) } == 5115)
        #expect(code { try h.room.moderation.moderate(.roomHardMute(audio: true), by: "A", now: h.now, into: h.batch) } == 5001)
        #expect(code { try h.room.moderation.moderate(.role(target: "M", .participant), by: "A", now: h.now, into: h.batch) } == 5085)
        #expect(code { try h.room.remove("M", by: "A", now: h.now, into: h.batch) } == 5116)
        #expect(code { try h.room.recorder.requestStart(id: "rec-1", by: "A", now: h.now) } == 5007)
        #expect(h.room.awaitedParticipants.map(\.id) == ["A"] && !h.room.locked && h.room.contains(participant: "M"))
    }

    /// The cluster case: the home promoted another node's participant, whose relay then closed (the home keeps
    /// the role for it); it rejoins at the home as a participant asked for and gets its moderator's role back.
    /// With that role in force it does not wait - it used to wait holding the role, and could approve itself.
    @Test func aParticipantWhoseModeratorRoleIsRestoredOnRejoinDoesNotWait() throws {
        var open = Self.knockRoom()
        open.knock = false
        let nodes = try RelayedRooms(configuration: open)
        let (a, b) = (nodes.a, nodes.b)
        _ = try a.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        _ = try b.join("dan", publishAudio: false, audioSlots: 0)
        try nodes.step()
        try a.room.update(now: a.now, into: a.batch) { $0.knock = true }
        try a.room.moderation.moderate(.role(target: "dan", .moderator), by: "M", now: a.now, into: a.batch)
        a.room.sessions.detach(nodes.ab.connection, reason: nil)  // dan's node died: the home keeps its role
        _ = a.room.drainEvents()
        try a.room.admit("dan", role: .participant, now: a.now)
        #expect(try a.room.participant("dan").role == .moderator)
        #expect(a.room.awaitedParticipants.isEmpty, "dan is the moderator in force: it does not wait")
        #expect(a.room.drainEvents().contains(.participantState(participant: "dan", state: .joined, reason: nil)))
        // The other way: M, handed to participant by the promotion, rejoins asking for the moderator role.
        try a.room.remove("M", now: a.now, into: a.batch)
        try a.room.admit("M", role: .moderator, now: a.now)
        #expect(a.room.awaitedParticipants.isEmpty, "nothing kept of M: the role asked for is the one in force")
    }

    /// The home demoted another node's participant and pinned it; it rejoins at the home asking for the
    /// moderator's role: the demotion holds, so it waits - and waits in no list (its pin goes).
    @Test func aRejoiningParticipantWhoWaitsLosesThePinARejoinGaveBack() throws {
        var open = Self.knockRoom()
        open.knock = false
        let nodes = try RelayedRooms(configuration: open)
        let (a, b) = (nodes.a, nodes.b)
        _ = try a.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        _ = try b.join("dan", role: .moderator, publishAudio: false, audioSlots: 0)
        try nodes.step()
        try a.room.update(now: a.now, into: a.batch) { $0.knock = true }
        try a.room.moderation.moderate(.role(target: "dan", .participant), by: "M", now: a.now, into: a.batch)
        try a.room.moderation.moderate(.pin(["dan"]), by: "M", now: a.now, into: a.batch)
        a.room.sessions.detach(nodes.ab.connection, reason: nil)
        try a.room.admit("dan", role: .moderator, now: a.now)
        #expect(try a.room.participant("dan").role == .participant)
        #expect(a.room.awaitedParticipants.map(\.id) == ["dan"])
        #expect(a.room.pinned.isEmpty, "an awaited participant is in no list")
        #expect(code { try a.room.moderation.approve(by: "dan", nil, now: a.now, into: a.batch) } == 5003)
    }

    /// A new home that took the room over lets a member of the dead home's room back in; in a knock-enabled room
    /// it waits, and the pin the saved state gives back goes with it.
    @Test func aMemberWhoRejoinsANewHomeAndWaitsIsNotPinned() throws {
        let h = try RoomHarness(configuration: Self.knockRoom())
        h.room.home.takeOverModeration(ModerationState(version: 3, pinned: ["X"], members: ["M", "X"], moderators: ["M"]), epoch: 7,
                                       now: h.now, into: h.batch)
        _ = try h.join("X", audioSlots: 1)
        #expect(h.room.awaitedParticipants.map(\.id) == ["X"])
        #expect(h.room.pinned.isEmpty)
    }

    /// A node that follows the home applies a state that still names one of its own awaited participants (its
    /// last time in the room: the home cannot know it now, awaited participants are not relayed) as pinned
    /// and a moderator: neither reaches it while it waits.
    @Test func aFollowersAwaitedParticipantTakesNoRoleOrPinFromTheHomesState() throws {
        let h = try RoomHarness(configuration: Self.knockRoom())
        _ = try h.join("A", audioSlots: 1)
        let stale = ModerationState(epoch: 1, version: 9, pinned: ["A"], raisedHands: ["A"], members: ["A"], moderators: ["A"], by: "M")
        #expect(h.room.home.applyModeration(stale, now: h.now, into: h.batch))
        #expect(try h.room.participant("A").role == .participant)
        #expect(h.room.pinned.isEmpty && h.room.raisedHands.isEmpty)
        #expect(code { try h.room.moderation.approve(by: "A", ["A"], now: h.now, into: h.batch) } == 5003)
        #expect(h.room.awaitedParticipants.map(\.id) == ["A"])
    }
}
