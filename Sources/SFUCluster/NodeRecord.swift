/// What a node tells the registry about itself when it registers: who it is and where clients, signaling
/// servers and other nodes reach it. The registry keeps one row per node id; registering again (a restart)
/// replaces the addresses and sets the node serving.
public struct NodeRecord: Sendable, Equatable, Codable {
    /// Unique in the cluster; stable across restarts of the same machine (`cluster.node_id`).
    public var id: String
    /// The control API's base URL, for signaling servers (`http://10.0.0.2:8080`).
    public var controlURL: String
    /// Where clients send media (the first worker's announced address), for information.
    public var mediaAddress: String
    /// Where other nodes send relayed media.
    public var relayAddress: String
    public var region: String
    /// Participants the node takes at most; placement compares load to it.
    public var capacity: Int

    public init(id: String, controlURL: String, mediaAddress: String = "", relayAddress: String = "", region: String = "", capacity: Int) {
        self.id = id
        self.controlURL = controlURL
        self.mediaAddress = mediaAddress
        self.relayAddress = relayAddress
        self.region = region
        self.capacity = capacity
    }
}

/// Whether a node takes new rooms. A draining node keeps the rooms it hosts (their participants stay and
/// late joiners of those rooms still come to it) and is never chosen for a new room.
public enum NodeState: String, Sendable, Codable {
    case serving, draining
}

/// A node's load, sent with every heartbeat (each second).
public struct NodeLoad: Sendable, Equatable {
    public var rooms: Int
    public var participants: Int
    public var packetsInPerSecond: Int
    public var packetsOutPerSecond: Int
    /// Cores the process used over the last second.
    public var cpu: Double
    /// The participants of each room the node hosts, so placement knows which nodes already host a room.
    public var roomParticipants: [String: Int]

    public init(rooms: Int = 0, participants: Int = 0, packetsInPerSecond: Int = 0, packetsOutPerSecond: Int = 0, cpu: Double = 0,
                roomParticipants: [String: Int] = [:]) {
        self.rooms = rooms
        self.participants = participants
        self.packetsInPerSecond = packetsInPerSecond
        self.packetsOutPerSecond = packetsOutPerSecond
        self.cpu = cpu
        self.roomParticipants = roomParticipants
    }
}

/// A node as placement sees it, read from the registry in the placing transaction.
public struct NodeStanding: Sendable, Equatable {
    public var id: String
    public var controlURL: String
    public var state: NodeState
    /// Whether its last heartbeat is younger than the registry's timeout, measured on the database's clock.
    public var alive: Bool
    public var capacity: Int
    /// Participants at its last heartbeat.
    public var participants: Int
    /// Participants placed on it that its heartbeats do not show yet (on their way, for up to the registry's
    /// grace): without them a burst of placements between two heartbeats would all go to the same "least
    /// loaded" node, and a heartbeat taken before they joined would let the next placements fill it past its
    /// capacity.
    public var pendingPlacements: Int
    /// The IP address its relay sockets listen on (`cluster.relay_ip`): relay media from it comes from there.
    public var relayAddress: String

    public init(id: String, controlURL: String = "", state: NodeState = .serving, alive: Bool = true, capacity: Int, participants: Int = 0,
                pendingPlacements: Int = 0, relayAddress: String = "") {
        self.relayAddress = relayAddress
        self.id = id
        self.controlURL = controlURL
        self.state = state
        self.alive = alive
        self.capacity = capacity
        self.participants = participants
        self.pendingPlacements = pendingPlacements
    }

    /// Participants it has or is about to have.
    public var expected: Int { participants + pendingPlacements }
    /// Load over capacity; above 1 when over.
    public var utilisation: Double { capacity > 0 ? Double(expected) / Double(capacity) : .infinity }
    public var hasRoom: Bool { expected < capacity }
}
