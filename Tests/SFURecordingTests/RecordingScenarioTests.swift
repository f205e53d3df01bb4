import Foundation
import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase
@testable import SFURecording

/// Recording a room on virtual time (issue 26; EnableX "Record a Session"): the seeds' codes and events, start
/// and stop any number of times, what is not forwarded is not recorded, and a full queue costs forwarding
/// nothing. The writer's steps run on the test's thread (`prepare`, `drainQueues`, `complete`).
@Suite final class RecordingScenarioTests {
    let dir = NSTemporaryDirectory() + "recording-\(UUID().uuidString)"

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    static func room() throws -> RoomHarness {
        var c = RoomConfiguration()
        c.levelSource = .extension
        c.maxActiveTalkers = 2
        return try RoomHarness(configuration: c)
    }

    /// An Opus frame of 20 ms (CELT, fullband; the payload is noise to a decoder, which is all a file needs).
    static func frame(_ i: Int) -> [UInt8] { [0xF8] + (0..<40).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) } }

    static func talk(_ h: RoomHarness, _ members: inout [RoomHarness.Member], frames: Int) {
        for n in 0..<frames {
            for i in members.indices {
                h.send(members[i].audio.packet(frame(n), level: 10), from: members[i].publish)
                members[i].audio.timestamp &+= 960
            }
            h.advance(by: 20)
        }
    }

    func start(_ h: RoomHarness, _ w: RecordingWriter, _ q: RecordingQueue, id: String, by: String?) throws {
        try h.room.recorder.requestStart(id: id, by: by, now: h.now)
        _ = try w.prepare(id: id, room: h.room.name)
        #expect(h.room.recorder.started(id: id, sink: q, now: h.now))
        h.flush()
    }

    func stop(_ h: RoomHarness, _ w: RecordingWriter, by: String) throws -> RecordingManifest? {
        let id = try h.room.recorder.requestStop(by: by, now: h.now)
        w.drainQueues()
        let m = w.complete(id: id, reason: "stopped by \(by)")
        h.room.recorder.stopped(id: id)
        return m
    }

    @Test func aModeratorStartsAndStopsAnyNumberOfTimesAndTheSeedsCodesRefuseTheRest() throws {
        let h = try Self.room()
        let w = RecordingWriter(configuration: .init(directory: dir))
        let q = w.makeQueue(worker: 0)
        var members = [try h.join("M", role: .moderator, audioSlots: 2), try h.join("A", audioSlots: 2)]
        func code(_ body: () throws -> Void) -> Int? {
            do { try body() } catch let e as RoomError { return e.code.rawValue } catch { return -1 }
            return nil
        }
        #expect(code { try h.room.recorder.requestStart(id: "r1", by: "A", now: h.now) } == 5007)
        #expect(code { _ = try h.room.recorder.requestStop(by: "M", now: h.now) } == 5036)
        try h.room.recorder.requestStart(id: "r1", by: "M", now: h.now)
        #expect(code { try h.room.recorder.requestStart(id: "r1b", by: "M", now: h.now) } == 5033)
        #expect(code { _ = try h.room.recorder.requestStop(by: "M", now: h.now) } == 5033)
        #expect(h.room.snapshot().recording?.phase == .starting)
        _ = try w.prepare(id: "r1", room: h.room.name)
        #expect(h.room.recorder.started(id: "r1", sink: q, now: h.now))
        h.flush()
        #expect(h.events.contains { $0.1 == .recording(on: true, id: "r1", by: "M", reason: nil) })
        #expect(code { try h.room.recorder.requestStart(id: "r1c", by: "M", now: h.now) } == 5034)
        Self.talk(h, &members, frames: 50)
        #expect(code { _ = try h.room.recorder.requestStop(by: "A", now: h.now) } == 5008)
        #expect(try h.room.recorder.requestStop(by: "M", now: h.now) == "r1")
        #expect(code { _ = try h.room.recorder.requestStop(by: "M", now: h.now) } == 5035)
        #expect(code { try h.room.recorder.requestStart(id: "r1d", by: "M", now: h.now) } == 5035)
        w.drainQueues()
        let first = try #require(w.complete(id: "r1", reason: "stopped by M"))
        h.room.recorder.stopped(id: "r1")
        h.flush()
        #expect(h.events.contains { $0.1 == .recording(on: false, id: "r1", by: "M", reason: nil) })
        #expect(h.room.recording == nil)
        // Talk while not recording: nothing of it is written anywhere.
        Self.talk(h, &members, frames: 25)
        try start(h, w, q, id: "r2", by: "M")
        Self.talk(h, &members, frames: 25)
        let second = try #require(try stop(h, w, by: "M"))
        // Separate recordings, separate directories and files; each holds both participants' audio, as long as
        // it was recorded (1 s, then 0.5 s).
        for (m, seconds) in [(first, 1.0), (second, 0.5)] {
            #expect(Set(m.streams.map(\.participant)) == ["M", "A"])
            for s in m.streams {
                #expect(s.closed && s.kind == "audio" && s.codec == "opus")
                let path = dir + "/" + h.room.name + "/" + m.recording + "/" + s.file
                let probe = try FFmpeg.probe(path)
                #expect(abs(probe.duration - seconds) < 0.1, "\(m.recording)/\(s.file): \(probe.duration) s")
            }
        }
        #expect(FileManager.default.fileExists(atPath: dir + "/" + h.room.name + "/r1/manifest.json"))
        #expect(FileManager.default.fileExists(atPath: dir + "/" + h.room.name + "/r2/manifest.json"))
    }

    @Test func aHardMuteIsAGapInTheFileNotTheMutedAudio() throws {
        let h = try Self.room()
        let w = RecordingWriter(configuration: .init(directory: dir))
        let q = w.makeQueue(worker: 0)
        var members = [try h.join("M", role: .moderator, audioSlots: 2), try h.join("A", audioSlots: 2)]
        try start(h, w, q, id: "mute", by: "M")
        Self.talk(h, &members, frames: 50)
        _ = try h.room.moderation.moderate(.hardMute(target: "A", audio: true, video: nil), by: "M", now: h.now, into: h.batch)
        Self.talk(h, &members, frames: 50)
        _ = try h.room.moderation.moderate(.hardMute(target: "A", audio: false, video: nil), by: "M", now: h.now, into: h.batch)
        Self.talk(h, &members, frames: 50)
        let m = try #require(try stop(h, w, by: "M"))
        let a = try #require(m.streams.first { $0.participant == "A" })
        // 3 s of file: 2 s of A's frames and the 1 s muted as concealment (50 frames, give or take the edges).
        #expect(a.frames >= 145 && a.frames <= 152, "\(a.frames) frames")
        #expect((48...52).contains(a.concealedFrames), "\(a.concealedFrames) concealed")
        #expect(abs(Double(a.durationMs) - 3000) < 60)
        let mStream = try #require(m.streams.first { $0.participant == "M" })
        #expect(mStream.concealedFrames == 0)
    }

    @Test func aFullQueueDropsWhatItCannotTakeCountedAndForwardingGoesOn() throws {
        let h = try Self.room()
        let w = RecordingWriter(configuration: .init(directory: dir, queuePackets: 64))
        let q = w.makeQueue(worker: 0)
        var members = [try h.join("M", role: .moderator, audioSlots: 2), try h.join("A", audioSlots: 2)]
        try start(h, w, q, id: "slow", by: "M")
        // The writer does not run (a disk that does not answer): the queue fills.
        Self.talk(h, &members, frames: 100)
        #expect(h.room.counters.drops[.recordingQueueFull] >= 100, "\(h.room.counters.drops[.recordingQueueFull])")
        #expect(q.refused == Int(h.room.counters.drops[.recordingQueueFull]))
        // The moderator's audio slots (the harness numbers them from its audio SSRC - 1 + 0x100).
        let slots = Set((0..<2).map { members[0].audio.ssrc - 1 + 0x100 + UInt32($0) })
        let heard = h.rtp(to: members[0].subscribe.connection).count { slots.contains($0.header.ssrc) }
        #expect(heard >= 95, "the moderator still hears A: \(heard) packets")
        // Closing still fits (its reserve), and the file written so far is whole.
        let m = try #require(try stop(h, w, by: "M"))
        #expect(m.streams.allSatisfy { $0.closed })
        // What the queue held: 64 entries, two of them the streams' opens.
        #expect(m.streams.map(\.frames).reduce(0, +) == 62, "\(m.streams)")
    }

    @Test func autoRecordingNeedsNoModeratorAndTheRoomsEndClosesTheFiles() throws {
        let h = try Self.room()
        let w = RecordingWriter(configuration: .init(directory: dir))
        let q = w.makeQueue(worker: 0)
        try start(h, w, q, id: "auto", by: nil)
        #expect(h.events.contains { $0.1 == .recording(on: true, id: "auto", by: nil, reason: nil) })
        var members = [try h.join("A", audioSlots: 1)]
        Self.talk(h, &members, frames: 25)
        // A participant who publishes after the start is recorded too; the room's end closes every stream, and
        // tells everyone the recording is off (docs/recording.md: reason "room destroyed") before the room's end.
        h.room.destroy(now: h.now)
        h.flush()
        let end = h.events.suffix(3).map(\.1)
        #expect(end.contains(.recording(on: false, id: "auto", by: nil, reason: "room destroyed")), "\(end)")
        #expect(end.last == .roomDestroyed)
        w.drainQueues()
        let m = try #require(w.complete(id: "auto", reason: "room destroyed"))
        #expect(m.streams.count == 1 && m.streams[0].closed && m.streams[0].frames == 25)
        #expect(m.stopReason == "room destroyed")
    }

    @Test func aStartWhoseSecondStepNeverCameIsTakenOverAfterItsTimeout() throws {
        let h = try Self.room()
        _ = try h.join("M", role: .moderator, audioSlots: 1)
        // The API call that was to complete it timed out on a busy worker: the room waits in `starting`.
        try h.room.recorder.requestStart(id: "lost", by: "M", now: h.now)
        h.advance(by: 10_000)
        #expect((try? h.room.recorder.requestStart(id: "again", by: "M", now: h.now)) == nil, "still within its timeout: 5033")
        h.advance(by: 25_000)
        try h.room.recorder.requestStart(id: "again", by: "M", now: h.now)
        #expect(h.room.recording?.id == "again" && h.room.recording?.phase == .starting)
        #expect(!h.room.recorder.started(id: "lost", sink: RecordingQueue(index: 0), now: h.now), "the abandoned start completes nothing")
    }

    @Test func aRenegotiationKeepsTheFileAndAClientThatStartedOverGetsANewOne() throws {
        let h = try Self.room()
        let w = RecordingWriter(configuration: .init(directory: dir))
        let q = w.makeQueue(worker: 0)
        var members = [try h.join("M", role: .moderator, audioSlots: 1), try h.join("A", audioSlots: 1)]
        try start(h, w, q, id: "reneg", by: "M")
        Self.talk(h, &members, frames: 25)
        // The same track described again on the same connection: the same stream, the same file.
        members[1] = try h.republish(members[1], video: false, newConnection: false)
        Self.talk(h, &members, frames: 25)
        // A new connection with new SSRCs (the client started over): that track ended, a new one is recorded.
        members[1] = try h.republish(members[1], video: false, newConnection: true)
        Self.talk(h, &members, frames: 25)
        let m = try #require(try stop(h, w, by: "M"))
        let a = m.streams.filter { $0.participant == "A" }
        #expect(a.map(\.file) == ["A_audio.opus", "A_audio_2.opus"], "\(a.map(\.file))")
        #expect(a.map(\.frames) == [50, 25], "\(a.map(\.frames))")
        #expect(a.allSatisfy { $0.closed && $0.concealedFrames == 0 })
    }
}
