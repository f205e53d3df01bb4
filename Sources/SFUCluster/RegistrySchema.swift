import Logging
import PostgresNIO

/// The registry's tables, created and migrated by the node itself. Each version is a list of statements
/// applied once, in order, under an advisory lock (several nodes starting at once migrate once); the version
/// reached is kept in `sfu_schema`. A node that finds a newer version than it knows refuses to start rather
/// than write rows it does not understand. docs/cluster.md describes the tables.
enum RegistrySchema {
    static let lockKey: Int64 = 0x5F5F_5346_5521  // any constant; the same in every build
    static let versions: [[String]] = [
        // 1: nodes, rooms and which nodes host each room.
        [
            """
            CREATE TABLE sfu_nodes (
                id text PRIMARY KEY, control_url text NOT NULL, media_address text NOT NULL DEFAULT '',
                relay_address text NOT NULL DEFAULT '', region text NOT NULL DEFAULT '',
                state text NOT NULL DEFAULT 'serving' CHECK (state IN ('serving', 'draining')),
                capacity int8 NOT NULL, rooms int8 NOT NULL DEFAULT 0, participants int8 NOT NULL DEFAULT 0,
                packets_in int8 NOT NULL DEFAULT 0, packets_out int8 NOT NULL DEFAULT 0, cpu float8 NOT NULL DEFAULT 0,
                joins_since_heartbeat int8 NOT NULL DEFAULT 0,
                heartbeat_at timestamptz NOT NULL, registered_at timestamptz NOT NULL)
            """,
            """
            CREATE TABLE sfu_rooms (
                room text PRIMARY KEY, home text REFERENCES sfu_nodes(id) ON DELETE SET NULL,
                epoch int8 NOT NULL DEFAULT 0, placed_at timestamptz NOT NULL)
            """,
            """
            CREATE TABLE sfu_room_hosts (
                room text NOT NULL, node text NOT NULL REFERENCES sfu_nodes(id) ON DELETE CASCADE,
                participants int8 NOT NULL, PRIMARY KEY (room, node))
            """,
            "CREATE INDEX sfu_room_hosts_node ON sfu_room_hosts (node)",
        ],
        // 2: epochs from one sequence. A room's row goes when the room ends, and a room of the same name placed
        // again restarted at epoch 1: a node still holding the old room's epoch 1 would take the new one for
        // its own. Every home change now takes the next number of the sequence, so a room's epochs only grow,
        // across ends and re-placements, and no two home changes anywhere share one.
        [
            "CREATE SEQUENCE sfu_epochs AS int8 MINVALUE 1",
            "SELECT setval('sfu_epochs', COALESCE((SELECT max(epoch) FROM sfu_rooms), 0) + 1, false)",
        ],
        // 3: a dead node is reported once (`reportFailures`): when, and by which live node.
        [
            "ALTER TABLE sfu_nodes ADD COLUMN failure_reported_at timestamptz, ADD COLUMN failure_reported_by text",
        ],
        // 4: a room's moderation as its home last saved it (`saveModeration`), so that a new home after a
        // take-over goes on from it; it ends with the room.
        [
            """
            CREATE TABLE sfu_room_moderation (
                room text PRIMARY KEY REFERENCES sfu_rooms(room) ON DELETE CASCADE,
                epoch int8 NOT NULL, version int8 NOT NULL, state jsonb NOT NULL, saved_at timestamptz NOT NULL)
            """,
        ],
        // 5: placements the node has not reported yet (`PostgresRegistry.pendingGrace`). A placement added one
        // to the host's count, which the node's next heartbeat replaced with its own: a participant placed but
        // not yet admitted when the heartbeat was taken was forgotten, and the next placements could fill the
        // node past the room's limit or its capacity. Placements are now counted apart until the node's count has grown by them.
        [
            "ALTER TABLE sfu_room_hosts ADD COLUMN pending int8 NOT NULL DEFAULT 0, ADD COLUMN pending_at timestamptz",
            // A node's own count of placements since its heartbeat had the same fault; its load now sums its rooms'.
            "ALTER TABLE sfu_nodes DROP COLUMN joins_since_heartbeat",
        ],
    ]

    /// Runs inside a transaction (the registry's `prepare`).
    static func migrate(_ c: PostgresConnection, logger: Logger) async throws {
        do {
            try await c.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await c.query("CREATE TABLE IF NOT EXISTS sfu_schema (version int8 NOT NULL)", logger: logger)
            var current: Int64?
            for try await v in try await c.query("SELECT version FROM sfu_schema", logger: logger).decode(Int64.self) { current = v }
            if current == nil { try await c.query("INSERT INTO sfu_schema (version) VALUES (0)", logger: logger) }
            let from = Int(current ?? 0)
            guard from <= versions.count else { throw RegistryError.schemaTooNew(found: from, known: versions.count) }
            for version in from..<versions.count {
                for statement in versions[version] { try await c.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            }
            try await c.query("UPDATE sfu_schema SET version = \(Int64(versions.count))", logger: logger)
        }
    }
}
