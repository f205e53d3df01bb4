import SFUMedia
import SFUSimulation
import Testing
@testable import SFU

/// No work without work: a room whose publishers are silent or absent asks for no tick, so an idle node's
/// CPU does not grow with its room count (issue 24: every room ran its speaking check every 40 ms).
@Suite struct IdleRoomTests {
    nonisolated(unsafe) static let quiet = SpeechScript([], seed: 3)

    @Test func aRoomOfAdmittedParticipantsWithoutMediaHasNoDeadline() throws {
        let room = try Room(name: "r", now: .milliseconds(1000))
        let batch = DatagramBatch(capacity: 16)
        for id in ["a", "b", "c"] { try room.admit(id, now: .milliseconds(1000)) }
        // Admitting asked for the talker lists to be rebuilt, at once.
        #expect(room.nextDeadline <= .milliseconds(1000))
        room.tick(now: .milliseconds(1001), into: batch)
        #expect(room.nextDeadline == .never, "nothing is due: \(room.nextDeadline)")
    }

    @Test func silentPublishersLetTheRoomSleepAndASpeakerWakesIt() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A")) { s.frame(at: $0, speaking: 3..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        // Both send only silence for the first 3 s (a muted microphone): levels of 127, DTX-free.
        h.run([a, b], from: 0, seconds: 2)
        let idle = h.room.election.detector.nextDecision
        #expect(idle == .never, "no speaking check while nobody could be speaking: \(idle)")
        h.run([a, b], from: 2, seconds: 3)
        #expect(h.room.election.detector.nextDecision != .never, "A talks: the checks run again")
        #expect(h.dominantSpeakers.last?.1 == "A", "and elect A")
        #expect(h.audio(to: b.member, from: a).count > 50)
    }

    @Test func absentPublishersStopTheirReportsUntilTheyComeBack() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<1) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        // A stops sending anything: its camera and microphone are gone, its transport stays.
        a.audioScript = { _ in nil }
        a.sendsVideo = false
        h.run([b], from: 2, seconds: 4)
        h.clearReceived()
        h.advance(by: 5000)
        #expect(h.rtcp(to: a.member.publish.connection).isEmpty, "no receiver report or REMB about streams that stopped")
        #expect(h.room.nextDeadline == .never, "nothing left to do: \(h.room.nextDeadline) at \(h.now)")
    }
}

/// Tracks and the slots they feed hold each other; a room must still be freed whole, destroyed or not.
@Suite struct RoomLifetimeTests {
    @Test func aRoomLetGoWithoutDestroyIsFreedWithItsTracksSlotsAndConnections() throws {
        weak var room: Room?
        weak var connection: Connection?
        do {
            let h = try RoomHarness()
            let s = SpeechScript(Voices.a, seed: 1), quiet = SpeechScript([], seed: 2)
            let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<30) }
            let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
            h.run([a, b], from: 0, seconds: 2)
            #expect(!h.audio(to: b.member, from: a).isEmpty)
            room = h.room
            connection = h.room.sessions.connection(b.member.subscribe.connection)
        }
        #expect(room == nil && connection == nil, "nothing keeps the room or its parts alive")
    }
}
