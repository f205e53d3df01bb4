import Foundation
import Logging
import NodeIO
import SFU
import SFURecording
import Synchronization
import WebRTCEdge

/// The media node: one worker per core (or as configured), each on its own UDP port counting up from
/// `media.listen`, and the placement of rooms on workers. A room lives on one worker; every operation on it
/// runs there, through the worker's command queue. Session set-up (offer in, answer out) is here, not in
/// the HTTP routes: `publish` and `subscribe` hand the offer to the room's worker core, which decides
/// whether it renegotiates, restarts ICE or replaces the participant's transport.
public final class Node: Sendable {
    public let configuration: NodeConfiguration
    /// The workers and which of them holds each room.
    public let rooms: NodeRooms
    public var workers: [Worker] { rooms.workers }
    public let certificate: DTLSCertificate
    /// Requests refused by a cap, by limit name, for `/metrics`.
    private let refusals = Mutex<[String: UInt64]>([:])
    /// Room events, numbered and encoded, for `GET /v1/events`.
    public let events: EventHub
    public let metrics = NodeMetrics()
    let logger: Logger
    private let pump = Mutex<Task<Void, Never>?>(nil)
    private let pumpWake = Mutex<AsyncStream<Void>.Continuation?>(nil)
    /// Told of rooms whose relays have something new (`RoomEvent.relaysChanged`): the cluster's relay mesh.
    private let relayObserver = Mutex<(@Sendable (Set<String>) -> Void)?>(nil)

    /// Sets what is told of rooms whose relays have something new; set it before rooms relay.
    public func observeRelays(_ observer: @escaping @Sendable (Set<String>) -> Void) { relayObserver.withLock { $0 = observer } }

    /// What decides elsewhere for a room that spans nodes (the cluster's relay mesh): its home decides
    /// moderator commands, and a participant's own node removes it.
    private let elsewhere = Mutex<(any RoomsElsewhere)?>(nil)
    func decideElsewhere(_ e: any RoomsElsewhere) { elsewhere.withLock { $0 = e } }

    /// Runs a moderator command on `room`: here, or at the room's home when the room spans nodes and its home
    /// is another node (one node decides every command of a room: docs/cluster.md, "Moderation room-wide").
    @discardableResult
    public func moderate(room: String, by: String, _ command: ModerationCommand) async throws -> ModerationOutcome {
        if let e = elsewhere.withLock({ $0 }), let outcome = try await e.forward(room: room, by: by, command) { return outcome }
        return try await withRoom(room) { r, core, now in try r.moderation.moderate(command, by: by, now: now, into: core.batch) }
    }

    /// Recording (`NodeRecordings`: the writer's thread, each worker's queue to it) and live streaming
    /// (`NodeLiveStreams`: the encoders and their ports): features that own their state and reach rooms through
    /// `rooms`.
    public let recordings: NodeRecordings
    public let liveStreams: NodeLiveStreams

    /// Set by `POST /v1/node/drain`: the node takes no new rooms; the rooms it holds go on.
    private let draining = Atomic<Bool>(false)

    public init(configuration: NodeConfiguration, logger: Logger = Logger(label: "sfu", factory: { _ in SwiftLogNoOpLogHandler() })) throws {
        self.configuration = configuration
        self.logger = logger
        events = EventHub(bufferPerConsumer: configuration.eventsConsumerBuffer, history: configuration.eventsHistory)
        if configuration.dtlsCertificateFile.isEmpty {
            certificate = try DTLSCertificate(commonName: "sfu")
        } else {
            let cert = try String(contentsOfFile: configuration.dtlsCertificateFile, encoding: .utf8)
            let key = try String(contentsOfFile: configuration.dtlsKeyFile, encoding: .utf8)
            certificate = try DTLSCertificate(keyPEM: key, certificatePEM: cert)
        }
        let count = configuration.workers > 0 ? configuration.workers : ProcessInfo.processInfo.activeProcessorCount
        let announced = configuration.mediaAnnounced.compactMap(TransportAddress.init)
        try configuration.checkPorts(workers: count)
        var ws: [Worker] = []
        for i in 0..<count {
            // One UDP socket (and TCP port) per listen address: one, or one per family on a dual-stack node.
            var ends: [(udp: UDPSocket, tcp: TCPPort?)] = []
            for var address in [configuration.mediaListen] + configuration.mediaListenAlso {
                if address.port != 0 { address.port += UInt16(i) }
                let socket = try UDPSocket(bind: address)
                ends.append((socket, configuration.mediaTCP ? try Self.tcpPort(beside: socket, limits: configuration.tcpLimits) : nil))
            }
            ws.append(try Worker(index: i, socket: ends[0].udp, tcp: ends[0].tcp, also: Array(ends.dropFirst()), certificate: certificate,
                                 announced: announced.map { TransportAddress(ip: $0.ip, port: $0.port + UInt16(i)) },
                                 eventCapacity: configuration.eventsQueue, limits: configuration.workerLimits,
                                 commandTimeout: .milliseconds(Int64(configuration.commandTimeoutMilliseconds)),
                                 datagramsPerPass: configuration.datagramsPerPass,
                                 consentTimeout: .seconds(Double(configuration.consentSeconds))))
        }
        Worker.connect(ws)
        rooms = NodeRooms(workers: ws)
        recordings = NodeRecordings(configuration: configuration, rooms: rooms, logger: logger)
        liveStreams = NodeLiveStreams(configuration: configuration, rooms: rooms, logger: logger)
    }

    /// A worker's ICE-TCP port: the UDP socket's address and port number when TCP has it free (one number to
    /// open in a firewall), else any free port on that address.
    static func tcpPort(beside socket: UDPSocket, limits: TCPLimits) throws -> TCPPort {
        if let same = try? TCPPort(bind: socket.local.over(tcp: true), limits: limits) { return same }
        var any = socket.local.over(tcp: true)
        any.port = 0
        return try TCPPort(bind: any, limits: limits)
    }

    /// Starts the workers and the event pump, which moves the workers' events to `events` (off the media
    /// threads: encoding and fan-out cost the control plane, never a worker). The pump wakes when a worker
    /// queued events, then gathers for 10 ms so a burst (a talker change to 60 subscribers) is one pass; an
    /// idle node never wakes it.
    public func start() {
        let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        for w in workers {
            w.observeEvents { wake.yield() }
            w.start()
        }
        pump.withLock { task in
            task = task ?? Task.detached { [self] in
                for await _ in wakeups {
                    try? await Task.sleep(for: .milliseconds(10))
                    if Task.isCancelled { break }
                    pumpEvents()
                }
            }
        }
        pumpWake.withLock { $0 = wake }
        recordings.start()
    }

    /// Stops the workers: every room is destroyed, so every client is told (participants left, DTLS
    /// close_notify) and every event consumer gets the last events before its stream ends.
    public func stop() {
        pump.withLock { $0?.cancel(); $0 = nil }
        pumpWake.withLock { $0?.finish(); $0 = nil }
        // Every encoder told first (SIGTERM: each FFmpeg ends its RTMP stream while the rest stops), and waited
        // for last, all within one `LiveEncoder.stopGrace`.
        let streams = liveStreams.beginStop()
        // Rooms first, on every worker while all run: a room's transports hosted by another worker are
        // released there (DTLS close_notify) before that worker stops. Each recording and live stream is told
        // off ("node stopped") with the room.
        for w in workers where w.isRunning { try? w.performAndWait { core, now in core.destroyAllRooms(now: now) } }
        for w in workers { w.stop() }
        // Every file closed playable and every manifest written, after the rooms queued their last packets.
        recordings.shutdown()
        liveStreams.finishStop(streams)
        pumpEvents()
        events.finish()
    }

    /// `stop` on a thread of its own: it waits for workers, files and encoders, which must not hold one of the
    /// few threads Swift concurrency runs every task on.
    public func stopped() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            Thread { [self] in
                stop()
                c.resume()
            }.start()
        }
    }

    private func pumpEvents() {
        var (drained, lost) = drainEvents()
        // Rooms whose relays have something to say go to the relays, not to the event stream.
        var relayed: Set<String> = []
        drained.removeAll { e in
            guard case .relaysChanged = e.event else { return false }
            relayed.insert(e.room)
            return true
        }
        if !relayed.isEmpty, let observer = relayObserver.withLock({ $0 }) { observer(relayed) }
        guard !drained.isEmpty || lost > 0 else { return }
        events.publish(drained, lostUpstream: lost, now: Int64(Date().timeIntervalSince1970 * 1000))
        if lost > 0 { logger.warning("events lost: worker queues full", metadata: ["count": "\(lost)"]) }
        for e in drained { EventLog.log(e, to: logger) }
    }

    public var roomNames: [String] { rooms.names }

    public var isDraining: Bool { draining.load(ordering: .relaxed) }

    /// No new rooms from now on (refused 503, 6018); existing rooms and their participants stay, so an
    /// operator can empty a node by waiting for its rooms to end. Not undone but by a restart.
    public func drain() {
        if !draining.exchange(true, ordering: .relaxed) { logger.notice("draining: no new rooms") }
    }

    /// Creates a room on the worker with the fewest rooms; refused past `limits.rooms`.
    public func createRoom(_ name: String, configuration room: RoomConfiguration) async throws {
        try room.validate()
        let index = try rooms.reserve(name, limit: configuration.maxRooms, draining: isDraining)
        let limits = configuration.workerLimits.room
        do {
            try await workers[index].perform { core, now in core.addRoom(try Room(name: name, configuration: room, limits: limits, now: now)) }
        } catch {
            rooms.forget(name)
            throw error
        }
        logger.info("room created", metadata: [
            "room": "\(name)", "worker": "\(index)", "mode": "\(room.mode.rawValue)",
            "max_active_talkers": "\(room.maxActiveTalkers)", "level_source": "\(room.levelSource.rawValue)",
        ])
    }

    /// Runs `body` on the room's worker with the room, the worker's core (for its batch) and the time.
    public func withRoom<T: Sendable>(_ name: String, _ body: @escaping @Sendable (Room, WorkerCore, MonoTime) throws -> T) async throws -> T {
        try await rooms.withRoom(name, body)
    }

    /// Runs `body` on the worker core of `room`'s worker (an operation that closes transports as well).
    func withCore<T: Sendable>(of room: String, _ body: @escaping @Sendable (WorkerCore, MonoTime) throws -> T) async throws -> T {
        try await rooms.withCore(of: room, body)
    }

    /// Answers a participant's offer to send (see `WorkerCore.publish`).
    public func publish(room: String, participant: String, offer: String, screenShareMids: Set<String> = []) async throws -> SessionAnswer {
        try await session(room) { core, now in
            try core.publish(room: room, participant: participant, offer: offer, screenShareMids: screenShareMids, now: now)
        }
    }

    /// Answers a participant's offer to receive (see `WorkerCore.subscribe`).
    public func subscribe(room: String, participant: String, offer: String, screenShareMids: Set<String> = []) async throws -> SessionAnswer {
        try await session(room) { core, now in
            try core.subscribe(room: room, participant: participant, offer: offer, screenShareMids: screenShareMids, now: now)
        }
    }

    private func session(_ room: String, _ body: @escaping @Sendable (WorkerCore, MonoTime) throws -> SessionAnswer) async throws -> SessionAnswer {
        let answer = try await rooms.withCore(of: room, body)
        logger.info("session \(answer.change.rawValue)", metadata: ["room": "\(room)", "connection": "\(answer.connection)"])
        return answer
    }

    /// Removes a participant (a moderator's drop when `by` is given) and closes its transports.
    public func removeParticipant(room: String, participant: String, by: String?) async throws -> Int {
        // Another node's participant is removed by its node (this node's copy goes with that node's `left`).
        if let e = elsewhere.withLock({ $0 }), let closed = try await e.drop(room: room, participant: participant, by: by) { return closed }
        return try await removeHere(room: room, participant: participant, by: by)
    }

    /// Removes one of this node's participants (`removeParticipant` without asking another node).
    func removeHere(room: String, participant: String, by: String?) async throws -> Int {
        try await rooms.withCore(of: room) { core, now in try core.removeParticipant(room: room, participant, by: by, now: now) }
    }

    /// Destroys a room: every participant is told (left, room destroyed) and its transports closed.
    public func destroyRoom(_ name: String) async throws {
        let (recording, stream) = try await rooms.withCore(of: name) { core, now in
            let ids = (core.room(name)?.recording?.id, core.room(name)?.streaming?.id)
            core.destroyRoom(name, now: now)
            return ids
        }
        rooms.forget(name)
        if let recording { await recordings.roomEnded(recording: recording) }
        if let stream { await liveStreams.roomEnded(stream: stream) }
    }

    func worker(of room: String) -> Worker? { rooms.worker(of: room) }

    /// Counts a request refused by a cap (for `sfu_limit_refusals_total`).
    func countRefusal(_ limit: String) { refusals.withLock { $0[limit, default: 0] += 1 } }

    var limitRefusals: [String: UInt64] { refusals.withLock { $0 } }

    /// Events of every worker since the last call, and how many were lost.
    public func drainEvents() -> (events: [StampedEvent], dropped: Int) {
        workers.reduce(into: ([], 0)) { acc, w in
            let (e, d) = w.drainEvents()
            acc.0 += e
            acc.1 += d
        }
    }
}

/// Where a room that spans nodes decides what this node may not decide alone (`RelayMesh`): each answers nil
/// when this node decides after all (the room spans no other node, or this node is the one).
protocol RoomsElsewhere: Sendable {
    /// A moderator command, decided by the room's home.
    func forward(room: String, by: String, _ command: ModerationCommand) async throws -> ModerationOutcome?
    /// Removing another node's participant, done by that node: how many of its connections closed.
    func drop(room: String, participant: String, by: String?) async throws -> Int?
}

/// A refused API call: HTTP status, result code (the seeds' or the node's own), message.
public struct APIError: Error, Sendable, CustomStringConvertible {
    public enum Status: Int, Sendable {
        case badRequest = 400, unauthorized = 401, forbidden = 403, notFound = 404, conflict = 409, payloadTooLarge = 413
        case unsupportedMediaType = 415, upgradeRequired = 426, serviceUnavailable = 503
    }

    public var status: Status
    public var code: Int
    public var message: String

    public init(_ status: Status, code: Int, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public var description: String { "\(status.rawValue) \(code) \(message)" }

    /// The API's view of any error an operation throws.
    static func from(_ error: Error) -> APIError {
        switch error {
        case let e as APIError: return e
        case let e as RoomError:
            let status: Status = switch e.kind {
            case .unauthorized: .forbidden
            case .notFound: .notFound
            case .conflict: .conflict
            case .invalid: .badRequest
            }
            return APIError(status, code: e.code.rawValue, e.message)
        case let e as SDPError: return APIError(.badRequest, code: ResultCode.invalidMediaDescription.rawValue, e.description)
        case let e as NoSuchRoom: return APIError(.notFound, code: 6008, e.description)
        case let e as WorkerTimeout: return APIError(.serviceUnavailable, code: 6017, "\(e.description); nothing was done, retry")
        default: return APIError(.badRequest, code: 6010, "\(error)")
        }
    }
}
