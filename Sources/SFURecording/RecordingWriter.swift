import Foundation
import SFUBase
import Synchronization

/// The node's recording writer: one thread that takes what the workers' `RecordingQueue`s hold, rebuilds each
/// stream's frames and writes its file (`StreamFile`), keeps each recording's manifest, and enforces the disk
/// caps. It never runs on a worker; a slow disk fills the queues, and the workers count what they drop.
///
/// Control calls (`begin`, `finish`, `shutdown`) are requests its thread answers, so that every file and
/// manifest is touched by that thread alone.
public final class RecordingWriter: @unchecked Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Where recordings go: `<directory>/<room>/<recording>/`.
        public var directory: String
        /// Bytes all recordings in `directory` may take (what was there when the node started counts); 0: no cap.
        public var maxNodeBytes: Int64
        /// Bytes one room's recordings may take on this node (this node's run); 0: no cap.
        public var maxRoomBytes: Int64
        /// Packets each worker's queue holds at most.
        public var queuePackets: Int

        public init(directory: String, maxNodeBytes: Int64 = 0, maxRoomBytes: Int64 = 0, queuePackets: Int = 4096) {
            self.directory = directory
            self.maxNodeBytes = maxNodeBytes
            self.maxRoomBytes = maxRoomBytes
            self.queuePackets = queuePackets
        }
    }

    /// Why a recording could not start.
    public enum BeginError: Error, Equatable, CustomStringConvertible {
        case capReached(String)
        case directory(String)
        case stopped

        public var description: String {
            switch self {
            case .capReached(let s): "disk cap reached: \(s)"
            case .directory(let s): "cannot create the recording's directory: \(s)"
            case .stopped: "the recording writer is stopped"
            }
        }
    }

    public let configuration: Configuration

    /// What `/metrics` shows of the writer.
    public struct Statistics: Sendable, Equatable {
        public var recordings = 0
        public var streams = 0
        public var bytesWritten: Int64 = 0
        public var packetsRefused = 0
        public var failures = 0
        public init() {}
    }

    public var statistics: Statistics {
        var s = Statistics()
        s.recordings = liveRecordings.load(ordering: .relaxed)
        s.streams = liveStreams.load(ordering: .relaxed)
        s.bytesWritten = Int64(written.load(ordering: .relaxed))
        s.failures = failed.load(ordering: .relaxed)
        s.packetsRefused = refusedPackets
        return s
    }

    private let liveRecordings = Atomic<Int>(0)
    private let liveStreams = Atomic<Int>(0)
    private let written = Atomic<Int>(0)
    private let failed = Atomic<Int>(0)
    /// Called on the writer's thread when a recording stops by itself (a full disk, a cap): its room should
    /// stop recording (`recording`, `room`, reason).
    private let onFailure: @Sendable (String, String, String) -> Void

    private enum Request {
        case begin(id: String, room: String, done: CheckedContinuation<String, any Error>)
        case finish(id: String, reason: String, done: CheckedContinuation<RecordingManifest?, Never>)
        case shutdown
    }

    private let condition = NSCondition()
    // Under `condition`:
    private var queues: [RecordingQueue] = []
    private var requests: [Request] = []
    private var active = 0
    private var stopped = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    // The writer thread's own.
    private final class Recording {
        let id: String
        let room: String
        let directory: String
        let startedAt: Date
        var open: [Int: StreamFile] = [:]
        var closed: [StreamFile] = []
        var names: Set<String> = []
        var stopReason: String?
        var stoppedAt: Date?

        init(id: String, room: String, directory: String, startedAt: Date) {
            self.id = id
            self.room = room
            self.directory = directory
            self.startedAt = startedAt
        }
    }
    private var recordings: [String: Recording] = [:]
    /// Open streams by id: their recording, and the handle the worker reads `wantsKeyframe` from.
    private var streams: [Int: (file: StreamFile, recording: Recording, handle: RecordedStreamHandle?)] = [:]
    private var nodeBytes: Int64 = 0
    private var roomBytes: [String: Int64] = [:]
    private var scanned = false

    public init(configuration: Configuration, onFailure: @escaping @Sendable (String, String, String) -> Void = { _, _, _ in }) {
        self.configuration = configuration
        self.onFailure = onFailure
    }

    /// A queue for worker `index` (the workers' queues are made before the thread starts).
    public func makeQueue(worker index: Int) -> RecordingQueue {
        let q = RecordingQueue(index: index, packetCapacity: configuration.queuePackets)
        condition.lock()
        queues.append(q)
        condition.unlock()
        return q
    }

    /// Packets the queues refused (full), all workers together.
    public var refusedPackets: Int {
        condition.lock()
        defer { condition.unlock() }
        return queues.reduce(0) { $0 + $1.refused }
    }

    public func start() {
        condition.lock()
        defer { condition.unlock() }
        guard thread == nil, !stopped else { return }
        let t = Thread { [self] in
            loop()
            finished.signal()
        }
        t.name = "sfu-recorder"
        thread = t
        t.start()
    }

    /// Prepares a recording of `room` with id `id`: its directory, within the caps. Returns the directory.
    public func begin(id: String, room: String) async throws -> String {
        try await withCheckedThrowingContinuation { c in
            guard submit(.begin(id: id, room: room, done: c)) else { return c.resume(throwing: BeginError.stopped) }
        }
    }

    /// Ends a recording once the queues hold nothing more of it: what is still open is closed, and its manifest
    /// written with `reason`. Returns the manifest (nil: no such recording).
    @discardableResult
    public func finish(id: String, reason: String) async -> RecordingManifest? {
        await withCheckedContinuation { c in
            guard submit(.finish(id: id, reason: reason, done: c)) else { return c.resume(returning: nil) }
        }
    }

    /// Closes every file and writes every manifest (reason "node stopped"), then ends the thread.
    public func shutdown() {
        condition.lock()
        let running = thread != nil && !stopped
        if running { requests.append(.shutdown) }
        stopped = true
        condition.signal()
        condition.unlock()
        if running { finished.wait() }
    }

    private func submit(_ r: Request) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, thread != nil else { return false }
        requests.append(r)
        condition.signal()
        return true
    }

    // MARK: The thread

    private func loop() {
        while true {
            condition.lock()
            if requests.isEmpty {
                // Idle with no recording: sleep until asked. Recording: look at the queues every 10 ms.
                if active == 0 { condition.wait() } else { _ = condition.wait(until: Date(timeIntervalSinceNow: 0.01)) }
            }
            let taken = requests
            requests.removeAll()
            let qs = queues
            condition.unlock()
            drain(qs)
            for r in taken {
                switch r {
                case .begin(let id, let room, let done):
                    do { done.resume(returning: try prepare(id: id, room: room)) } catch { done.resume(throwing: error) }
                case .finish(let id, let reason, let done):
                    drain(qs)
                    done.resume(returning: complete(id: id, reason: reason))
                case .shutdown:
                    drain(qs)
                    for id in Array(recordings.keys) { complete(id: id, reason: "node stopped") }
                    return
                }
            }
            condition.lock()
            active = recordings.count
            condition.unlock()
            liveRecordings.store(recordings.count, ordering: .relaxed)
            liveStreams.store(streams.count, ordering: .relaxed)
        }
    }

    // MARK: The steps, on the writer's thread (or, in tests on virtual time, on the test's: no thread started)

    /// `begin`'s work: the directory, within the caps.
    func prepare(id: String, room: String) throws -> String {
        if !scanned {
            scanned = true
            nodeBytes = Self.bytesUnder(configuration.directory)
        }
        if configuration.maxNodeBytes > 0, nodeBytes >= configuration.maxNodeBytes {
            throw BeginError.capReached("the node's recordings take \(nodeBytes) of \(configuration.maxNodeBytes) bytes")
        }
        if configuration.maxRoomBytes > 0, let used = roomBytes[room], used >= configuration.maxRoomBytes {
            throw BeginError.capReached("room \(room)'s recordings take \(used) of \(configuration.maxRoomBytes) bytes")
        }
        guard let roomName = Self.safeName(room), let idName = Self.safeName(id) else {
            throw BeginError.directory("room \(room.prefix(64)) or recording \(id.prefix(64)) is too long for a directory name")
        }
        let dir = configuration.directory + "/" + roomName + "/" + idName
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw BeginError.directory("\(dir): \(error.localizedDescription)")
        }
        let r = Recording(id: id, room: room, directory: dir, startedAt: Date())
        recordings[id] = r
        writeManifest(r)
        return dir
    }

    /// `finish`'s work: closes what is open of the recording and writes its manifest.
    @discardableResult
    func complete(id: String, reason: String) -> RecordingManifest? {
        guard let r = recordings.removeValue(forKey: id) else { return nil }
        stop(r, reason: reason)
        return writeManifest(r)
    }

    /// Closes a recording's open files (it records nothing more).
    private func stop(_ r: Recording, reason: String) {
        for (sid, f) in r.open {
            f.close()
            // The room's recorders may go on until the room hears: they are not to keep asking for key frames.
            streams.removeValue(forKey: sid)?.handle?.setWantsKeyframe(false)
            r.closed.append(f)
        }
        r.open.removeAll()
        if r.stopReason == nil {
            r.stopReason = reason
            r.stoppedAt = Date()
        }
        chargeBytes(r)
    }

    /// Everything the queues hold, written.
    func drainQueues() {
        condition.lock()
        let qs = queues
        condition.unlock()
        drain(qs)
    }

    private func drain(_ qs: [RecordingQueue]) {
        var touched: Set<ObjectIdentifier> = []
        for q in qs {
            _ = q.drain { item in
                switch item.kind {
                case .open:
                    guard let info = item.opened, let r = recordings[info.recording], r.stopReason == nil else { return }
                    let name = uniqueName(for: info, in: r)
                    let f = StreamFile(info: info, fileName: name, directory: r.directory)
                    r.open[item.stream] = f
                    streams[item.stream] = (f, r, q.handle(item.stream))
                    writeManifest(r)
                case .packet:
                    guard let s = streams[item.stream] else { return }
                    do {
                        try s.file.add(sequence: item.sequence, timestamp: item.timestamp, marker: item.marker,
                                       payload: item.payload, arrival: item.arrival)
                    } catch {
                        // A full disk ends the recording; anything else (a stream the muxer refuses) ends that
                        // stream only, its error in the manifest.
                        if (error as? MediaFile.Failure)?.diskFull == true { return fail(s.recording, reason: "disk_full") }
                        end(item.stream)
                        return
                    }
                    if let h = s.handle, h.wantsKeyframe != s.file.wantsKeyframe { h.setWantsKeyframe(s.file.wantsKeyframe) }
                    touched.insert(ObjectIdentifier(s.recording))
                case .restart:
                    streams[item.stream]?.file.restart()
                    streams[item.stream]?.handle?.setWantsKeyframe(streams[item.stream]?.file.info.codec.kind == .video)
                case .close:
                    end(item.stream)
                }
            }
        }
        for r in recordings.values where touched.contains(ObjectIdentifier(r)) && r.stopReason == nil {
            chargeBytes(r)
            if configuration.maxRoomBytes > 0, roomBytes[r.room, default: 0] > configuration.maxRoomBytes {
                fail(r, reason: "room_disk_cap")
            } else if configuration.maxNodeBytes > 0, nodeBytes > configuration.maxNodeBytes {
                fail(r, reason: "node_disk_cap")
            }
        }
    }

    /// Closes one stream (its track ended, or its file failed); a full disk found on closing ends the recording.
    private func end(_ id: Int) {
        guard let s = streams.removeValue(forKey: id) else { return }
        s.recording.open[id] = nil
        s.handle?.setWantsKeyframe(false)
        let failure = s.file.close()
        s.recording.closed.append(s.file)
        if failure?.diskFull == true { return fail(s.recording, reason: "disk_full") }
        writeManifest(s.recording)
    }

    /// A recording that cannot go on: its files are closed (playable up to their last frame), and the node is
    /// told so that its room stops recording and says why.
    private func fail(_ r: Recording, reason: String) {
        guard r.stopReason == nil else { return }
        stop(r, reason: reason)
        writeManifest(r)
        failed.add(1, ordering: .relaxed)
        onFailure(r.id, r.room, reason)
    }

    private func chargeBytes(_ r: Recording) {
        for f in Array(r.open.values) + r.closed {
            let now = f.bytesWritten
            guard now > f.countedBytes else { continue }
            let delta = now - f.countedBytes
            f.countedBytes = now
            nodeBytes += delta
            roomBytes[r.room, default: 0] += delta
            written.add(Int(delta), ordering: .relaxed)
        }
    }

    private func uniqueName(for info: RecordedStream, in r: Recording) -> String {
        let kind = info.codec.kind == .audio ? "audio" : (info.source ?? .camera).rawValue
        // A name too long for a file is "participant" (the manifest names whose file it is).
        let base = (Self.safeName(info.participant) ?? "participant") + "_" + kind
        let ext = MediaFile.container(for: info.codec).fileExtension
        var name = base + "." + ext
        var n = 2
        while r.names.contains(name) {
            name = "\(base)_\(n).\(ext)"
            n += 1
        }
        r.names.insert(name)
        return name
    }

    @discardableResult
    private func writeManifest(_ r: Recording) -> RecordingManifest {
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        // A stream that never had a packet (or, video, a key frame) has no file: not listed.
        let files = (r.closed + r.open.sorted { $0.key < $1.key }.map(\.value)).filter { $0.file != nil }
        let m = RecordingManifest(
            room: r.room, recording: r.id, startedAt: iso.string(from: r.startedAt), stoppedAt: r.stoppedAt.map { iso.string(from: $0) },
            stopReason: r.stopReason,
            streams: files.map { f in
                RecordingManifest.Stream(
                    participant: f.info.participant, name: f.info.name,
                    kind: f.info.codec.kind == .audio ? "audio" : (f.info.source ?? .camera).rawValue,
                    codec: f.info.codec.rawValue, layer: f.info.layer, file: f.fileName,
                    startOffsetMs: f.firstArrival.map { ($0 - f.info.recordingStart).milliseconds },
                    durationMs: Int64(f.durationSeconds * 1000), frames: f.framesWritten, concealedFrames: f.concealedFrames,
                    framesLost: f.framesLost, packetsIgnored: f.packetsIgnored, bytes: f.bytesWritten, error: f.failure?.description,
                    closed: !r.open.values.contains { $0 === f })
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        if let data = try? encoder.encode(m) {
            // Written whole then renamed: a reader never sees half a manifest. A full disk leaves the last one.
            let tmp = r.directory + "/.manifest.json.tmp"
            if FileManager.default.createFile(atPath: tmp, contents: data) {
                _ = rename(tmp, r.directory + "/manifest.json")
            }
        }
        return m
    }
}
