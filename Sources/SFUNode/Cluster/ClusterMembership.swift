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
        var previous: (at: ContinuousClock.Instant, datagramsIn: UInt64, datagramsOut: UInt64, cpu: Double)?
    }

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
            group.addTask { await self.homeModeration.run(fenced: { self.isFenced }) }
            group.addTask { await self.relays.run(fenced: { self.isFenced }) }
        }
    }

    /// Registers (preparing the schema first), then heartbeats each second; registers again when the
    /// registry forgot the node, and keeps trying while the registry does not answer.
    func beat() async {
        var registered = false
        while !Task.isCancelled {
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
                    // Apart from the heartbeat: its failing says nothing about this node's standing (no fencing,
                    // no "unreachable" log); the next heartbeat asks again.
                    do { try await reportFailures() } catch is CancellationError { return } catch {
                        logger.warning("could not ask the registry for failed nodes", metadata: ["error": "\(error)"])
                    }

                } else {
                    registered = false
                    logger.warning("the registry no longer knows this node: registering again", metadata: ["node": "\(record.id)"])
                    continue
                }
            } catch is CancellationError {
                return
            } catch {
                // Logged once per outage (the first failure after a success, or at start), not every second.
                let first = state.withLock { s in
                    defer { s.lastError = "\(error)" }
                    return s.lastError == nil
                }
                if first { logger.error("registry unreachable: this node places nobody until it answers", metadata: ["error": "\(error)"]) }
            }
            try? await Task.sleep(for: .seconds(1))
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
                node.events.publish(.nodeLost(node: failure.node, participants: failure.rooms[room] ?? 0, home: homeOf.contains(room)),
                                    room: room, now: now)
            }
        }
    }

    private func succeeded() {
        let recovered = state.withLock { s in
            let was = s.lastError != nil
            s.lastHeartbeat = .now
            s.lastError = nil
            return was
        }
        if recovered { logger.notice("registry reachable again") }
    }

    /// What the heartbeat reports: rooms and participants per room (asked of each worker on its thread),
    /// datagram rates and cores used since the last heartbeat.
    func load() async -> NodeLoad {
        let snapshot = await node.loadSnapshot()
        let now = ContinuousClock.now
        let cpu = Self.processCPUSeconds()
        var l = NodeLoad(rooms: snapshot.rooms.count, participants: snapshot.rooms.values.reduce(0, +), roomParticipants: snapshot.rooms)
        state.withLock { s in
            if let p = s.previous {
                let seconds = max(1e-3, Double((now - p.at).components.attoseconds) / 1e18 + Double((now - p.at).components.seconds))
                l.packetsInPerSecond = Int(Double(snapshot.datagramsIn &- p.datagramsIn) / seconds)
                l.packetsOutPerSecond = Int(Double(snapshot.datagramsOut &- p.datagramsOut) / seconds)
                l.cpu = (cpu - p.cpu) / seconds
            }
            s.previous = (now, snapshot.datagramsIn, snapshot.datagramsOut, cpu)
        }
        return l
    }

    static func processCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
