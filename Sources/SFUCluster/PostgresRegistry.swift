import Foundation
import Logging
import PostgresNIO

/// The registry in PostgreSQL, through postgres-nio's pooled client. Every decision that more than one
/// process could race on runs in one transaction that first locks the room's row (`SELECT ... FOR UPDATE`),
/// so placements of one room are serialised by the database and a room is never split by two signaling
/// servers placing it at once; placements of different rooms run in parallel.
///
/// Run `run()` (the pool) in a task for as long as the registry is used; the node's service group does.
public final class PostgresRegistry: Registry {
    public let client: PostgresClient
    /// A node is alive while its last heartbeat is younger than this, on the database's clock.
    public let heartbeatTimeout: Duration
    let logger: Logger

    public init(url: String, heartbeatTimeout: Duration, logger: Logger = Logger(label: "sfu.registry")) throws {
        client = PostgresClient(configuration: try Self.configuration(url), backgroundLogger: logger)
        self.heartbeatTimeout = heartbeatTimeout
        self.logger = logger
    }

    /// Runs the connection pool until the task is cancelled.
    public func run() async { await client.run() }

    /// How long a placement counts on its node before the node's heartbeats show it (seconds): a participant
    /// placed joins within moments (its signaling server asked because it is joining); one that did not come
    /// within this is taken not to come.
    static let pendingGrace: Double = 15

    var timeoutSeconds: Double {
        Double(heartbeatTimeout.components.seconds) + Double(heartbeatTimeout.components.attoseconds) / 1e18
    }

    /// A transaction whose own errors (`RegistryError`) come out as themselves, not wrapped in postgres-nio's
    /// transaction error (the transaction was rolled back either way).
    func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withTransaction(logger: logger) { c in try await body(c) }
        } catch let e as PostgresTransactionError {
            if let inner = e.closureError as? RegistryError, e.rollbackError == nil { throw inner }
            throw e
        }
    }

    public func prepare() async throws {
        try await transaction { c in try await RegistrySchema.migrate(c, logger: logger) }
    }

    public func register(_ node: NodeRecord) async throws {
        try await client.query("""
            INSERT INTO sfu_nodes (id, control_url, media_address, relay_address, region, capacity, state, heartbeat_at, registered_at)
            VALUES (\(node.id), \(node.controlURL), \(node.mediaAddress), \(node.relayAddress), \(node.region), \(node.capacity), 'serving', now(), now())
            ON CONFLICT (id) DO UPDATE SET control_url = EXCLUDED.control_url, media_address = EXCLUDED.media_address,
                relay_address = EXCLUDED.relay_address, region = EXCLUDED.region, capacity = EXCLUDED.capacity,
                state = 'serving', heartbeat_at = now(), registered_at = now(),
                failure_reported_at = NULL, failure_reported_by = NULL
            """, logger: logger)
    }

    public func heartbeat(node: String, load: NodeLoad) async throws -> Bool {
        let rooms = load.roomParticipants.keys.sorted()
        let counts = rooms.map { load.roomParticipants[$0] ?? 0 }
        return try await transaction { c in
            let rows = try await c.query("""
                UPDATE sfu_nodes SET heartbeat_at = now(), rooms = \(load.rooms), participants = \(load.participants),
                    packets_in = \(load.packetsInPerSecond), packets_out = \(load.packetsOutPerSecond), cpu = \(load.cpu),
                    failure_reported_at = NULL, failure_reported_by = NULL
                WHERE id = \(node) RETURNING id
                """, logger: logger)
            var known = false
            for try await _ in rows { known = true }
            guard known else { return false }
            // The node's rooms replace what it reported before: a room it no longer hosts loses the row, unless a
            // placement to it is still pending (its participant has not reached the node yet).
            let grace = Self.pendingGrace
            try await c.query("""
                DELETE FROM sfu_room_hosts WHERE node = \(node) AND NOT (room = ANY(\(rooms)))
                    AND NOT (pending > 0 AND pending_at > now() - make_interval(secs => \(grace)))
                """, logger: logger)
            try await c.query("UPDATE sfu_room_hosts SET participants = 0 WHERE node = \(node) AND NOT (room = ANY(\(rooms)))", logger: logger)
            // A count that grew took in as many pending placements (the oldest are as good as any); pending
            // placements older than the grace never came.
            try await c.query("""
                INSERT INTO sfu_room_hosts (room, node, participants)
                SELECT r, \(node), p FROM unnest(\(rooms)::text[], \(counts)::int8[]) AS t(r, p)
                ON CONFLICT (room, node) DO UPDATE SET participants = EXCLUDED.participants,
                    pending = CASE WHEN sfu_room_hosts.pending_at > now() - make_interval(secs => \(grace))
                        THEN GREATEST(0, sfu_room_hosts.pending - GREATEST(0, EXCLUDED.participants - sfu_room_hosts.participants))
                        ELSE 0 END
                """, logger: logger)
            // A room this node is home of - or whose home failed and was reported, or was removed - that no node
            // hosts any more, placed over a minute ago (time enough for the placed participant to join), ends. A
            // room a placement holds locked is skipped: waiting for it while holding this node's row would
            // deadlock with that placement, which wants the row next.
            try await c.query("""
                DELETE FROM sfu_rooms WHERE room IN (
                    SELECT r.room FROM sfu_rooms r
                    WHERE (r.home = \(node) OR r.home IS NULL
                           OR r.home IN (SELECT id FROM sfu_nodes WHERE failure_reported_at IS NOT NULL))
                        AND r.placed_at < now() - interval '60 seconds'
                        AND NOT EXISTS (SELECT 1 FROM sfu_room_hosts h WHERE h.room = r.room)
                    FOR UPDATE SKIP LOCKED)
                """, logger: logger)
            return true
        }
    }

    public func reportFailures(by node: String) async throws -> [NodeFailure] {
        let timeout = timeoutSeconds
        return try await transaction { c in
            // Marking the row is the election: of two nodes asking at once, the second waits for the first's row
            // lock, then finds the row marked and skips it (READ COMMITTED re-checks the condition). The dead
            // node's row, then its hosts rows: the order every other writer takes them in.
            var dead: [String] = []
            for try await id in try await c.query("""
                UPDATE sfu_nodes SET failure_reported_at = now(), failure_reported_by = \(node)
                WHERE id <> \(node) AND failure_reported_at IS NULL AND heartbeat_at <= now() - make_interval(secs => \(timeout))
                RETURNING id
                """, logger: logger).decode(String.self) { dead.append(id) }
            var failures: [NodeFailure] = []
            for id in dead.sorted() {
                var failure = NodeFailure(node: id, rooms: [:], homeOf: [])
                for try await (room, participants) in try await c.query(
                    "DELETE FROM sfu_room_hosts WHERE node = \(id) RETURNING room, participants", logger: logger
                ).decode((String, Int64).self) { failure.rooms[room] = Int(clamping: participants) }
                for try await room in try await c.query("SELECT room FROM sfu_rooms WHERE home = \(id) ORDER BY room", logger: logger)
                    .decode(String.self) { failure.homeOf.append(room) }
                failures.append(failure)
            }
            // A placement that chose a node in the moment before it was reported can add a hosts row after the
            // report: the rows of reported nodes go here, on every call, so none keeps a room from ending.
            try await c.query("""
                DELETE FROM sfu_room_hosts WHERE node IN (SELECT id FROM sfu_nodes WHERE failure_reported_at IS NOT NULL)
                """, logger: logger)
            return failures
        }
    }

    public func leave(node: String) async throws -> NodeFailure {
        try await transaction { c in
            // Its row first, then its hosts rows: the order every other writer takes them in. A heartbeat older
            // than any timeout makes it dead on every reader's terms at once; the mark says it was reported.
            try await c.query("""
                UPDATE sfu_nodes SET state = 'draining', heartbeat_at = '-infinity',
                    failure_reported_at = now(), failure_reported_by = \(node)
                WHERE id = \(node)
                """, logger: logger)
            var left = NodeFailure(node: node, rooms: [:], homeOf: [])
            for try await (room, participants) in try await c.query(
                "DELETE FROM sfu_room_hosts WHERE node = \(node) RETURNING room, participants", logger: logger
            ).decode((String, Int64).self) { left.rooms[room] = Int(clamping: participants) }
            for try await room in try await c.query("SELECT room FROM sfu_rooms WHERE home = \(node) ORDER BY room", logger: logger)
                .decode(String.self) { left.homeOf.append(room) }
            return left
        }
    }

    public func spans(of node: String) async throws -> [RoomSpan] {
        try await client.withConnection { c in
            var spans: [String: RoomSpan] = [:]
            for try await (room, home, epoch) in try await c.query("""
                SELECT r.room, r.home, r.epoch FROM sfu_rooms r JOIN sfu_room_hosts h ON h.room = r.room AND h.node = \(node)
                """, logger: logger).decode((String, String?, Int64).self) {
                spans[room] = RoomSpan(room: room, home: home, epoch: epoch)
            }
            for try await (room, peer, relay) in try await c.query("""
                SELECT h.room, h.node, n.relay_address FROM sfu_room_hosts h JOIN sfu_nodes n ON n.id = h.node
                WHERE h.node <> \(node) AND n.failure_reported_at IS NULL
                    AND n.heartbeat_at > now() - make_interval(secs => \(timeoutSeconds))
                    AND h.room IN (SELECT room FROM sfu_room_hosts WHERE node = \(node))
                """, logger: logger).decode((String, String, String).self) {
                spans[room]?.peers[peer] = relay
            }
            return spans.values.sorted { $0.room < $1.room }
        }
    }

    public func saveModeration(room: String, epoch: Int64, version: Int64, state: String) async throws -> Bool {
        var written = false
        // One statement: the epoch check and the write see the same room row (a take-over that committed
        // before it is seen; one after it orders after it, and the new home's saves carry the newer epoch).
        for try await _ in try await client.query("""
            INSERT INTO sfu_room_moderation (room, epoch, version, state, saved_at)
            SELECT room, \(epoch), \(version), \(state)::jsonb, now() FROM sfu_rooms WHERE room = \(room) AND epoch = \(epoch)
            ON CONFLICT (room) DO UPDATE SET epoch = EXCLUDED.epoch, version = EXCLUDED.version, state = EXCLUDED.state,
                saved_at = EXCLUDED.saved_at
            WHERE (sfu_room_moderation.epoch, sfu_room_moderation.version) < (EXCLUDED.epoch, EXCLUDED.version)
            RETURNING room
            """, logger: logger) { written = true }
        return written
    }

    public func moderation(of room: String) async throws -> SavedModeration? {
        var found: SavedModeration?
        for try await (epoch, version, state) in try await client.query(
            "SELECT epoch, version, state::text FROM sfu_room_moderation WHERE room = \(room)", logger: logger
        ).decode((Int64, Int64, String).self) { found = SavedModeration(epoch: epoch, version: version, state: state) }
        return found
    }

    public func forgetModeration(room: String, epoch: Int64) async throws -> Bool {
        var gone = false
        for try await _ in try await client.query(
            "DELETE FROM sfu_room_moderation WHERE room = \(room) AND epoch = \(epoch) RETURNING room", logger: logger
        ) { gone = true }
        return gone
    }

    public func setState(node: String, _ state: NodeState) async throws {
        try await client.query("UPDATE sfu_nodes SET state = \(state.rawValue) WHERE id = \(node)", logger: logger)
    }

    public func place(room: String, limits: PlacementRule.Limits) async throws -> Placement {
        let timeout = timeoutSeconds
        return try await transaction { c in
            // One statement inserts the room or, when it exists, locks its row (the update of a conflicting row
            // takes its lock): no moment in which a heartbeat could end the room between finding and locking it.
            var standing: PlacementRule.RoomStanding?
            for try await (home, epoch) in try await c.query("""
                INSERT INTO sfu_rooms (room, home, epoch, placed_at) VALUES (\(room), NULL, 0, now())
                ON CONFLICT (room) DO UPDATE SET placed_at = now() RETURNING home, epoch
                """, logger: logger).decode((String?, Int64).self) {
                standing = PlacementRule.RoomStanding(home: home, epoch: epoch)
            }
            guard var standing else { throw RegistryError.noCapacity }  // RETURNING always gives the row
            let grace = Self.pendingGrace
            for try await (node, participants) in try await c.query("""
                SELECT node, participants + CASE WHEN pending_at > now() - make_interval(secs => \(grace)) THEN pending ELSE 0 END
                FROM sfu_room_hosts WHERE room = \(room)
                """, logger: logger).decode((String, Int64).self) {
                standing.hosts[node] = Int(participants)
            }
            let nodes = try await Self.standings(c, timeout: timeout, logger: logger)
            let decided = PlacementRule.place(room: standing.home == nil && standing.hosts.isEmpty ? nil : standing, nodes: nodes,
                                              limits: limits, random: { Int.random(in: 0..<$0) })
            guard case .success(let d) = decided else { throw RegistryError.noCapacity }
            // The rule says the home changes (its epoch + 1); the epoch itself is the sequence's next number
            // (schema version 2), which is larger than any this room had, also before it last ended.
            var epoch = d.epoch
            if d.homeChanged {
                var moved: Int64?
                for try await e in try await c.query("""
                    UPDATE sfu_rooms SET home = \(d.home), epoch = nextval('sfu_epochs') WHERE room = \(room) AND epoch = \(standing.epoch)
                    RETURNING epoch
                    """, logger: logger).decode(Int64.self) { moved = e }
                guard let moved else { throw RegistryError.noCapacity }  // cannot happen under the row lock
                epoch = moved
            }
            // Pending on the node (and counted in its load) until its reports show it. Only the room's rows are
            // written: a heartbeat takes its node's row, then its hosts rows, and never waits for a room's row.
            try await c.query("""
                INSERT INTO sfu_room_hosts (room, node, participants, pending, pending_at) VALUES (\(room), \(d.node), 0, 1, now())
                ON CONFLICT (room, node) DO UPDATE SET pending = CASE
                    WHEN sfu_room_hosts.pending_at > now() - make_interval(secs => \(grace)) THEN sfu_room_hosts.pending + 1 ELSE 1 END,
                    pending_at = now()
                """, logger: logger)
            let url = nodes.first { $0.id == d.node }?.controlURL ?? ""
            return Placement(room: room, node: d.node, controlURL: url, reason: d.reason, home: d.home, epoch: epoch)
        }
    }

    public func claimHome(room: String, node: String, expectedEpoch: Int64) async throws -> Int64? {
        var epoch: Int64?
        for try await e in try await client.query("""
            UPDATE sfu_rooms SET home = \(node), epoch = nextval('sfu_epochs') WHERE room = \(room) AND epoch = \(expectedEpoch)
            RETURNING epoch
            """, logger: logger).decode(Int64.self) { epoch = e }
        return epoch
    }

    public func home(of room: String) async throws -> (node: String?, epoch: Int64)? {
        var found: (String?, Int64)?
        for try await row in try await client.query("SELECT home, epoch FROM sfu_rooms WHERE room = \(room)", logger: logger)
            .decode((String?, Int64).self) { found = row }
        return found.map { (node: $0.0, epoch: $0.1) }
    }

    public func nodes() async throws -> [NodeStanding] {
        try await client.withConnection { c in try await Self.standings(c, timeout: timeoutSeconds, logger: logger) }
    }

    static func standings(_ c: PostgresConnection, timeout: Double, logger: Logger) async throws -> [NodeStanding] {
        var out: [NodeStanding] = []
        let rows = try await c.query("""
            SELECT id, control_url, state, heartbeat_at > now() - make_interval(secs => \(timeout)), capacity, participants,
                (SELECT COALESCE(sum(h.pending), 0)::int8 FROM sfu_room_hosts h
                 WHERE h.node = sfu_nodes.id AND h.pending_at > now() - make_interval(secs => \(pendingGrace))),
                relay_address
            FROM sfu_nodes ORDER BY id
            """, logger: logger)
        for try await (id, url, state, alive, capacity, participants, joins, relay) in
            rows.decode((String, String, String, Bool, Int64, Int64, Int64, String).self) {
            out.append(NodeStanding(id: id, controlURL: url, state: NodeState(rawValue: state) ?? .draining, alive: alive,
                                    capacity: Int(capacity), participants: Int(participants), pendingPlacements: Int(joins), relayAddress: relay))
        }
        return out
    }

    /// `postgres://user[:password]@host[:port]/database`, or a Unix socket directory as libpq spells it:
    /// `postgres://user@/database?host=/run/postgresql[&port=5432]`. TLS is off (a registry on a private
    /// network or the same machine); say so in the docs.
    static func configuration(_ url: String) throws -> PostgresClient.Configuration {
        guard let c = URLComponents(string: url), c.scheme == "postgres" || c.scheme == "postgresql" else {
            throw RegistryError.badURL("not a postgres:// URL")
        }
        let user = c.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        let password = c.password.flatMap { $0.removingPercentEncoding }
        let database = String(c.path.drop { $0 == "/" })
        let query = Dictionary((c.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, b in b })
        var port = c.port ?? 5432
        if let p = query["port"] { guard let n = Int(p), (1...65535).contains(n) else { throw RegistryError.badURL("bad port \(p)") }; port = n }
        if let dir = query["host"], dir.hasPrefix("/") {
            return PostgresClient.Configuration(unixSocketPath: "\(dir)/.s.PGSQL.\(port)", username: user, password: password,
                                                database: database.isEmpty ? nil : database)
        }
        guard let host = c.host, !host.isEmpty else { throw RegistryError.badURL("no host") }
        return PostgresClient.Configuration(host: host, port: port, username: user, password: password,
                                            database: database.isEmpty ? nil : database, tls: .disable)
    }
}
