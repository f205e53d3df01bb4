import Foundation
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// A node that takes a room over from a home that died (issue 25) goes on from the moderation that home
/// saved in the registry, as JSON (`Room.takeOverModeration`): the lock, pins and hard mutes hold for the
/// participants who rejoin here, one by one; the new home's own commands are not undone by later arrivals.
@Suite struct ModerationTakeOverTests {
    func code(_ body: () throws -> Void) -> Int? {
        do { try body(); return nil } catch let e as RoomError { return e.code.rawValue } catch { return -1 }
    }

    /// The dead home's state: M moderates, X pinned, Y hard-muted (audio), the room locked; X, Y, M and Z in it.
    func savedByTheDeadHome() throws -> String {
        let h = try RoomHarness()
        for (id, role) in [("M", Role.moderator), ("X", .participant), ("Y", .participant), ("Z", .participant)] { _ = try h.join(id, role: role) }
        try h.room.moderation.pin(by: "M", ["X"], now: h.now, into: h.batch)
        try h.room.moderation.hardMute(by: "M", target: "Y", audio: true, video: nil, now: h.now, into: h.batch)
        try h.room.moderation.lock(by: "M", locked: true)
        return String(decoding: try JSONEncoder().encode(h.room.home.moderationState), as: UTF8.self)
    }

    @Test func theSavedStateReadsBackAsItWasWrittenWithSnakeCaseKeys() throws {
        let json = try savedByTheDeadHome()
        #expect(json.contains(#""hard_muted""#) && json.contains(#""room_audio_muted""#) && json.contains(#""members""#))
        let state = try JSONDecoder().decode(ModerationState.self, from: Data(json.utf8))
        #expect(state.locked && state.pinned == ["X"] && state.hardMuted["Y"] == .init(audio: true, video: false))
        #expect(Set(state.members) == ["M", "X", "Y", "Z"])
        let minimal = try JSONDecoder().decode(ModerationState.self, from: Data(#"{"version": 7}"#.utf8))
        #expect(minimal == ModerationState(version: 7), "keys a state does not carry read as their defaults")
    }

    @Test func theNewHomeLetsTheRoomsParticipantsBackIntoTheLockedRoomWithTheirPinsAndMutes() throws {
        let state = try JSONDecoder().decode(ModerationState.self, from: Data(try savedByTheDeadHome().utf8))
        let h = try RoomHarness()  // the new home's room, created as the first participant is placed there
        h.room.home.takeOverModeration(state, epoch: 7, now: h.now, into: h.batch)
        #expect(h.room.locked)
        #expect(code { _ = try h.join("W") } == ResultCode.roomLocked.rawValue, "a newcomer: the room is locked")
        _ = try h.join("M", role: .moderator)
        _ = try h.join("X")
        #expect(h.room.pinned == ["X"], "X is pinned again as it rejoins")
        _ = try h.join("Y")
        #expect(try h.room.participant("Y").hardMutedAudio, "Y is hard-muted again as it rejoins")
        try h.room.moderation.unpin(by: "M", ["X"], now: h.now, into: h.batch)
        _ = try h.join("Z")
        #expect(h.room.pinned.isEmpty, "the new home's own unpin holds when others rejoin after it")
        _ = try h.room.remove("Z", now: h.now, into: h.batch)
        #expect(code { _ = try h.join("Z") } == ResultCode.roomLocked.rawValue, "back once: a second return is a newcomer's")
    }

    @Test func theWayBackIntoALockedRoomClosesAfterAMinuteOrWhenTheNewHomeLocksItAgain() throws {
        let state = try JSONDecoder().decode(ModerationState.self, from: Data(try savedByTheDeadHome().utf8))
        let late = try RoomHarness()
        late.room.home.takeOverModeration(state, epoch: 7, now: late.now, into: late.batch)
        late.advance(by: 61_000)
        #expect(code { _ = try late.join("X") } == ResultCode.roomLocked.rawValue, "a member a minute late is a newcomer")
        let relocked = try RoomHarness()
        relocked.room.home.takeOverModeration(state, epoch: 7, now: relocked.now, into: relocked.batch)
        _ = try relocked.join("M", role: .moderator)
        try relocked.room.moderation.lock(by: "M", locked: false)
        try relocked.room.moderation.lock(by: "M", locked: true)
        #expect(code { _ = try relocked.join("X") } == ResultCode.roomLocked.rawValue, "the new lock's rules")
    }

    /// A node that followed the dead home (it hosted some of the room's participants) holds a newer state than
    /// the saved one - the home relayed its last commands - and takes over from that; its own commands after
    /// it are not undone when someone is admitted, as a follower's are by the home's state.
    @Test func aFollowerTakesOverFromTheNewerStateItFollowedAndThenKeepsItsOwn() throws {
        let saved = try JSONDecoder().decode(ModerationState.self, from: Data(try savedByTheDeadHome().utf8))
        let h = try RoomHarness()
        _ = try h.join("M", role: .moderator)
        var relayed = saved
        relayed.version += 2
        relayed.roomAudioMuted = true
        #expect(h.room.home.applyModeration(relayed, now: h.now, into: h.batch))
        _ = try h.room.remove("M", now: h.now, into: h.batch)  // the dead home's participants leave with its relay
        h.room.home.takeOverModeration(saved, epoch: 7, now: h.now, into: h.batch)
        #expect(h.room.roomAudioMuted, "the newer state it followed, not the older saved one")
        _ = try h.join("M", role: .moderator)
        try h.room.moderation.hardMuteRoom(by: "M", audio: false, now: h.now, into: h.batch)
        _ = try h.join("X")
        #expect(!h.room.roomAudioMuted, "its own command holds as others are admitted")
    }

    /// Once states cross between live nodes, a follower orders them by (epoch, version): the new home's first
    /// versions are lower than the last its predecessor relayed, and must still win; the old home's late ones lose.
    @Test func aNewHomesStatesAreNewerThanItsPredecessorsWhateverTheirVersions() throws {
        let h = try RoomHarness()
        _ = try h.join("X")
        #expect(h.room.home.applyModeration(ModerationState(epoch: 5, version: 40, pinned: ["X"]), now: h.now, into: h.batch))
        #expect(h.room.home.applyModeration(ModerationState(epoch: 7, version: 3), now: h.now, into: h.batch), "the new home's first state")
        #expect(h.room.pinned.isEmpty)
        #expect(!h.room.home.applyModeration(ModerationState(epoch: 5, version: 41, pinned: ["X"]), now: h.now, into: h.batch), "the dead home's late one")
        let home = try RoomHarness()
        home.room.home.takeOverModeration(ModerationState(epoch: 5, version: 40), epoch: 7, now: home.now, into: home.batch)
        #expect(home.room.home.moderationState.epoch == 7 && home.room.home.moderationState.version == 40, "what the new home shares goes on from it")
    }
}
