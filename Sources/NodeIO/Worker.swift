import CNodeIO
import Foundation
import SFU
import Synchronization
import WebRTCEdge

/// One worker: a dedicated thread that owns a UDP socket and a `WorkerCore` (its edge, rooms and connection
/// table), and runs the media path without locks. Commands from the control plane arrive as closures
/// through a queue and wake the thread; room events leave through a bounded queue that counts what a slow
/// consumer lost. Each pass of the loop reads at most `datagramsPerPass` datagrams before it runs commands
/// and timers again, so a flood on the socket delays them by one pass, never indefinitely.
public final class Worker: @unchecked Sendable {
    public let index: Int
    /// The worker's UDP sockets: one, or one per address family on a dual-stack node (`socket` is the first).
    /// Each sends what goes to its family; the first also sends to relays and live streams.
    public let sockets: [UDPSocket]
    public var socket: UDPSocket { sockets[0] }
    /// The ICE-TCP ports beside them (RFC 6544), one per family, when the node offers TCP candidates.
    public let tcpPorts: [TCPPort]
    public var tcp: TCPPort? { tcpPorts.first }
    let core: WorkerCore
    var nextTCPTick = MonoTime.zero
    let wakeFD: Int32
    private let commands: CommandQueue
    private let outbox: EventOutbox
    let links = PeerLinks()
    /// The relay ends' sockets, by the end's connection id (worker thread only; `Worker+Relays`).
    var relaySockets: [(id: ConnectionID, socket: UDPSocket)] = []
    var relayDatagramsReceived: UInt64 = 0
    /// Relay sockets the last wait found readable, where the next read starts, and the wait's descriptors.
    var relayReady: Set<ConnectionID> = []
    var relayRotation = 0
    var relayPoll: [pollfd] = []
    /// Whether the last wait found the TCP port's epoll ready.
    var tcpReady = false
    /// Nanoseconds the loop spent outside its wait; read by `metrics()`.
    private let busyNanoseconds = Atomic<Int64>(0)
    public var eventCapacity: Int { outbox.capacity }
    /// How long a command may wait for the worker before its caller gets `WorkerTimeout`.
    public let commandTimeout: MonoTime.Interval
    /// Datagrams read per pass of the loop before commands and timers run again.
    public let datagramsPerPass: Int
    private let stopping = Atomic<Bool>(false)
    /// Set while the thread waits in poll: a peer that handed it a batch then writes the wake descriptor.
    private let asleep = Atomic<Bool>(false)
    /// Between `start` and the end of `stop`; read from any thread (the heartbeat's load, the metrics).
    private let running = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Datagrams longer than the receive buffer (2048 bytes), dropped unread.
    public internal(set) var oversizedDrops: UInt64 = 0
    /// Passes that ended on their datagram budget with more waiting (the socket was flooded or busy).
    public private(set) var saturatedPasses: UInt64 = 0

    /// `also`: sockets (and their TCP ports) of the other address family, for a dual-stack worker.
    public init(index: Int, socket: UDPSocket, tcp: TCPPort? = nil, also: [(udp: UDPSocket, tcp: TCPPort?)] = [],
                certificate: DTLSCertificate, announced: [TransportAddress] = [],
                eventCapacity: Int = 10_000, dtlsInitialTimeout: MonoTime.Interval = .seconds(1),
                limits: WorkerLimits = .init(), commandTimeout: MonoTime.Interval = .seconds(5),
                datagramsPerPass: Int = 1024, consentTimeout: MonoTime.Interval = .seconds(30)) throws {
        self.index = index
        sockets = [socket] + also.map(\.udp)
        tcpPorts = ([tcp] + also.map(\.tcp)).compactMap { $0 }
        // A dual-stack worker's sockets each send their own family's datagrams and leave the other's.
        if sockets.count > 1 {
            for s in sockets { s.leavesOtherFamily = true }
            for s in sockets.dropFirst() { s.countsUnroutable = false }
        }
        // UDP candidates first (they outrank TCP's), then the TCP ports': their own addresses and, for each
        // announced address, the same IP with the TCP port of its family (the UDP port's number when they match).
        var candidates = sockets.map(\.local) + announced
        for port in tcpPorts {
            candidates.append(port.local)
            let udp = sockets.first { $0.local.isIPv6 == port.local.isIPv6 }
            for a in announced where a.isIPv6 == port.local.isIPv6 {
                candidates.append(TransportAddress(ip: a.ip, port: port.local.port == udp?.local.port ? a.port : port.local.port, tcp: true))
            }
        }
        let edge = WorkerEdge(certificate: certificate, candidates: candidates)
        edge.dtlsInitialTimeout = dtlsInitialTimeout
        edge.consentTimeout = consentTimeout
        core = WorkerCore(edge: edge, index: index, limits: limits)
        // Kernel receive stamps: publishers' estimators are told when their packets arrived, not when a busy
        // worker got to them. Without them (an old kernel) the worker's own time is used.
        for s in sockets { try? s.enableReceiveTimestamps() }
        let fd = sfu_wake_open()
        guard fd >= 0 else { throw UDPSocket.Failure(operation: "eventfd", errno: -fd) }
        wakeFD = fd
        commands = CommandQueue(wakeFD: fd)
        outbox = EventOutbox(capacity: eventCapacity)
        self.commandTimeout = commandTimeout
        self.datagramsPerPass = max(64, datagramsPerPass)
    }

    deinit { close(wakeFD) }

    /// Joins the node's workers so rooms can spread across them (`WorkerCore`): channels both ways between
    /// each pair, and each worker's candidates for the answers. Call once on every worker, before `start`.
    public static func connect(_ workers: [Worker]) {
        guard workers.count > 1 else { return }
        let candidates = workers.map { $0.core.edge.candidates }
        for w in workers { w.core.peerCandidates = candidates }
        PeerLinks.connect(workers)
    }

    /// Wakes the thread if it waits (a peer handed it a batch).
    func nudge() {
        if asleep.load(ordering: .sequentiallyConsistent) { sfu_wake_signal(wakeFD) }
    }

    /// A message from another worker's core, run on this worker's thread.
    private func deliver(_ message: PeerMessage, from worker: Int) {
        enqueue { core in core.receive(peer: message, from: worker, now: MonoClock.now()) }
    }

    /// Sets what runs after the worker queued events (see `drainEvents`); set it before `start`.
    public func observeEvents(_ observer: @escaping @Sendable () -> Void) { outbox.observe(observer) }

    public func start() {
        let t = Thread { [self] in
            // Named for the OS (top -H, perf, the bench's per-thread CPU) directly: Foundation's Thread.name set
            // here was lost in 2 of 3 two-worker nodes, leaving the name inherited from the starting thread.
            _ = sfu_name_this_thread("sfu-worker-\(index)")
            loopThread.withLock { $0 = pthread_self() }
            loop()
        }
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        t.start()
    }

    /// Stops the loop and waits for it to end.
    public func stop() {
        guard running.load(ordering: .acquiring), !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sfu_wake_signal(wakeFD)
        finished.wait()
        running.store(false, ordering: .releasing)
    }

    /// Whether the thread runs (between `start` and `stop`).
    public var isRunning: Bool { running.load(ordering: .acquiring) }

    /// Whether the caller runs on this worker's thread (where commands and the media path run).
    public var isWorkerThread: Bool {
        loopThread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    private let loopThread = Mutex<pthread_t?>(nil)

    /// Runs `body` on the worker thread with the time it starts, and returns its result to the caller. When
    /// the worker has not started it within `commandTimeout` it never runs and the caller gets
    /// `WorkerTimeout`: a call answers within a bounded time whatever the worker is doing.
    public func perform<T: Sendable>(_ body: @escaping @Sendable (WorkerCore, MonoTime) throws -> T) async throws -> T {
        let ticket = CommandTicket()
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, Error>) in
            enqueue { [self] core in
                guard ticket.claim() else { return }  // the caller has given up: nothing is done
                let result = Result { try body(core, MonoClock.now()) }
                flush(core)  // what the command produced (datagrams, events) is out before the caller resumes
                c.resume(with: result)
            }
            let timeout = WorkerTimeout(worker: index, milliseconds: commandTimeout.milliseconds)
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(commandTimeout.nanoseconds))) {
                if ticket.claim() { c.resume(throwing: timeout) }
            }
        }
    }

    /// The blocking form of `perform`, for callers outside Swift concurrency (no time limit).
    public func performAndWait<T: Sendable>(_ body: @escaping @Sendable (WorkerCore, MonoTime) throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<T, Error>?>(nil)
        enqueue { [self] core in
            box.withLock { $0 = Result { try body(core, MonoClock.now()) } }
            flush(core)
            done.signal()
        }
        done.wait()
        return try box.withLock { $0! }.get()
    }

    private func enqueue(_ command: @escaping @Sendable (WorkerCore) -> Void) { commands.enqueue(command) }

    /// Events since the last call and how many were lost because nobody drained them in time.
    public func drainEvents() -> (events: [StampedEvent], dropped: Int) { outbox.drain() }

    /// A snapshot of the worker's totals, taken on the worker thread.
    public func metrics() async throws -> WorkerMetrics {
        let busy = Double(busyNanoseconds.load(ordering: .relaxed)) / 1e9
        let lost = outbox.lostTotal
        return try await perform { [self] core, _ in
            var m = WorkerMetrics(worker: index, rooms: core.rooms.count,
                                  participants: core.rooms.values.reduce(0) { $0 + $1.participantCount },
                                  connections: core.connectionCount)
            m.room = core.retired
            for r in core.rooms.values { m.room.add(r.counters) }
            for s in sockets {
                m.datagramsIn &+= s.datagramsReceived
                m.bytesIn &+= s.bytesReceived
                m.datagramsOut &+= s.datagramsSent
                m.bytesOut &+= s.bytesSent
                m.sendDrops &+= UInt64(s.sendDrops)
                m.sendErrors &+= UInt64(s.sendErrors)
                m.gsoSends &+= UInt64(s.gsoSends)
                m.gsoFallbacks &+= UInt64(s.gsoFallbacks)
            }
            m.ingressDrops = core.ingressDrops
            m.handoffDrops = core.handoffDrops
            m.hostedDiscards = core.hostedDiscards
            m.oversizedDrops = oversizedDrops
            m.edgeDrops = core.edge.drops.map { ($0.reason, UInt64($0.count)) }
            m.transports = core.transportCounters
            m.dtlsHandshakes = core.transportCounters.dtlsHandshakes
            m.dtlsFailures = core.transportCounters.dtlsFailures
            m.pendingHandshakes = core.pendingHandshakes
            m.saturatedPasses = saturatedPasses
            m.busySeconds = busy
            m.eventsLost = lost
            m.relayEnds = relaySockets.count
            m.relayDatagramsIn = relayDatagramsReceived
            m.relayDrops = core.relays.drops
            if !tcpPorts.isEmpty {
                var t = TCPCounters()
                for p in tcpPorts { t.add(p.snapshot) }
                m.tcp = t
            }
            for r in core.rooms.values { r.sessions.pathCounts(into: &m.paths) }
            return m
        }
    }

    // MARK: The loop (worker thread only)

    private func loop() {
        let rx = ReceiveBatch(capacity: 64)
        let core = core
        var loopStart = MonoClock.now()
        // The core's next deadline as the last pass left it. Only a command or a datagram changes it (the core
        // is sans-IO), and between the end of a pass and the start of the next only commands reach it: so it
        // is asked once per pass, before the wait, and again only after commands ran.
        var deadline = MonoTime.zero
        while !stopping.load(ordering: .acquiring) {
            if runCommands(core) { deadline = core.nextDeadline }
            if takeHandoffs(core) { deadline = core.nextDeadline }
            var now = MonoClock.now()
            if deadline <= now {
                core.tick(now: now)
                flush(core)
            }
            var taken = 0
            var moreWaiting = false
            // Each socket reads up to its share of the pass's budget; one that ended on its share with a full
            // last read has more waiting.
            for s in sockets {
                var fromThis = 0, full = false
                while fromThis < datagramsPerPass / sockets.count, let n = try? s.receive(into: rx), n > 0 {
                    now = MonoClock.now()
                    for i in 0..<n { process(rx, i, core, now: now) }
                    flush(core)
                    fromThis += n
                    full = n == rx.capacity
                    if !full { break }
                }
                taken += fromThis
                if full { moreWaiting = true }
            }
            if !relaySockets.isEmpty, receiveRelays(core, rx, budget: datagramsPerPass) >= datagramsPerPass { moreWaiting = true }
            if tcpReady, receiveTCP(core, rx, budget: datagramsPerPass) >= datagramsPerPass { moreWaiting = true }
            if tcp != nil { tickTCP(core) }
            if moreWaiting { saturatedPasses &+= 1 }
            let beforeWait = MonoClock.now()
            busyNanoseconds.add((beforeWait - loopStart).nanoseconds, ordering: .relaxed)
            // A pass that ended on its budget goes round at once: commands and timers, then more datagrams.
            // Otherwise the thread sleeps until a datagram, a command (the wake descriptor) or its next
            // deadline, rounded up so it never spins on a deadline under a millisecond away; an idle worker
            // (no deadline) sleeps until something arrives.
            deadline = core.nextDeadline
            if tcpPorts.contains(where: { $0.connectionCount > 0 }) { deadline = min(deadline, nextTCPTick) }
            // Say it sleeps, then look at the channels once more: a peer either sees the flag or its batch is seen.
            asleep.store(true, ordering: .sequentiallyConsistent)
            // A handover that found no empty batch goes round again once the peer returned one (it nudges).
            let handedOver = links.hasWork
            let waitMs = moreWaiting || handedOver ? 0 : Self.waitMilliseconds(until: deadline, now: beforeWait)
            defer { loopStart = MonoClock.now() }
            let ready = relaySockets.isEmpty && tcpPorts.isEmpty && sockets.count == 1 ? sfu_udp_wait_or_wake(socket.descriptor, wakeFD, Int32(waitMs)) : waitWithRelays(Int32(waitMs))
            tcpReady = ready & 4 != 0
            if ready & 2 != 0 { sfu_wake_drain(wakeFD) }
            asleep.store(false, ordering: .relaxed)
        }
        _ = runCommands(core)
        core.destroyAllRooms(now: MonoClock.now())
        flush(core)
        for p in tcpPorts { p.closeAll() }
        finished.signal()
    }

    /// poll's timeout for a deadline: -1 (no timeout) for `.never`, else the milliseconds to it, rounded up.
    public static func waitMilliseconds(until deadline: MonoTime, now: MonoTime) -> Int32 {
        guard deadline != .never else { return -1 }
        let ns = max(0, (deadline - now).nanoseconds)
        return Int32(clamping: (ns + 999_999) / 1_000_000)
    }

    /// Runs the queued commands; returns whether there were any.
    private func runCommands(_ core: WorkerCore) -> Bool {
        guard commands.run(core) else { return false }
        if !relaySockets.isEmpty { closeRelaySockets(core) }
        flush(core)
        return true
    }

    private func process(_ rx: ReceiveBatch, _ i: Int, _ core: WorkerCore, now: MonoTime) {
        guard !rx.isTruncated(i) else { oversizedDrops += 1; return }
        core.receive(rx.buffer(i), length: rx.length(i), from: rx.source(i), now: now, arrival: rx.arrival(i))
        if needsFlush(core) { flush(core) }
    }

    /// Runs what other workers handed over: protected datagrams to send from this socket, and datagrams
    /// their clients sent for this worker's rooms. Returns whether there were any.
    private func takeHandoffs(_ core: WorkerCore) -> Bool {
        var any = false
        for ch in links.incoming {
            // At most a pool's worth per pass: a busy home refills the ring as fast as it is emptied here, and
            // this worker's own socket, commands and timers must get their turn.
            var taken = 0
            while taken < HandoffChannel.poolSize + 1, let b = ch.full.pop() {
                taken += 1
                any = true
                switch ch.kind {
                case .send:
                    core.protectHandedOver(b)
                    send(b, core)
                case .receive: core.receiveRelayed(b, from: ch.from, now: MonoClock.now())
                }
                b.removeAll()
                _ = ch.free.push(b)  // the ring holds the whole pool
                if needsFlush(core) { flush(core) }
            }
            if taken > 0 { links.peers[ch.from].nudge() }  // it may be waiting with a batch it could not hand over
        }
        if any { flush(core) }
        return any
    }

    /// Whether to send or hand over now, before the rooms write more: the socket batch or a handoff is over
    /// half full. A handoff whose worker held every batch at the last try waits for the socket batch's turn,
    /// so a slow peer does not turn every datagram into a syscall here.
    func needsFlush(_ core: WorkerCore) -> Bool {
        core.batch.count > core.batch.capacity / 2 || (!links.blocked && core.handoffsNeedFlush)
    }

    /// Sends a batch: datagrams from the UDP socket, frames to TCP connections (one write each per batch).
    /// On a dual-stack worker each socket sends its family's share of the batch (and its TCP frames).
    private func send(_ batch: DatagramBatch, _ core: WorkerCore) {
        if tcpPorts.isEmpty, sockets.count == 1 {
            socket.send(batch, gso: true) { core.destination(of: $0) }
            return
        }
        let now = MonoClock.now()
        for s in sockets {
            s.send(batch, gso: true, to: { core.destination(of: $0) }, stream: { [self] in tcpPort(for: $1)?.send($0, to: $1, now: now) })
        }
        for p in tcpPorts { p.writePending(now: now) }
    }

    /// The TCP port of an address's family.
    func tcpPort(for address: TransportAddress) -> TCPPort? {
        tcpPorts.count == 1 ? tcpPorts[0] : tcpPorts.first { $0.local.isIPv6 == address.isIPv6 }
    }

    /// The UDP socket of an address's family (the first when there is none of it).
    func udpSocket(for address: TransportAddress) -> UDPSocket {
        sockets.count == 1 ? sockets[0] : sockets.first { $0.local.isIPv6 == address.isIPv6 } ?? sockets[0]
    }

    /// Carries out what the core has, in its order (`WorkerCore.poll`), until it has nothing more.
    func flush(_ core: WorkerCore) {
        links.blocked = false
        while true {
            switch core.poll() {
            case .media(let batch):
                send(batch, core)
                batch.sent(at: MonoClock.now())  // transport-wide send times: when the kernel took them
                batch.removeAll()
            case .handoff(let h): links.handOver(h, now: MonoClock.now())
            case .peer(let w, let message): links.peers[w].deliver(message, from: index)
            case .control(let bytes, let to):
                if to.isTCP {
                    let port = tcpPort(for: to)
                    bytes.withUnsafeBytes { _ = port?.send($0, to: to, now: MonoClock.now()) }
                    port?.writePending(now: MonoClock.now())
                } else {
                    udpSocket(for: to).send(bytes, to: to)
                }
            case .events(let room, let events): outbox.publish(room: room, events)
            case .timeout: return
            }
        }
    }
}
