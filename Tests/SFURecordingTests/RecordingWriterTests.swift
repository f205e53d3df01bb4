import Foundation
import SFUBase
import SFUMedia
import Synchronization
import Testing
@testable import SFURecording

/// The writer on its own thread, fed as a worker feeds it: a disk that fills or a cap that is reached stops the
/// recording with its files closed playable and the node told why; the queue refuses rather than waits.
@Suite(.serialized) struct RecordingWriterTests {
    /// Feeds `count` Opus packets of `bytes` bytes (20 ms each) into `q` for a stream of `r`.
    static func feed(_ q: RecordingQueue, recording: String, room: String, participant: String, count: Int, bytes: Int,
                     pace: (() -> Void)? = nil) -> (handle: RecordedStreamHandle?, taken: Int) {
        let info = RecordedStream(recording: recording, room: room, participant: participant, name: participant, codec: .opus,
                                  source: nil, layer: nil, recordingStart: .zero)
        guard let h = q.open(info) else { return (nil, 0) }
        var taken = 0
        let payload = [UInt8(0xF8)] + [UInt8](repeating: 0x55, count: bytes - 1)
        for i in 0..<count {
            let ok = payload.withUnsafeBytes {
                q.write(h, payload: $0, sequence: Int64(i), timestamp: UInt32(960 * i), marker: false, arrival: .milliseconds(Int64(20 * i)))
            }
            if ok { taken += 1 }
            if i % 32 == 0 { pace?() }
        }
        q.close(h)
        return (h, taken)
    }

    final class Failures: Sendable {
        let list = Mutex<[(String, String, String)]>([])
        func add(_ f: (String, String, String)) { list.withLock { $0.append(f) } }
        var all: [(String, String, String)] { list.withLock { $0 } }
    }

    @Test func aFullDiskStopsTheRecordingWithItsFilesClosedPlayableAndSaysWhy() async throws {
        let dir = NSTemporaryDirectory() + "tmpfs-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // A tiny disk of its own (root: the tests run as root, as CI does).
        try FFmpeg.runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=192k", "tmpfs", dir])
        defer {
            try? FFmpeg.runCommand("/bin/umount", [dir])
            try? FileManager.default.removeItem(atPath: dir)
        }
        let failures = Failures()
        let w = RecordingWriter(configuration: .init(directory: dir), onFailure: { failures.add(($0, $1, $2)) })
        let q = w.makeQueue(worker: 0)
        w.start()
        defer { w.shutdown() }
        _ = try await w.begin(id: "full", room: "room")
        // 1,000 packets of 500 bytes (500 KB) into a 192 KB disk, paced so the queue never refuses.
        let fed = Self.feed(q, recording: "full", room: "room", participant: "A", count: 1000, bytes: 500) { while q.depth > 256 { usleep(1000) } }
        #expect(fed.taken == 1000)
        let m = try #require(await w.finish(id: "full", reason: "stopped by M"))
        #expect(failures.all.map(\.2) == ["disk_full"] && failures.all.first?.0 == "full")
        #expect(m.stopReason == "disk_full")
        let s = try #require(m.streams.first)
        #expect(s.error != nil && s.closed)
        // Playable up to where the disk filled: it decodes, and holds a few seconds of the 20 s sent.
        let probe = try FFmpeg.probe(dir + "/room/full/" + s.file)
        #expect(probe.codec == "opus" && probe.frames > 100 && probe.frames < 1000, "\(probe)")
        _ = try FFmpeg.decodeAudio(dir + "/room/full/" + s.file)
    }

    @Test func aRoomCapStopsItsRecordingAndRefusesTheNextOneWhileANodeCapCountsWhatWasThere() async throws {
        let dir = NSTemporaryDirectory() + "caps-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let failures = Failures()
        let w = RecordingWriter(configuration: .init(directory: dir, maxRoomBytes: 64_000), onFailure: { failures.add(($0, $1, $2)) })
        let q = w.makeQueue(worker: 0)
        w.start()
        _ = try await w.begin(id: "one", room: "big")
        _ = Self.feed(q, recording: "one", room: "big", participant: "A", count: 400, bytes: 400) { while q.depth > 256 { usleep(1000) } }
        let m = try #require(await w.finish(id: "one", reason: "stopped"))
        #expect(m.stopReason == "room_disk_cap")
        #expect(failures.all.map(\.2) == ["room_disk_cap"])
        await #expect(throws: RecordingWriter.BeginError.self) { _ = try await w.begin(id: "two", room: "big") }
        // Another room is not this room's cap.
        _ = try await w.begin(id: "three", room: "small")
        await w.finish(id: "three", reason: "stopped")
        w.shutdown()
        // A node started again counts what is in the directory against its own cap.
        let again = RecordingWriter(configuration: .init(directory: dir, maxNodeBytes: 32_000))
        again.start()
        defer { again.shutdown() }
        await #expect(throws: RecordingWriter.BeginError.self) { _ = try await again.begin(id: "four", room: "other") }
    }

    @Test func theNodesStopClosesEveryFileAndWritesEveryManifest() async throws {
        let dir = NSTemporaryDirectory() + "stop-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let w = RecordingWriter(configuration: .init(directory: dir))
        let q = w.makeQueue(worker: 0)
        w.start()
        _ = try await w.begin(id: "open", room: "r")
        let info = RecordedStream(recording: "open", room: "r", participant: "A", name: "A", codec: .opus, source: nil, layer: nil, recordingStart: .zero)
        let h = try #require(q.open(info))
        for i in 0..<100 {
            _ = [UInt8(0xF8), 1, 2, 3].withUnsafeBytes {
                q.write(h, payload: $0, sequence: Int64(i), timestamp: UInt32(960 * i), marker: false, arrival: .milliseconds(Int64(20 * i)))
            }
        }
        // No close: the node stops with the stream open.
        w.shutdown()
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/r/open/manifest.json"))
        let m = try JSONDecoder().decode(RecordingManifest.self, from: data)
        #expect(m.stopReason == "node stopped" && m.streams.count == 1 && m.streams[0].closed && m.streams[0].frames == 100)
        #expect(abs(try FFmpeg.probe(dir + "/r/open/" + m.streams[0].file).duration - 2.0) < 0.05)
    }

    @Test func namesFromClientsCannotLeaveTheRecordingsDirectory() {
        #expect(RecordingWriter.safeName("../../etc") == ".._.._etc")
        #expect(RecordingWriter.safeName("..") == "_..")
        #expect(RecordingWriter.safeName("") == "_")
        #expect(RecordingWriter.safeName("a/b\u{0}c é") == "a_b_c__")
        #expect(RecordingWriter.safeName(String(repeating: "x", count: 300)).count == 64)
    }
}
