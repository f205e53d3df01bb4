import Foundation
import Logging
import SFUCluster
import ServiceLifecycle
import Synchronization

/// The node's membership of a cluster (`cluster.registry` set): it prepares the registry's schema, registers
/// the node, heartbeats its load each second, reports nodes that died (`node_lost` events), saves the
/// moderation of the rooms it is home of and takes it over with a room (`HomeModeration`), and knows whether
/// the registry still answers. A node whose
/// last successful heartbeat is older than the heartbeat timeout is fenced: by then the registry may have
/// declared it dead and moved its rooms' homes, so it places nobody and says `registry_unreachable` in its
/// health until a heartbeat gets through again.
///
/// A service of the process's group: `run` drives the registry's connection pool and the heartbeat loop
/// until shutdown.
public final class ClusterMembership: Service, Sendable {
    public let registry: PostgresRegistry
    public let record: NodeRecord
    let node: Node
    let timeout: Duration
    let logger: Logger
    private let state = Mutex(Standing())
    let homeModeration: HomeModeration
    /// The relays of rooms this node shares with other nodes, and their control channels.
    let relays: RelayMesh

    struct Standing {
        var lastHeartbeat: ContinuousClock.Instant?
        var lastError: String?
        var previous: LoadRates.Reading?
        /// Each worker's rooms as it last answered: a worker that misses a heartbeat's time still counts its rooms.
        var roomsByWorker: [Int: [String: Int]] = [:]
        /// Since when every heartbeat got through (nil while they fail): failures are reported only after a
        /// whole timeout of it (`mayReportFailures`).
        var reachableSince: ContinuousClock.Instant?
        /// Set by `leave`: no heartbeat starts from then (one would make the node alive again).
        var leaving = false
        /// A heartbeat is in flight (`leave` waits for it to end).
        var beating = false
    }

    /// How often this node asks the registry for nodes that died, apart from its heartbeat: a failure is
    /// reported at most this long after the dead node's heartbeat aged past the timeout.
    static let failureCheckInterval: Duration = .milliseconds(500)

    public init(node: Node, logger: Logger) throws {
        let c = node.configuration
        self.node = node
        self.logger = logger
        timeout = .seconds(c.clusterHeartbeatTimeoutSeconds)
        registry = try PostgresRegistry(url: c.clusterRegistry, heartbeatTimeout: timeout, logger: logger)
        let id = c.clusterNodeID.isEmpty ? ProcessInfo.processInfo.hostName : c.clusterNodeID
        let url = try c.registeredControlURL()
        let media = c.mediaAnnounced.first ?? "\(c.mediaListen)"
        let relayIP = try c.relayBindAddress()
        record = NodeRecord(id: id, controlURL: url, mediaAddress: media, relayAddress: relayIP.host, region: c.clusterRegion,
                            capacity: c.clusterCapacity)
        homeModeration = HomeModeration(registry: registry, nodeID: id, node: node, logger: logger)
        let relays = RelayMesh(nodeID: id, node: node, registry: registry, bind: relayIP, apiKey: c.apiKey, logger: logger)
        self.relays = relays
        node.observeRelays { rooms in Task { await relays.nudge(rooms) } }
        node.decideElsewhere(relays)
    }

    /// Whether the registry answered a heartbeat within the timeout.
    public var isFenced: Bool {
        state.withLock { s in s.lastHeartbeat.map { ContinuousClock.now - $0 > timeout } ?? true }
    }

    public var lastError: String? { state.withLock { $0.lastError } }

    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.runUntilCancelled() }
    }

    /// The connection pool and the heartbeat loop, until the task is cancelled (tests run it so).
    public func runUntilCancelled() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.registry.run() }
            group.addTask { await self.beat() }
            group.addTask { await self.watchFailures() }
            group.addTask { await self.homeModeration.run(fenced: { self.isFenced }) }
            group.addTask { await self.relays.run(fenced: { self.isFenced }) }
        }
    }

    /// Registers (preparing the schema first), then heartbeats each second; registers again when the
    /// registry forgot the node, and keeps trying while the registry does not answer. Ends when the node leaves.
    func beat() async {
        var registered = false
        while !Task.isCancelled {
            let starts = state.withLock { s -> Bool in
                guard !s.leaving else { return false }
                s.beating = true
                return true
            }
            guard starts else { return }
            let again = await beatOnce(registered: &registered)
            state.withLock { $0.beating = false }
            if !again { try? await Task.sleep(for: .seconds(1)) }
        }
    }

    /// One registration or heartbeat; true when the next should follow at once (the registry forgot the node).
    private func beatOnce(registered: inout Bool) async -> Bool {
        do {
            if !registered {
                try await registry.prepare()
                try await registry.register(record)
                if node.isDraining { try await registry.setState(node: record.id, .draining) }
                registered = true
                logger.info("registered in the cluster", metadata: ["node": "\(record.id)", "control_url": "\(record.controlURL)"])
                succeeded()
            } else if try await registry.heartbeat(node: record.id, load: await load()) {
                succeeded()
            } else {
                registered = false
                logger.warning("the registry no longer knows this node: registering again", metadata: ["node": "\(record.id)"])
                return true
            }
        } catch is CancellationError {
            return false
        } catch {
            // Logged once per outage (the first failure after a success, or at start), not every second.
            let first = state.withLock { s in
                defer { s.lastError = "\(error)"; s.reachableSince = nil }
                return s.lastError == nil
            }
            if first { logger.error("registry unreachable: this node places nobody until it answers", metadata: ["error": "\(error)"]) }
        }
        return false
    }

    /// Whether this node may report other nodes dead now: it is not leaving, and its own heartbeats got through
    /// for a whole timeout. After an outage of the registry every node's last heartbeat is old; the first node
    /// back would otherwise report every other one dead (a `node_lost` for every room of the cluster) before
    /// they had the chance to heartbeat again.
    var mayReportFailures: Bool {
        state.withLock { s in
            guard !s.leaving, let since = s.reachableSince else { return false }
            return ContinuousClock.now - since >= timeout
        }
    }

    /// Asks the registry for dead nodes every `failureCheckInterval` (apart from the heartbeat, so a failure is
    /// reported within that of the dead node's timeout, not within the next heartbeat of a survivor).
    func watchFailures() async {
        while !Task.isCancelled {
            if mayReportFailures {
                // Its failing says nothing about this node's standing (no fencing, no "unreachable" log).
                do { try await reportFailures() } catch is CancellationError { return } catch {
                    logger.warning("could not ask the registry for failed nodes", metadata: ["error": "\(error)"])
                }
            }
            try? await Task.sleep(for: Self.failureCheckInterval)
        }
    }

    /// Nodes that died since: each reported by one live node of the cluster, this one when it asked first. Each
    /// room the dead node hosted becomes a `node_lost` event for the signaling server, whose clients there
    /// rejoin through a new placement (a live node; a new home when the dead one was it).
    func reportFailures() async throws {
        for failure in try await registry.reportFailures(by: record.id) {
            logger.error("node lost: no heartbeat within the timeout", metadata: [
                "node": "\(failure.node)", "rooms": "\(failure.rooms.count)", "participants": "\(failure.rooms.values.reduce(0, +))",
            ])
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let homeOf = Set(failure.homeOf)
            for room in Set(failure.rooms.keys).union(homeOf).sorted() {
                node.events.publish(.nodeLost(node: failure.node, participants: failure.rooms[room] ?? 0, home: homeOf.contains(room),
                                              reason: .heartbeatTimeout),
                                    room: room, now: now)
            }
        }
    }

    private func succeeded() {
        let recovered = state.withLock { s in
            let was = s.lastError != nil
            s.lastHeartbeat = .now
            s.lastError = nil
            if s.reachableSince == nil { s.reachableSince = .now }
            return was
        }
        if recovered { logger.notice("registry reachable again") }
    }

    /// The goodbye of a node that stops (SIGTERM), before its rooms end: no heartbeat from now; the registry
    /// takes the node out of the cluster at once (`Registry.leave`: no placement comes here, peers stop relaying,
    /// nobody reports it dead later); each room it hosts gets a `node_lost` (`node_stopped`) on this node's own
    /// event stream, so a signaling server has its clients here rejoin elsewhere; every relay is closed with a
    /// `bye` and every channel to a peer node with a normal close. The registry is given `within` to answer (a
    /// node must stop even when its registry is gone): unanswered, the peers find the node dead by its heartbeat.
    public func leave(within: Duration = .seconds(1)) async {
        state.withLock { $0.leaving = true }
        let started = ContinuousClock.now
        while state.withLock({ $0.beating }), ContinuousClock.now - started < within { try? await Task.sleep(for: .milliseconds(10)) }
        let local = await node.workerLoads(within: Self.workerAnswerLimit).values
            .reduce(into: [String: Int]()) { all, w in all.merge(w.rooms) { a, _ in a } }
        var homeOf: Set<String> = []
        do {
            let left = try await Self.deadline(within) { [registry, record] in try await registry.leave(node: record.id) }
            homeOf = Set(left.homeOf)
            logger.notice("left the cluster", metadata: ["node": "\(record.id)", "rooms": "\(local.count)", "home_of": "\(homeOf.count)"])
        } catch {
            logger.error("could not leave the cluster: the other nodes find this node dead by its heartbeat", metadata: ["error": "\(error)"])
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for room in local.keys.sorted() {
            node.events.publish(.nodeLost(node: record.id, participants: local[room] ?? 0, home: homeOf.contains(room), reason: .nodeStopped),
                                room: room, now: now)
        }
        await relays.shutdown(within: within)
    }

    /// `body`'s result, or `CancellationError` once `limit` passed (the body is cancelled).
    static func deadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask { try? await Task.sleep(for: limit); return nil }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw CancellationError() }
            return value
        }
    }

    /// What the heartbeat reports: rooms and participants per room (asked of each worker on its thread, the last
    /// answer of one that did not answer in time), datagram rates and cores used since the last heartbeat
    /// (`LoadRates`).
    func load() async -> NodeLoad {
        let loads = await node.workerLoads(within: Self.workerAnswerLimit)
        let reading = LoadRates.Reading(at: ProcessInfo.processInfo.systemUptime, workers: loads.mapValues(\.datagrams),
                                        cpuSeconds: Self.processCPUSeconds())
        let (rates, rooms) = state.withLock { s in
            defer { s.previous = reading }
            for (i, l) in loads { s.roomsByWorker[i] = l.rooms }
            let rooms = s.roomsByWorker.values.reduce(into: [String: Int]()) { all, r in all.merge(r) { a, _ in a } }
            return (s.previous.map { LoadRates(from: $0, to: reading) } ?? LoadRates(), rooms)
        }
        var l = NodeLoad(rooms: rooms.count, participants: rooms.values.reduce(0, +), roomParticipants: rooms)
        l.packetsInPerSecond = rates.packetsInPerSecond
        l.packetsOutPerSecond = rates.packetsOutPerSecond
        l.cpu = rates.cpu
        return l
    }

    /// How long the heartbeat waits for a worker's answer (`Node.workerLoads`).
    static let workerAnswerLimit: Duration = .milliseconds(250)

    static func processCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
