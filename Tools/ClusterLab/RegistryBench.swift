import Foundation
import PostgresNIO
import SFUCluster
import Synchronization

/// What the registry costs a cluster: signaling servers placing participants as fast as they can while every
/// node heartbeats each second with the rooms it hosts, against one PostgreSQL. Reports placements per second
/// and their latency, heartbeat latency, and what the database wrote (transactions and rows per second, from
/// `pg_stat_database`) - the figures issue 25 asks for (registry writes/s, placement p99).
public enum RegistryBench {
    public struct Plan: Sendable {
        public var nodes = 20
        /// Signaling servers: one connection pool each, as separate processes would have.
        public var signalingServers = 4
        /// Placements in flight per signaling server.
        public var concurrency = 8
        public var rooms = 200
        public var participantsPerRoom = 10
        /// Heartbeats go on at least this long, also when the placements are done sooner.
        public var minimumSeconds = 5.0
        public init() {}
    }

    public struct Result: Sendable, CustomStringConvertible {
        public var placements = 0
        public var refused = 0
        public var seconds = 0.0
        public var placementMillis: [Double] = []
        public var heartbeatMillis: [Double] = []
        public var transactions: Int64 = 0
        public var rowsWritten: Int64 = 0
        /// Rooms that ended on more than one node (placements of one room never split it).
        public var splitRooms = 0
        /// How long the placements took (the rate's denominator); `seconds` is the whole run.
        public var placingSeconds = 0.0
        var databaseBefore: (transactions: Int64, rows: Int64) = (0, 0)

        static func percentile(_ xs: [Double], _ p: Double) -> Double {
            guard !xs.isEmpty else { return .nan }
            let sorted = xs.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
        }

        public var description: String {
            let f = { (x: Double) in String(format: "%.2f", x) }
            return """
                placements      \(placements) in \(f(placingSeconds)) s: \(Int(Double(placements) / max(placingSeconds, 1e-9))) per second \
                (\(refused) refused, \(splitRooms) rooms split)
                placement ms    p50 \(f(Self.percentile(placementMillis, 0.5))) p90 \(f(Self.percentile(placementMillis, 0.9))) \
                p99 \(f(Self.percentile(placementMillis, 0.99))) max \(f(placementMillis.max() ?? .nan))
                heartbeats      \(heartbeatMillis.count): p50 \(f(Self.percentile(heartbeatMillis, 0.5))) ms \
                p99 \(f(Self.percentile(heartbeatMillis, 0.99))) ms
                database        over \(f(seconds)) s: \(Int(Double(transactions) / max(seconds, 1e-9))) transactions/s, \
                \(Int(Double(rowsWritten) / max(seconds, 1e-9))) rows written/s
                """
        }
    }

    /// Runs `plan` against the (empty or already prepared) registry database at `url`.
    public static func run(url: String, plan: Plan) async throws -> Result {
        let timeout = Duration.seconds(30)
        let nodeIDs = (0..<plan.nodes).map { String(format: "node-%03d", $0) }
        let servers = try (0..<plan.signalingServers).map { _ in try PostgresRegistry(url: url, heartbeatTimeout: timeout) }
        let nodes = try nodeIDs.map { _ in try PostgresRegistry(url: url, heartbeatTimeout: timeout) }
        let shared = Shared()

        var result = try await withThrowingTaskGroup(of: Result.self) { pools in
            for r in servers + nodes { pools.addTask { await r.run(); return Result() } }
            defer { pools.cancelAll() }
            try await servers[0].prepare()
            for (i, id) in nodeIDs.enumerated() {
                try await nodes[i].register(NodeRecord(id: id, controlURL: "http://\(id):8080", capacity: 1_000_000))
            }
            let start = ContinuousClock.now
            var result = Result()
            result.databaseBefore = try await stats(servers[0])

            try await withThrowingTaskGroup(of: Void.self) { work in
                // Every node heartbeats each second with what it hosts, as `ClusterMembership` does.
                for (i, id) in nodeIDs.enumerated() {
                    work.addTask {
                        while !shared.done.load(ordering: .relaxed) {
                            let rooms = shared.hosted.withLock { $0[id] ?? [:] }
                            let load = NodeLoad(rooms: rooms.count, participants: rooms.values.reduce(0, +), roomParticipants: rooms)
                            let t = ContinuousClock.now
                            _ = try await nodes[i].heartbeat(node: id, load: load)
                            _ = try await nodes[i].reportFailures(by: id)
                            let ms = Self.millis(ContinuousClock.now - t)
                            shared.heartbeatMillis.withLock { $0.append(ms) }
                            try await Task.sleep(for: .seconds(1))
                        }
                    }
                }
                // The placements: every participant of every room, in a random order, spread over the servers.
                let all = (0..<plan.rooms).flatMap { r in Array(repeating: "room-\(r)", count: plan.participantsPerRoom) }.shuffled()
                let perServer = (0..<plan.signalingServers).map { s in stride(from: s, to: all.count, by: plan.signalingServers).map { all[$0] } }
                try await withThrowingTaskGroup(of: Void.self) { placing in
                    for (s, rooms) in perServer.enumerated() {
                        let cursor = Cursor()
                        for _ in 0..<plan.concurrency {
                            placing.addTask {
                                while true {
                                    let k = cursor.next.add(1, ordering: .relaxed).oldValue
                                    guard k < rooms.count else { return }
                                    let t = ContinuousClock.now
                                    do {
                                        let p = try await servers[s].place(room: rooms[k], limits: PlacementRule.Limits(participantsPerRoomPerNode: 1_000))
                                        let ms = Self.millis(ContinuousClock.now - t)
                                        shared.hosted.withLock { $0[p.node, default: [:]][p.room, default: 0] += 1 }
                                        shared.outcomes.withLock { $0.millis.append(ms); $0.nodesOf[p.room, default: []].insert(p.node) }
                                    } catch RegistryError.noCapacity {
                                        shared.outcomes.withLock { $0.refused += 1 }
                                    }
                                }
                            }
                        }
                    }
                    try await placing.waitForAll()
                }
                let placed = shared.outcomes.withLock { $0 }
                result.placements = placed.millis.count
                result.placementMillis = placed.millis
                result.refused = placed.refused
                result.splitRooms = placed.nodesOf.values.count { $0.count > 1 }
                result.placingSeconds = Self.millis(ContinuousClock.now - start) / 1000
                let elapsed = Self.millis(ContinuousClock.now - start) / 1000
                if elapsed < plan.minimumSeconds { try await Task.sleep(for: .milliseconds(Int((plan.minimumSeconds - elapsed) * 1000))) }
                result.seconds = Self.millis(ContinuousClock.now - start) / 1000
                shared.done.store(true, ordering: .relaxed)
                try await work.waitForAll()
            }
            result.heartbeatMillis = shared.heartbeatMillis.withLock { $0 }
            pools.cancelAll()
            return result
        }
        // A backend publishes its counts when idle at most once a second, and surely when it exits: the pools
        // are closed, then a new connection reads what the run wrote.
        let reader = try PostgresRegistry(url: url, heartbeatTimeout: timeout)
        let after = try await withThrowingTaskGroup(of: (Int64, Int64)?.self) { g in
            g.addTask { await reader.run(); return nil }
            defer { g.cancelAll() }
            try await Task.sleep(for: .milliseconds(1500))
            return try await stats(reader)
        }
        result.transactions = after.0 - result.databaseBefore.transactions
        result.rowsWritten = after.1 - result.databaseBefore.rows
        return result
    }


    /// What the run's tasks share.
    final class Shared: Sendable {
        let hosted = Mutex([String: [String: Int]]())  // node -> room -> participants, as placements sent them
        let heartbeatMillis = Mutex([Double]())
        let outcomes = Mutex<(millis: [Double], refused: Int, nodesOf: [String: Set<String>])>(([], 0, [:]))
        let done = Atomic<Bool>(false)
    }

    final class Cursor: Sendable {
        let next = Atomic<Int>(0)
    }

    static func millis(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }

    /// Committed transactions and rows inserted, updated or deleted in the registry's database so far.
    static func stats(_ r: PostgresRegistry) async throws -> (transactions: Int64, rows: Int64) {
        var out: (Int64, Int64) = (0, 0)
        for try await (xacts, rows) in try await r.client.query("""
            SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database WHERE datname = current_database()
            """).decode((Int64, Int64).self) { out = (xacts, rows) }
        return out
    }
}
