import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// Knock-enabled rooms on virtual time (issue 26; EnableX "Moderate Participants' entry"): who joins without
/// the moderator role waits, sending nothing onward and receiving nothing, until a moderator lets them in or
/// turns them away; moderators are told, and one who comes late reads who waits from the room state.
@Suite struct KnockScenarioTests {
    static func room() throws -> RoomHarness {
        var c = RoomConfiguration()
        c.levelSource = .extension
        c.maxActiveTalkers = 2
        c.knock = true
        return try RoomHarness(configuration: c)
    }

    /// Everyone talks for `frames` 20 ms steps.
    static func talk(_ h: RoomHarness, _ members: inout [RoomHarness.Member], frames: Int) {
        for _ in 0..<frames {
            for i in members.indices {
                h.send(members[i].audio.packet([0xF8, 0xFF, 0xFE, UInt8(i)], level: 10), from: members[i].publish)
                members[i].audio.timestamp &+= 960
            }
            h.advance(by: 20)
        }
    }

    /// Audio packets `m` received in its audio slots whose payload `sender` (its index in `talk`) sent.
    static func heard(_ h: RoomHarness, _ m: RoomHarness.Member, from sender: UInt8) -> Int {
        (0..<2).flatMap { h.slotPackets(m, ssrcOffset: SlotSSRC.audio(UInt32($0))) }.count { $0.packet.last == sender }
    }

    @Test func anAwaitedParticipantSendsNothingOnwardAndReceivesNothingUntilLetIn() throws {
        let h = try Self.room()
        var members = [try h.join("M", role: .moderator, audioSlots: 2), try h.join("A", audioSlots: 2)]
        #expect(h.events.contains { $0.1 == .participantState(participant: "A", state: .awaited, reason: "knock") })
        #expect(h.events.contains { $0.1 == .knock(action: .awaited, participant: "A", name: "A", by: nil) })
        #expect(!h.events.contains { $0.1 == .participantState(participant: "A", state: .joined, reason: nil) })
        #expect(h.room.awaitedParticipants.map(\.id) == ["A"] && h.room.snapshot().awaited.map(\.id) == ["A"])
        Self.talk(h, &members, frames: 100)
        #expect(Self.heard(h, members[0], from: 1) == 0, "the moderator hears nothing of A")
        #expect(Self.heard(h, members[1], from: 0) == 0, "A hears nothing of the moderator")
        #expect(h.room.counters.drops[.awaited] >= 90, "A's packets dropped at ingress, counted")
        // Only a moderator lets people in; an id that is not waiting is refused and nothing changes.
        #expect(throws: RoomError(.unauthorized, .unauthorized, "A is not a moderator")) { try h.room.moderation.approve(by: "A", nil, now: h.now, into: h.batch) }
        #expect((try? h.room.moderation.approve(by: "M", ["A", "M"], now: h.now, into: h.batch)) == nil)
        #expect(h.room.awaitedParticipants.map(\.id) == ["A"])
        #expect(try h.room.moderation.approve(by: "M", ["A"], now: h.now, into: h.batch) == ["A"])
        h.flush()
        #expect(h.events.contains { $0.1 == .knock(action: .approved, participant: "A", name: "A", by: "M") })
        #expect(h.events.contains { $0.1 == .participantState(participant: "A", state: .joined, reason: "approved by M") })
        h.clearReceived()
        Self.talk(h, &members, frames: 100)
        #expect(Self.heard(h, members[0], from: 1) >= 80 && Self.heard(h, members[1], from: 0) >= 80, "in: both hear each other")
    }

    @Test func aModeratorTurnsAwaitedParticipantsAwayAndALateModeratorSeesWhoWaits() throws {
        let h = try Self.room()
        _ = try h.join("A", audioSlots: 1)
        _ = try h.join("B", audioSlots: 1)
        _ = try h.join("C", audioSlots: 1)
        // The moderator comes late: the room state lists who waits, in the order they knocked.
        _ = try h.join("M", role: .moderator, audioSlots: 1)
        #expect(h.room.snapshot().awaited.map(\.id) == ["A", "B", "C"])
        #expect(try h.room.moderation.deny(by: "M", ["B"], now: h.now, into: h.batch) == ["B"])
        h.flush()
        #expect(!h.room.contains(participant: "B"))
        #expect(h.events.contains { $0.1 == .knock(action: .denied, participant: "B", name: "B", by: "M") })
        #expect(h.events.contains { $0.1 == .participantState(participant: "B", state: .left, reason: "denied by M") })
        // Everyone else who waits, at once.
        #expect(try h.room.moderation.approve(by: "M", nil, now: h.now, into: h.batch) == ["A", "C"])
        #expect(h.room.awaitedParticipants.isEmpty)
        #expect(try h.room.moderation.deny(by: "M", nil, now: h.now, into: h.batch) == [])
        // A room without knock lets everyone in at once.
        let open = try RoomHarness()
        _ = try open.join("A", audioSlots: 1)
        #expect(open.room.awaitedParticipants.isEmpty)
    }
}
