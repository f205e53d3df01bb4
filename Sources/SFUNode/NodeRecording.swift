import Foundation
import NodeIO
import SFU
import SFURecording

/// Recording a room (EnableX "Record a Session"): the room's side is `RoomRecording` (who may, in which phase,
/// which tracks), the files are the `RecordingWriter`'s (its own thread, fed through each worker's
/// `RecordingQueue`). The node runs the two steps of a start and of a stop between them: the room says yes, the
/// writer prepares or finishes, the room completes.
extension Node {
    /// Starts recording `room` (`by` nil: its auto_recording). Returns the recording's id and directory.
    public func startRecording(room: String, by: String?) async throws -> (id: String, directory: String) {
        let id = Self.newRecordingID()
        try await withRoom(room) { r, _, now in try r.recorder.requestStart(id: id, by: by, now: now) }
        let directory: String
        do {
            directory = try await recorder.begin(id: id, room: room)
        } catch {
            _ = try? await withRoom(room) { r, _, _ in r.recorder.startFailed(id: id) }
            throw APIError(.serviceUnavailable, code: 6023, "recording unavailable: \(error)")
        }
        // The queue of the worker the room is on, chosen there: only that worker's thread writes into it.
        let queues = recordingQueues
        let started = (try? await withRoom(room) { r, core, now in r.recorder.started(id: id, sink: queues[core.index], now: now) }) ?? false
        guard started else {
            // The room went while the writer prepared.
            await recorder.finish(id: id, reason: "room destroyed")
            throw APIError(.notFound, code: 6008, "no room \(room)")
        }
        logger.info("recording started", metadata: ["room": "\(room)", "recording": "\(id)", "by": "\(by ?? "auto_recording")"])
        return (id, directory)
    }

    /// Stops recording `room`: its streams close, the writer finishes the files and the manifest.
    public func stopRecording(room: String, by: String) async throws -> RecordingManifest? {
        let id = try await withRoom(room) { r, _, now in try r.recorder.requestStop(by: by, now: now) }
        let manifest = await recorder.finish(id: id, reason: "stopped by \(by)")
        _ = try? await withRoom(room) { r, _, _ in r.recorder.stopped(id: id) }
        logger.info("recording stopped", metadata: ["room": "\(room)", "recording": "\(id)", "by": "\(by)",
                                                   "files": "\(manifest?.streams.count ?? 0)"])
        return manifest
    }

    /// The writer stopped a recording by itself (a full disk, a cap): its room stops recording and says why.
    func recordingFailed(id: String, room: String, reason: String) async {
        logger.warning("recording stopped", metadata: ["room": "\(room)", "recording": "\(id)", "reason": "\(reason)"])
        _ = try? await withRoom(room) { r, _, _ in r.recorder.stopped(id: id, reason: reason) }
        await recorder.finish(id: id, reason: reason)
    }

    /// `rec-<UTC time>-<random>`: sortable, unique, safe as a directory name.
    static func newRecordingID() -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd'T'HHmmss"
        return "rec-\(f.string(from: Date()))-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
    }
}
