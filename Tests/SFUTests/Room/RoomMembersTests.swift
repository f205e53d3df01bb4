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
        #expect(a.room.relays.receiveMembers(b.room.relays.localMembers, from: "node-b") == 0)
        #expect(a.room.relays.receiveMembers([RelayedMember(participant: "M", name: "impostor", role: .participant)], from: "node-b") == 0)
        #expect(a.room.snapshot().participants.first { $0.id == "M" }?.origin == nil)
        #expect(a.room.relays.receiveMembers([RelayedMember(participant: "eve", name: "Eve", role: .moderator)], from: "node-z") == 0)
        // Dan leaves at B: A lets him go (the sender's `left`).
        try b.room.remove("dan", now: b.now, into: b.batch)
        a.room.relays.remoteLeft(["dan"], from: "node-b")
        #expect(!a.room.contains(participant: "dan"))
    }

    /// `participants_per_room` bounds each node's own participants (what placement counts, so a full home
    /// spills to another node); other nodes' participants have a bound of their own (as many as the nodes the
    /// room may relay to hold), so a spilled node still takes the full home's members and its own joiners.
    @Test func eachNodeHoldsItsOwnParticipantsToTheCapAndTheOthersToTheirs() throws {
        var limits = RoomLimits()
        limits.participants = 3
        limits.relays = 2
        let now = MonoTime.seconds(1)
        let room = try Room(name: "standup", configuration: Self.configuration(), limits: limits, now: now)
        try room.relays.attach(peer: "node-b", connection: ConnectionID(900), now: now, into: DatagramBatch(capacity: 16))
        try room.admit("local", now: now)
        let members = (0..<8).map { RelayedMember(participant: "r\($0)", name: "R\($0)", role: .participant) }
        #expect(room.relays.receiveMembers(members, from: "node-b") == 6, "3 x 2 of other nodes")
        #expect(room.participantCount == 1)
        try room.admit("l2", now: now)
        try room.admit("l3", now: now)
        #expect(throws: RoomError.self) { try room.admit("l4", now: now) }
        #expect(room.participantCount == 3 && room.snapshot().participants.count == 9)
    }

    /// A participant held as another node's that joins here (its node died, or it moved) becomes this node's
    /// own; what its old node still describes of it is skipped, not refused with the rest; and another
    /// node's participant can neither publish nor subscribe here.
    @Test func aParticipantWhoMovesHereIsThisNodesOwnAndItsOldNodesDescriptionIsSkipped() throws {
        let nodes = try RelayedRooms(configuration: Self.configuration())
        let (a, b) = (nodes.a, nodes.b)
        var dan = try b.join("dan", audioSlots: 0)
        _ = try a.join("L", publishAudio: false, audioSlots: 1)
        try nodes.step()
        #expect(a.room.relays.origin(of: "dan") == "node-b" && a.room.relays.localIndex(of: "dan") == nil)
        #expect(throws: RoomError.self) { try a.room.sessions.attachPublisher("dan", connection: ConnectionID(901), tracks: [], now: a.now) }
        try a.room.admit("dan", now: a.now)
        #expect(a.room.relays.origin(of: "dan") == nil && a.room.relays.localIndex(of: "dan") != nil)
        // B still has him and relays his audio: A binds nothing of it, and takes the rest of B's description.
        _ = try b.join("eve", audioSlots: 0)
        for _ in 0..<50 {
            b.send(dan.audio.packet([0xF8, 0xFF, 0xFE], level: 10), from: dan.publish)
            dan.audio.timestamp &+= 960
            try nodes.step()
        }
        #expect(a.room.relays.origin(of: "dan") == nil && a.room.relays.origin(of: "eve") == "node-b")
        // An admission refused (the room locked) leaves another node's participant where it was.
        _ = try a.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        try a.room.moderation.moderate(.lock(true), by: "M", now: a.now, into: a.batch)
        #expect(throws: RoomError.self) { try a.room.admit("eve", now: a.now) }
        #expect(a.room.relays.origin(of: "eve") == "node-b")
    }

    /// A relay that closes and opens again (a flapping channel) does not undo what the home decided of the
    /// other node's participants: their hard mutes, roles and pins come back with them.
    @Test func theHomeKeepsWhatItDecidedOfAnotherNodesParticipantsAcrossARelayThatClosed() throws {
        let nodes = try RelayedRooms(configuration: Self.configuration())
        let (a, b) = (nodes.a, nodes.b)
        _ = try a.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        _ = try b.join("dan", publishAudio: false, audioSlots: 0)
        try nodes.step()
        try a.room.moderation.moderate(.hardMute(target: "dan", audio: true, video: nil), by: "M", now: a.now, into: a.batch)
        try a.room.moderation.moderate(.pin(["dan"]), by: "M", now: a.now, into: a.batch)
        try a.room.moderation.moderate(.role(target: "dan", .moderator), by: "M", now: a.now, into: a.batch)
        a.room.sessions.detach(nodes.ab.connection, reason: nil)
        #expect(!a.room.contains(participant: "dan"))
        _ = try a.relay(to: "node-b")
        a.room.relays.receiveMembers(b.room.relays.localMembers, from: "node-b")
        let state = a.room.home.moderationState
        #expect(state.hardMuted["dan"] == .init(audio: true, video: false) && state.pinned == ["dan"] && state.moderators?.contains("dan") == true,
                "\(state)")
        // A real leave forgets it: dan back after leaving B is a new participant to the home.
        a.room.sessions.detach(nodes.ab.connection, reason: nil)
        a.room.relays.remoteLeft(["dan"], from: "node-b")
        a.room.relays.receiveMembers([RelayedMember(participant: "dan", name: "dan", role: .participant)], from: "node-b")
        #expect(a.room.home.moderationState.hardMuted["dan"] == nil)
    }

    /// B applies A's (the home's) state: B's own clients are told what changed with who did it, as A's were;
    /// roles are the home's for the participants it lists, and one it does not list keeps its own.
    @Test func aNodeTellsItsClientsWhatTheHomeDecidedAndTakesItsRoles() throws {
        var lecture = Self.configuration()
        lecture.mode = .lecture
        let nodes = try RelayedRooms(configuration: lecture)
        let (a, b) = (nodes.a, nodes.b)
        a.room.home.epoch = 1
        _ = try a.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        _ = try b.join("dan", publishAudio: false, audioSlots: 1)
        try nodes.step()
        _ = b.room.drainEvents()
        // Commands issued at B go to the home, which decides them with B's participants by id.
        try a.room.moderation.moderate(.hardMute(target: "dan", audio: true, video: nil), by: "M", now: a.now, into: a.batch)
        try a.room.moderation.moderate(.roomHardMute(audio: true), by: "M", now: a.now, into: a.batch)
        try a.room.moderation.moderate(.lock(true), by: "M", now: a.now, into: a.batch)
        try a.room.moderation.moderate(.role(target: "dan", .moderator), by: "M", now: a.now, into: a.batch)
        // Dan joined at B after the home's state: B does not know him yet when it applies it.
        _ = try b.join("late", role: .moderator, publishAudio: false, audioSlots: 0)
        #expect(b.room.home.applyModeration(a.room.home.moderationState, now: b.now, into: b.batch))
        let told = b.room.drainEvents()
        for e in [RoomEvent.participantHardMute(participant: "dan", audio: true, video: false, by: "M"), .roomHardMute(audio: true, by: "M"),
                  .lock(locked: true, by: "M"), .role(participant: "dan", role: .moderator, by: "M"), .role(participant: "M", role: .participant, by: "M")] {
            #expect(told.contains(e), "B told no \(e): \(told)")
        }
        let roles = Dictionary(uniqueKeysWithValues: b.room.snapshot().participants.map { ($0.id, $0.role) })
        #expect(roles == ["dan": .moderator, "M": .participant, "late": .moderator], "\(roles)")
        // The floor: B says which command moved it ("late" is known at the home once B said who is there).
        try nodes.step()
        try a.room.moderation.moderate(.floor(.invite, target: "late"), by: "dan", now: a.now, into: a.batch)
        _ = b.room.drainEvents()
        #expect(b.room.home.applyModeration(a.room.home.moderationState, now: b.now, into: b.batch))
        #expect(b.room.drainEvents().contains(.floor(action: .invite, by: "dan", target: "late", raisedHands: [], approvedHands: [])))
        // A later state that moves the floor without a floor command (the invited one left) repeats no floor event.
        try a.room.moderation.moderate(.hardMute(target: "late", audio: true, video: nil), by: "dan", now: a.now, into: a.batch)
        a.room.relays.remoteLeft(["late"], from: "node-b")  // the home saw "late" go first
        _ = b.room.drainEvents()
        #expect(b.room.home.applyModeration(a.room.home.moderationState, now: b.now, into: b.batch))
        #expect(!b.room.drainEvents().contains { if case .floor = $0 { true } else { false } })
        // A participant the home's state does not list (the home let it go first) keeps its hard mute here.
        try a.room.moderation.moderate(.lock(false), by: "dan", now: a.now, into: a.batch)
        #expect(b.room.home.applyModeration(a.room.home.moderationState, now: b.now, into: b.batch))
        _ = try b.join("new", publishAudio: false, audioSlots: 0)
        try nodes.step()
        try a.room.moderation.moderate(.hardMute(target: "new", audio: true, video: nil), by: "dan", now: a.now, into: a.batch)
        #expect(b.room.home.applyModeration(a.room.home.moderationState, now: b.now, into: b.batch))
        a.room.relays.remoteLeft(["new"], from: "node-b")
        _ = b.room.drainEvents()
        try a.room.moderation.moderate(.roomHardMute(audio: false), by: "dan", now: a.now, into: a.batch)
        #expect(b.room.home.applyModeration(a.room.home.moderationState, now: b.now, into: b.batch))
        #expect(b.room.snapshot().participants.first { $0.id == "new" }?.hardMutedAudio == true)
        #expect(!b.room.drainEvents().contains { if case .participantHardMute = $0 { true } else { false } })
    }
}
