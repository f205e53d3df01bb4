import CNodeIO
import Foundation
import SFU
import Synchronization
import WebRTCEdge

/// The caller-side clock of the I/O shell: CLOCK_MONOTONIC (the engine itself never reads a clock).
public enum MonoClock {
    public static func now() -> MonoTime {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonoTime(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }
}

/// What a worker owns: its edge (ICE, DTLS per connection), its rooms, and which room each connection is in.
/// Only the worker thread touches it; the control plane reaches it through `Worker.perform`.
public final class WorkerContext {
    public let edge: WorkerEdge
    /// The worker's socket, for control traffic a command produces (DTLS close_notify).
    public let socket: UDPSocket
    public internal(set) var rooms: [String: Room] = [:]
    var roomOfConnection: [ConnectionID: String] = [:]
    /// The same, by object: the media path finds a packet's room without hashing its name.
    var roomObjectOfConnection: [ConnectionID: Room] = [:]
    /// Where room output goes; the worker sends it after each command and each receive batch.
    public let batch = DatagramBatch(capacity: 4096)
    private var nextConnection: UInt32
    let idStride: UInt32

    init(edge: WorkerEdge, socket: UDPSocket, index: Int) {
        self.edge = edge
        self.socket = socket
        // Connection ids are unique across workers: worker i hands out i+1, i+1+N, ... with N = 1024.
        nextConnection = UInt32(index + 1)
        idStride = 1024
    }

    public var now: MonoTime { MonoClock.now() }

    public func room(_ name: String) -> Room? { rooms[name] }

    public func addRoom(_ room: Room) { rooms[room.name] = room }

    /// Destroys a room: its participants are told they left, its connections are closed at the edge (DTLS
    /// close_notify goes out), and its last events are handed to `publish` before it is dropped.
    public func removeRoom(_ name: String) {
        guard let room = rooms[name] else { return }
        room.destroy(now: now)
        publishEvents?(room)
        retired.add(room.counters)
        rooms[name] = nil
        for (conn, r) in roomOfConnection where r == name { closeConnection(conn) }
    }

    /// Counters of the rooms this worker destroyed, so node totals never go back.
    var retired = RoomCounters()
    var dtlsHandshakes: UInt64 = 0
    var dtlsFailures: UInt64 = 0

    /// Set by the worker: moves a room's pending events to the event queue.
    var publishEvents: ((Room) -> Void)?

    /// A new connection for a participant of `room`: its id and the ICE credentials for the SDP answer.
    public func newConnection(room: String) -> (ConnectionID, LocalTransport) {
        let id = ConnectionID(nextConnection)
        nextConnection &+= idStride
        roomOfConnection[id] = room
        roomObjectOfConnection[id] = rooms[room]
        return (id, edge.prepare(id))
    }

    public func closeConnection(_ id: ConnectionID) {
        for o in edge.remove(id) { if case .send(let bytes, let to) = o { socket.send(bytes, to: to) } }
        roomOfConnection[id] = nil
        roomObjectOfConnection[id] = nil
    }
}

/// A room event with the wall-clock time the worker queued it (Unix milliseconds): the control plane
/// encodes and fans events out later, off the media thread.
public struct StampedEvent: Sendable {
    public var room: String
    public var event: RoomEvent
    public var unixMilliseconds: Int64

    public init(room: String, event: RoomEvent, unixMilliseconds: Int64) {
        self.room = room
        self.event = event
        self.unixMilliseconds = unixMilliseconds
    }
}

/// What a worker has done since it started, for metrics: socket, engine and edge totals.
public struct WorkerMetrics: Sendable {
    public var worker: Int
    public var rooms: Int
    public var participants: Int
    public var connections: Int
    public var room = RoomCounters()
    public var datagramsIn: UInt64 = 0
    public var bytesIn: UInt64 = 0
    public var datagramsOut: UInt64 = 0
    public var bytesOut: UInt64 = 0
    public var sendDrops: UInt64 = 0
    public var gsoSends: UInt64 = 0
    /// Media datagrams for a connection whose room is gone.
    public var ingressDrops: UInt64 = 0
    /// Datagrams longer than the receive buffer.
    public var oversizedDrops: UInt64 = 0
    /// Datagrams the edge dropped (STUN that fails its checks, unvalidated sources, unknown classes), by reason.
    public var edgeDrops: [(reason: String, count: UInt64)] = []
    public var dtlsHandshakes: UInt64 = 0
    public var dtlsFailures: UInt64 = 0
    /// Time the worker thread spent working rather than waiting for the socket: its load.
    public var busySeconds: Double = 0
    public var eventsLost: UInt64 = 0
}

/// One worker: a dedicated thread that owns a UDP socket, its edge and its rooms, and runs the media path
/// without locks. Commands from the control plane arrive as closures through a queue and wake the thread;
/// room events leave through a bounded queue that counts what a slow consumer lost.
public final class Worker: @unchecked Sendable {
    public let index: Int
    public let socket: UDPSocket
    private let context: WorkerContext
    private let wakeFD: Int32
    private let commands = Mutex<[@Sendable (WorkerContext) -> Void]>([])
    private let eventQueue: Mutex<(events: [StampedEvent], dropped: Int)> = Mutex(([], 0))
    private let eventsLostTotal = Atomic<UInt64>(0)
    /// Nanoseconds the loop spent outside its wait; read by `metrics()`.
    private let busyNanoseconds = Atomic<Int64>(0)
    public let eventCapacity: Int
    private let stopping = Atomic<Bool>(false)
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    /// Media datagrams for a connection whose room is gone.
    public private(set) var ingressDrops: UInt64 = 0
    /// Datagrams longer than the receive buffer (2048 bytes), dropped unread.
    public private(set) var oversizedDrops: UInt64 = 0

    public init(index: Int, socket: UDPSocket, certificate: DTLSCertificate, announced: [TransportAddress] = [],
                eventCapacity: Int = 10_000, dtlsInitialTimeout: MonoTime.Interval = .seconds(1)) throws {
        self.index = index
        self.socket = socket
        let edge = WorkerEdge(certificate: certificate, candidates: [socket.local] + announced)
        edge.dtlsInitialTimeout = dtlsInitialTimeout
        context = WorkerContext(edge: edge, socket: socket, index: index)
        let fd = sfu_wake_open()
        guard fd >= 0 else { throw UDPSocket.Failure(operation: "eventfd", errno: -fd) }
        wakeFD = fd
        self.eventCapacity = eventCapacity
        context.publishEvents = { [unowned self] room in self.publish(room) }
    }

    deinit { close(wakeFD) }

    public func start() {
        let t = Thread { [self] in
            Thread.current.name = "sfu-worker-\(index)"  // set from the thread itself so the OS sees it
            loopThread.withLock { $0 = pthread_self() }
            loop()
        }
        thread = t
        t.start()
    }

    /// Stops the loop and waits for it to end.
    public func stop() {
        guard thread != nil else { return }
        stopping.store(true, ordering: .releasing)
        sfu_wake_signal(wakeFD)
        finished.wait()
        thread = nil
    }

    /// Whether the caller runs on this worker's thread (where commands and the media path run).
    public var isWorkerThread: Bool {
        loopThread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    private let loopThread = Mutex<pthread_t?>(nil)

    /// Runs `body` on the worker thread and returns its result to the caller.
    public func perform<T: Sendable>(_ body: @escaping @Sendable (WorkerContext) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, Error>) in
            enqueue { [self] ctx in
                let result = Result { try body(ctx) }
                flush(ctx)  // what the command produced (datagrams, events) is out before the caller resumes
                c.resume(with: result)
            }
        }
    }

    /// The blocking form of `perform`, for callers outside Swift concurrency.
    public func performAndWait<T: Sendable>(_ body: @escaping @Sendable (WorkerContext) throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<T, Error>?>(nil)
        enqueue { [self] ctx in
            box.withLock { $0 = Result { try body(ctx) } }
            flush(ctx)
            done.signal()
        }
        done.wait()
        return try box.withLock { $0! }.get()
    }

    private func enqueue(_ command: @escaping @Sendable (WorkerContext) -> Void) {
        commands.withLock { $0.append(command) }
        sfu_wake_signal(wakeFD)
    }

    /// Events since the last call and how many were lost because nobody drained them in time.
    public func drainEvents() -> (events: [StampedEvent], dropped: Int) {
        eventQueue.withLock { q in
            defer { q = ([], 0) }
            return q
        }
    }

    /// A snapshot of the worker's totals, taken on the worker thread.
    public func metrics() async throws -> WorkerMetrics {
        let busy = Double(busyNanoseconds.load(ordering: .relaxed)) / 1e9
        let lost = eventsLostTotal.load(ordering: .relaxed)
        return try await perform { [self] ctx in
            var m = WorkerMetrics(worker: index, rooms: ctx.rooms.count,
                                  participants: ctx.rooms.values.reduce(0) { $0 + $1.participantCount },
                                  connections: ctx.roomOfConnection.count)
            m.room = ctx.retired
            for r in ctx.rooms.values { m.room.add(r.counters) }
            m.datagramsIn = socket.datagramsReceived
            m.bytesIn = socket.bytesReceived
            m.datagramsOut = socket.datagramsSent
            m.bytesOut = socket.bytesSent
            m.sendDrops = UInt64(socket.sendDrops)
            m.gsoSends = UInt64(socket.gsoSends)
            m.ingressDrops = ingressDrops
            m.oversizedDrops = oversizedDrops
            m.edgeDrops = ctx.edge.drops.map { ($0.reason, UInt64($0.count)) }
            m.dtlsHandshakes = ctx.dtlsHandshakes
            m.dtlsFailures = ctx.dtlsFailures
            m.busySeconds = busy
            m.eventsLost = lost
            return m
        }
    }

    // MARK: The loop (worker thread only)

    private func loop() {
        let rx = ReceiveBatch(capacity: 64)
        let ctx = context
        var loopStart = MonoClock.now()
        while !stopping.load(ordering: .acquiring) {
            runCommands(ctx)
            var now = MonoClock.now()
            for room in ctx.rooms.values where room.nextDeadline <= now { room.tick(now: now, into: ctx.batch) }
            if ctx.edge.nextDeadline <= now { handle(ctx.edge.tick(now: now), ctx, now: now) }
            flush(ctx)
            while let n = try? socket.receive(into: rx), n > 0 {
                now = MonoClock.now()
                for i in 0..<n { process(rx, i, ctx, now: now) }
                flush(ctx)
                if n < rx.capacity { break }
            }
            let deadline = ctx.rooms.values.reduce(ctx.edge.nextDeadline) { min($0, $1.nextDeadline) }
            let beforeWait = MonoClock.now()
            busyNanoseconds.add((beforeWait - loopStart).nanoseconds, ordering: .relaxed)
            let waitMs = max(0, min(100, (deadline - beforeWait).milliseconds))
            defer { loopStart = MonoClock.now() }
            if sfu_udp_wait_or_wake(socket.descriptor, wakeFD, Int32(waitMs)) & 2 != 0 { sfu_wake_drain(wakeFD) }
        }
        runCommands(ctx)
        for name in Array(ctx.rooms.keys) { ctx.removeRoom(name) }
        finished.signal()
    }

    private func runCommands(_ ctx: WorkerContext) {
        let pending = commands.withLock { q -> [@Sendable (WorkerContext) -> Void] in
            defer { q.removeAll() }
            return q
        }
        for c in pending { c(ctx) }
        if !pending.isEmpty { flush(ctx) }
    }

    private func process(_ rx: ReceiveBatch, _ i: Int, _ ctx: WorkerContext, now: MonoTime) {
        guard !rx.isTruncated(i) else { oversizedDrops += 1; return }
        let datagram = rx.datagram(i)
        let source = rx.source(i)
        if PacketClass(datagram) == .rtp {
            // Hot path: no allocation, no lock.
            guard let conn = ctx.edge.mediaConnection(datagram, from: source, now: now) else { return }  // counted by the edge
            guard let room = ctx.roomObjectOfConnection[conn] else { ingressDrops += 1; return }
            room.receive(rx.buffer(i), length: datagram.count, from: conn, now: now, into: ctx.batch)
            if ctx.batch.count > ctx.batch.capacity / 2 { flush(ctx) }
            return
        }
        handle(ctx.edge.receive(datagram, from: source, now: now), ctx, now: now)
    }

    private func handle(_ outputs: [WorkerEdge.Output], _ ctx: WorkerContext, now: MonoTime) {
        for o in outputs {
            switch o {
            case .send(let bytes, let to):
                socket.send(bytes, to: to)
            case .keys(let conn, let keys):
                ctx.dtlsHandshakes &+= 1
                if let name = ctx.roomOfConnection[conn], let room = ctx.rooms[name] {
                    try? room.setSRTP(connection: conn, inbound: keys.inbound, outbound: keys.outbound)
                }
            case .state(let conn, let state) where state == .disconnected || state == .failed:
                if let name = ctx.roomOfConnection[conn], let room = ctx.rooms[name] {
                    room.connectionLost(conn, reason: state == .failed ? "ICE consent expired" : "no ICE check for 10 s")
                }
            case .failed(let conn, let reason):
                ctx.dtlsFailures &+= 1
                if let name = ctx.roomOfConnection[conn], let room = ctx.rooms[name] { room.connectionLost(conn, reason: reason) }
            default:
                break
            }
        }
    }

    private func flush(_ ctx: WorkerContext) {
        if ctx.batch.count > 0 {
            socket.send(ctx.batch, gso: true) { ctx.edge.destination(of: $0) }
            ctx.batch.removeAll()
        }
        for room in ctx.rooms.values where room.hasPendingEvents { publish(room) }
    }

    private func publish(_ room: Room) {
        let events = room.drainEvents()
        guard !events.isEmpty else { return }
        let name = room.name
        let time = Int64(Date().timeIntervalSince1970 * 1000)
        let lost = eventQueue.withLock { q in
            let before = q.dropped
            for e in events {
                if q.events.count < eventCapacity {
                    q.events.append(StampedEvent(room: name, event: e, unixMilliseconds: time))
                } else {
                    q.dropped += 1
                }
            }
            return q.dropped - before
        }
        if lost > 0 { eventsLostTotal.add(UInt64(lost), ordering: .relaxed) }
    }
}
