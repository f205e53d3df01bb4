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
        #expect(RecordingWriter.safeName("../../etc") == "%2E.%2F..%2Fetc")
        #expect(RecordingWriter.safeName("..") == "%2E.")
        #expect(RecordingWriter.safeName(".hidden") == "%2Ehidden")
        #expect(RecordingWriter.safeName("") == nil)
        #expect(RecordingWriter.safeName("a/b\u{0}c é") == "a%2Fb%00c%20%C3%A9")
        #expect(RecordingWriter.safeName(String(repeating: "x", count: 300)) == nil, "too long for a file name: refused, not cut")
    }

    /// Issue 40: rooms `r:1`, `r+1`, `r@1`, `r~1` and `r_1` (all valid ids) recorded into one directory, `r_1`,
    /// while each room's byte cap was its own. Each room now has a directory of its own, and a room's cap
    /// counts what is in its directory.
    @Test func roomsWhoseNamesDifferRecordIntoDirectoriesOfTheirOwn() throws {
        let dir = NSTemporaryDirectory() + "sfu-names-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let w = RecordingWriter(configuration: .init(directory: dir, maxRoomBytes: 4000))
        let q = w.makeQueue(worker: 0)
        let rooms = ["r:1", "r+1", "r@1", "r~1", "r_1", "R_1"]
        let dirs = try rooms.enumerated().map { try w.prepare(id: "rec-\($0.offset)", room: $0.element) }
        #expect(Set(dirs.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }).count == rooms.count, "\(dirs)")
        // r:1 fills its cap (4000 bytes); r_1 still starts: the cap and the directory are the same room's.
        _ = Self.feed(q, recording: "rec-0", room: "r:1", participant: "A", count: 40, bytes: 200)
        w.drainQueues()
        #expect(throws: RecordingWriter.BeginError.self) { try w.prepare(id: "again", room: "r:1") }
        #expect(throws: Never.self) { try w.prepare(id: "other", room: "r_1") }
        let listed = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        #expect(listed == ["R_1", "r%2B1", "r%3A1", "r%401", "r%7E1", "r_1"])
    }
}
