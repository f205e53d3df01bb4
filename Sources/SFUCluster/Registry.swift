/// Where the cluster's shared state lives: the nodes, their liveness and load, and which node is each room's
/// home. A protocol so another engine can replace PostgreSQL (`PostgresRegistry`); the node and the tests
/// hold `any Registry`.
///
/// Liveness is always judged on the registry's clock (a heartbeat stamps the database's `now()`, and "alive"
/// compares with the database's `now()`), so nodes with skewed clocks agree on who is alive.
public protocol Registry: Sendable {
    /// Creates or migrates the schema to this build's version (idempotent; safe when several nodes start at
    /// once).
    func prepare() async throws
    /// Registers (or re-registers after a restart) a node, serving, with a first heartbeat.
    func register(_ node: NodeRecord) async throws
    /// Stamps the node alive now and records its load; returns false when the registry no longer knows the
    /// node (removed by an operator): the node registers again.
    func heartbeat(node: String, load: NodeLoad) async throws -> Bool
    func setState(node: String, _ state: NodeState) async throws
    /// Where a participant of `room` goes (see `PlacementRule`), decided and recorded in one transaction that
    /// locks the room's row, so two signaling servers placing the same room at once never split it.
    func place(room: String, limits: PlacementRule.Limits) async throws -> Placement
    /// Makes `node` the home of `room` if the room's epoch is still `expectedEpoch` (compare-and-set); the
    /// new epoch, or nil when another node moved it first.
    func claimHome(room: String, node: String, expectedEpoch: Int64) async throws -> Int64?
    /// The room's home and epoch as the registry holds them now.
    func home(of room: String) async throws -> (node: String?, epoch: Int64)?
    /// Every registered node with its standing, alive or not.
    func nodes() async throws -> [NodeStanding]
    /// Called by a live node after its heartbeat: the nodes that died (heartbeat older than the timeout) and
    /// that nobody reported yet, each reported once cluster-wide (the first caller gets it, whoever else asks at
    /// the same moment), with the rooms it hosted - whose participants there must rejoin elsewhere - and their
    /// rows gone, so placements no longer count it. A node that heartbeats again can fail and be reported again.
    func reportFailures(by node: String) async throws -> [NodeFailure]
    /// A node that stops on purpose (SIGTERM) says goodbye: from now it is no live node for anyone (placements,
    /// spans, the peers' relays) and its failure counts as reported - by itself, so no other node reports it
    /// again when its heartbeat ages - with the rooms it hosted, whose rows go, and those it was home of (each
    /// takes a new home at its next placement). Registering again (a restart) makes it a node like any other.
    func leave(node: String) async throws -> NodeFailure
    /// The rooms `node` hosts, each with its home, epoch and the other live nodes hosting it (their relay
    /// addresses): what a node needs to know which of its rooms it is home of, and whom to relay to.
    func spans(of node: String) async throws -> [RoomSpan]
    /// Saves the room's moderation (`state`, JSON) as its home at `epoch` holds it, if the room's epoch is still
    /// `epoch` and nothing newer is saved ((epoch, version) orders them); whether it was written. A home that
    /// lost the room (a new epoch) can no longer overwrite what the new home saves.
    func saveModeration(room: String, epoch: Int64, version: Int64, state: String) async throws -> Bool
    /// The room's moderation as last saved, if any.
    func moderation(of room: String) async throws -> SavedModeration?
    /// The room ended at its home: its saved moderation goes, if it is still that epoch's.
    func forgetModeration(room: String, epoch: Int64) async throws -> Bool
}

/// A room one node hosts, as the registry holds it.
public struct RoomSpan: Sendable, Equatable {
    public var room: String
    public var home: String?
    public var epoch: Int64
    /// The other live nodes that host it, by id: their relay addresses.
    public var peers: [String: String]

    public init(room: String, home: String?, epoch: Int64, peers: [String: String] = [:]) {
        self.room = room
        self.home = home
        self.epoch = epoch
        self.peers = peers
    }
}

/// A room's moderation as its home saved it.
public struct SavedModeration: Sendable, Equatable {
    public var epoch: Int64
    public var version: Int64
    /// JSON (the node's `ModerationState`).
    public var state: String

    public init(epoch: Int64, version: Int64, state: String) {
        self.epoch = epoch
        self.version = version
        self.state = state
    }
}

/// A node found dead: the rooms it hosted (participants there at its last heartbeat) and those it was home of.
public struct NodeFailure: Sendable, Equatable {
    public var node: String
    public var rooms: [String: Int]
    /// Rooms whose home it was: the next placement of each makes a live node the home (a new epoch).
    public var homeOf: [String]

    public init(node: String, rooms: [String: Int], homeOf: [String]) {
        self.node = node
        self.rooms = rooms
        self.homeOf = homeOf
    }
}

/// A placement's answer: the node to use and why.
public struct Placement: Sendable, Equatable {
    public var room: String
    public var node: String
    public var controlURL: String
    public var reason: PlacementRule.Reason
    public var home: String
    public var epoch: Int64

    public init(room: String, node: String, controlURL: String, reason: PlacementRule.Reason, home: String, epoch: Int64) {
        self.room = room
        self.node = node
        self.controlURL = controlURL
        self.reason = reason
        self.home = home
        self.epoch = epoch
    }
}

public enum RegistryError: Error, Equatable, CustomStringConvertible {
    /// No live serving node can take the participant.
    case noCapacity
    /// The registry's schema is newer than this build knows (a newer node migrated it).
    case schemaTooNew(found: Int, known: Int)
    case badURL(String)

    public var description: String {
        switch self {
        case .noCapacity: "no live serving node has room"
        case .schemaTooNew(let found, let known): "the registry's schema is version \(found); this node knows up to \(known)"
        case .badURL(let s): "cluster.registry: \(s)"
        }
    }
}
