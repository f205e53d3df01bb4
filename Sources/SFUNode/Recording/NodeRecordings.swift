import Foundation
import Logging
import NodeIO
import SFU
import SFURecording
import Synchronization

/// Recording on this node (EnableX "Record a Session"): the writer of the files (`RecordingWriter`, its own
/// thread, fed through each worker's `RecordingQueue`) and the two steps of each start and stop between it and
/// the room (`RoomRecording`: who may, in which phase, which tracks): the room says yes, the writer prepares or
/// finishes, the room completes. It owns all of recording's state; the node holds it and stops it with itself.
public final class NodeRecordings: Sendable {
    /// The files' writer.
    public let writer: RecordingWriter
    /// Each worker's queue to the writer, by worker index: only that worker's thread writes into it.
    let queues: [RecordingQueue]
    private let rooms: NodeRooms
    private let logger: Logger
    /// Recordings the writer stopped by itself (a full disk, a cap), for `recordingFailed`.
    private let failures: AsyncStream<(id: String, room: String, reason: String)>
    private let failureTask = Mutex<Task<Void, Never>?>(nil)

    init(configuration c: NodeConfiguration, rooms: NodeRooms, logger: Logger) {
        self.rooms = rooms
        self.logger = logger
        let (failures, failed) = AsyncStream.makeStream(of: (id: String, room: String, reason: String).self)
        self.failures = failures
        let writer = RecordingWriter(configuration: .init(directory: c.recordingDirectory,
                                                      maxNodeBytes: Int64(c.recordingNodeCapMB) << 20,
                                                      maxRoomBytes: Int64(c.recordingRoomCapMB) << 20,
                                                      queuePackets: c.recordingQueuePackets),
                                 onFailure: { id, room, reason in failed.yield((id, room, reason)) })
        self.writer = writer
        queues = rooms.workers.indices.map { writer.makeQueue(worker: $0) }
    }

    /// Starts the writer's thread and the watch on the recordings it stops by itself.
    func start() {
        writer.start()
        failureTask.withLock { task in
            task = task ?? Task.detached { [self] in
                for await f in failures { await failed(id: f.id, room: f.room, reason: f.reason) }
            }
        }
    }

    /// Every file closed playable and every manifest written (after the rooms queued their last packets).
    func shutdown() {
        writer.shutdown()
        failureTask.withLock { $0?.cancel(); $0 = nil }
    }

    /// Starts recording `room` (`by` nil: its auto_recording). Returns the recording's id and directory.
    public func start(room: String, by: String?) async throws -> (id: String, directory: String) {
        let id = Self.newID()
        try await rooms.withRoom(room) { r, _, now in try r.recorder.requestStart(id: id, by: by, now: now) }
        let directory: String
        do {
            directory = try await writer.begin(id: id, room: room)
        } catch {
            _ = try? await rooms.withRoom(room) { r, _, _ in r.recorder.startFailed(id: id) }
            throw APIError(.serviceUnavailable, code: 6023, "recording unavailable: \(error)")
        }
        // The queue of the worker the room is on, chosen there: only that worker's thread writes into it.
        let queues = queues
        let started = (try? await rooms.withRoom(room) { r, core, now in r.recorder.started(id: id, sink: queues[core.index], now: now) }) ?? false
        guard started else {
            // The room went while the writer prepared.
            await writer.finish(id: id, reason: "room destroyed")
            throw APIError(.notFound, code: 6008, "no room \(room)")
        }
        logger.info("recording started", metadata: ["room": "\(room)", "recording": "\(id)", "by": "\(by ?? "auto_recording")"])
        return (id, directory)
    }

    /// Stops recording `room`: its streams close, the writer finishes the files and the manifest.
    public func stop(room: String, by: String) async throws -> RecordingManifest? {
        let id = try await rooms.withRoom(room) { r, _, now in try r.recorder.requestStop(by: by, now: now) }
        let manifest = await writer.finish(id: id, reason: "stopped by \(by)")
        _ = try? await rooms.withRoom(room) { r, _, _ in r.recorder.stopped(id: id) }
        logger.info("recording stopped", metadata: ["room": "\(room)", "recording": "\(id)", "by": "\(by)",
                                                   "files": "\(manifest?.streams.count ?? 0)"])
        return manifest
    }

    /// The recording of a room that ended: its files are finished (the room told its own event).
    func roomEnded(recording id: String) async { _ = await writer.finish(id: id, reason: "room destroyed") }

    /// The writer stopped a recording by itself (a full disk, a cap): its room stops recording and says why.
    private func failed(id: String, room: String, reason: String) async {
        logger.warning("recording stopped", metadata: ["room": "\(room)", "recording": "\(id)", "reason": "\(reason)"])
        _ = try? await rooms.withRoom(room) { r, _, _ in r.recorder.stopped(id: id, reason: reason) }
        await writer.finish(id: id, reason: reason)
    }

    /// `rec-<UTC time>-<random>`: sortable, unique, safe as a directory name.
    static func newID() -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd'T'HHmmss"
        return "rec-\(f.string(from: Date()))-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
    }
}
