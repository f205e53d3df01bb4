import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// Every node of a room that spans nodes knows the whole room (issue 25; docs/cluster.md, "Moderation
/// room-wide"): who is in it at each node, relayed or not, and the roles and moderation the home decides.
@Suite struct RoomMembersTests {
    static func configuration() -> RoomConfiguration {
        var c = RoomConfiguration()
        c.levelSource = .extension
        c.maxActiveTalkers = 2
        return c
    }

    @Test func eachNodeAdmitsTheOthersMembersAsRemoteParticipantsThatPublishNothing() throws {
        let nodes = try RelayedRooms(configuration: Self.configuration())
        let (a, b) = (nodes.a, nodes.b)
        _ = try a.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        _ = try b.join("dan", publishAudio: false, audioSlots: 1)
        try nodes.step()
        let onA = a.room.snapshot().participants.map { "\($0.id)\($0.origin.map { "@" + $0 } ?? "")/\($0.role.rawValue)" }
        let onB = b.room.snapshot().participants.map { "\($0.id)\($0.origin.map { "@" + $0 } ?? "")/\($0.role.rawValue)" }
        #expect(onA == ["M/moderator", "dan@node-b/participant"] && onB == ["dan/participant", "M@node-a/moderator"], "a: \(onA), b: \(onB)")
        #expect(a.room.participantCount == 1 && b.room.participantCount == 1, "a node's load is its own participants")
        // What the other node says again changes nothing; one that node's room has from elsewhere (a local
        // participant of the same id) is left out; a room with no relay to the sender takes nobody.
        #expect(a.room.receiveMembers(b.room.localMembers, from: "node-b") == 0)
        #expect(a.room.receiveMembers([RelayedMember(participant: "M", name: "impostor", role: .participant)], from: "node-b") == 0)
        #expect(a.room.snapshot().participants.first { $0.id == "M" }?.origin == nil)
        #expect(a.room.receiveMembers([RelayedMember(participant: "eve", name: "Eve", role: .moderator)], from: "node-z") == 0)
        // Dan leaves at B: A lets him go (the sender's `left`).
        try b.room.remove("dan", now: b.now, into: b.batch)
        a.room.remoteLeft(["dan"], from: "node-b")
        #expect(!a.room.contains(participant: "dan"))
    }

    @Test func aRoomTakesTheOthersMembersOnlyUpToItsCapacity() throws {
        var limits = RoomLimits()
        limits.participants = 3
        let room = try Room(name: "standup", configuration: Self.configuration(), limits: limits, now: .seconds(1))
        try room.attachRelay(peer: "node-b", connection: ConnectionID(900), now: .seconds(1), into: DatagramBatch(capacity: 16))
        try room.admit("local", now: .seconds(1))
        let members = (0..<5).map { RelayedMember(participant: "r\($0)", name: "R\($0)", role: .participant) }
        #expect(room.receiveMembers(members, from: "node-b") == 2)
        #expect(room.snapshot().participants.map(\.id) == ["local", "r0", "r1"])
    }

    /// B applies A's (the home's) state: B's own clients are told what changed with who did it, as A's were;
    /// roles are the home's for the participants it lists, and one it does not list keeps its own.
    @Test func aNodeTellsItsClientsWhatTheHomeDecidedAndTakesItsRoles() throws {
        var lecture = Self.configuration()
        lecture.mode = .lecture
        let nodes = try RelayedRooms(configuration: lecture)
        let (a, b) = (nodes.a, nodes.b)
        a.room.homeEpoch = 1
        _ = try a.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        _ = try b.join("dan", publishAudio: false, audioSlots: 1)
        try nodes.step()
        _ = b.room.drainEvents()
        // Commands issued at B go to the home, which decides them with B's participants by id.
        try a.room.moderate(.hardMute(target: "dan", audio: true, video: nil), by: "M", now: a.now, into: a.batch)
        try a.room.moderate(.roomHardMute(audio: true), by: "M", now: a.now, into: a.batch)
        try a.room.moderate(.lock(true), by: "M", now: a.now, into: a.batch)
        try a.room.moderate(.role(target: "dan", .moderator), by: "M", now: a.now, into: a.batch)
        // Dan joined at B after the home's state: B does not know him yet when it applies it.
        _ = try b.join("late", role: .moderator, publishAudio: false, audioSlots: 0)
        #expect(b.room.applyModeration(a.room.moderationState, now: b.now, into: b.batch))
        let told = b.room.drainEvents()
        for e in [RoomEvent.participantHardMute(participant: "dan", audio: true, video: false, by: "M"), .roomHardMute(audio: true, by: "M"),
                  .lock(locked: true, by: "M"), .role(participant: "dan", role: .moderator, by: "M"), .role(participant: "M", role: .participant, by: "M")] {
            #expect(told.contains(e), "B told no \(e): \(told)")
        }
        let roles = Dictionary(uniqueKeysWithValues: b.room.snapshot().participants.map { ($0.id, $0.role) })
        #expect(roles == ["dan": .moderator, "M": .participant, "late": .moderator], "\(roles)")
        // The floor: B says which command moved it ("late" is known at the home once B said who is there).
        try nodes.step()
        try a.room.moderate(.floor(.invite, target: "late"), by: "dan", now: a.now, into: a.batch)
        _ = b.room.drainEvents()
        #expect(b.room.applyModeration(a.room.moderationState, now: b.now, into: b.batch))
        #expect(b.room.drainEvents().contains(.floor(action: .invite, by: "dan", target: "late", raisedHands: [], approvedHands: [])))
    }
}
