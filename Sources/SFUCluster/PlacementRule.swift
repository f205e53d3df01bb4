/// Where a participant of a room goes, decided from what the registry holds: a pure function of the room's
/// row, the nodes' standings and a random source, so every branch is table-tested without a database. The
/// registry runs it inside the transaction that locked the room's row, then writes what it decided.
///
/// The order (issue 25): a room stays on its home node while that node is alive and under its limits, so a
/// room spans as few nodes as it can (every extra node costs a relay); else it spills to a live node that
/// already hosts it (no new relay); else to the least-loaded live serving node, chosen by the power of two
/// choices (two at random, the less utilised of them: Mitzenmacher 2001), which spreads a burst of
/// placements without a herd on the single least-loaded node.
public enum PlacementRule {
    /// The room as the registry holds it; nil for a room nobody placed yet.
    public struct RoomStanding: Sendable, Equatable {
        public var home: String?
        /// Increases each time the room's home changes: a node acts as home only for the epoch it was given
        /// (compare-and-set), so a node that lost the room cannot act on it after a take-over.
        public var epoch: Int64
        /// Participants on each node that hosts the room (last heartbeat, plus placements since).
        public var hosts: [String: Int]

        public init(home: String?, epoch: Int64, hosts: [String: Int] = [:]) {
            self.home = home
            self.epoch = epoch
            self.hosts = hosts
        }
    }

    public struct Limits: Sendable, Equatable {
        /// Participants of one room on one node (the node's `limits.participants_per_room`).
        public var participantsPerRoomPerNode: Int

        public init(participantsPerRoomPerNode: Int) { self.participantsPerRoomPerNode = participantsPerRoomPerNode }
    }

    public enum Reason: String, Sendable, Codable {
        /// The room's home is alive and has room.
        case home
        /// The home is full (or draining for this room's growth); another node of the room has room.
        case spillToHost = "spill_to_host"
        /// No node of the room has room: a new node joins the room (a relay to its home).
        case spillToNewNode = "spill_to_new_node"
        /// A room nobody hosts yet.
        case newRoom = "new_room"
        /// The home stopped heartbeating: the chosen node becomes the home (epoch + 1).
        case homeTakenOver = "home_taken_over"
    }

    public struct Decision: Sendable, Equatable {
        public var node: String
        public var reason: Reason
        /// The room's home after this placement, and its epoch.
        public var home: String
        public var epoch: Int64
        public var homeChanged: Bool { reason == .newRoom || reason == .homeTakenOver }
    }

    public enum Refusal: Error, Equatable, Sendable {
        /// No live serving node has room (or, for a new room, none is serving).
        case noCapacity
    }

    /// - Parameter random: returns an index in `0..<n`; the registry passes a real random source, tests a
    ///   scripted one.
    public static func place(room: RoomStanding?, nodes: [NodeStanding], limits: Limits,
                             random: (Int) -> Int) -> Result<Decision, Refusal> {
        let byID = Dictionary(nodes.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        func fits(_ id: String) -> Bool {
            guard let n = byID[id], n.alive, n.hasRoom else { return false }
            return (room?.hosts[id] ?? 0) < limits.participantsPerRoomPerNode
        }
        let epoch = room?.epoch ?? 0
        if let room, let home = room.home, let h = byID[home], h.alive {
            if fits(home) { return .success(Decision(node: home, reason: .home, home: home, epoch: epoch)) }
            let hosts = room.hosts.keys.filter { $0 != home && fits($0) }.compactMap { byID[$0] }
            if let best = hosts.min(by: less) {
                return .success(Decision(node: best.id, reason: .spillToHost, home: home, epoch: epoch))
            }
            guard let chosen = twoChoices(nodes.filter { $0.alive && $0.state == .serving && $0.hasRoom && room.hosts[$0.id] == nil }, random) else {
                return .failure(.noCapacity)
            }
            return .success(Decision(node: chosen.id, reason: .spillToNewNode, home: home, epoch: epoch))
        }
        // No live home: a new room, or a take-over. A node that already hosts the room is preferred as the
        // new home (its participants are already there), else any live serving node.
        let hosting = (room?.hosts.keys.map { $0 } ?? []).filter(fits).compactMap { byID[$0] }
        let chosen = hosting.min(by: less)
            ?? twoChoices(nodes.filter { $0.alive && $0.state == .serving && $0.hasRoom }, random)
        guard let chosen else { return .failure(.noCapacity) }
        let reason: Reason = room?.home == nil ? .newRoom : .homeTakenOver
        return .success(Decision(node: chosen.id, reason: reason, home: chosen.id, epoch: epoch + 1))
    }

    /// Least utilised first; ties by id, so the rule is deterministic for a given random source.
    static func less(_ a: NodeStanding, _ b: NodeStanding) -> Bool {
        a.utilisation != b.utilisation ? a.utilisation < b.utilisation : a.id < b.id
    }

    static func twoChoices(_ candidates: [NodeStanding], _ random: (Int) -> Int) -> NodeStanding? {
        let sorted = candidates.sorted { $0.id < $1.id }
        guard !sorted.isEmpty else { return nil }
        guard sorted.count > 1 else { return sorted[0] }
        let i = random(sorted.count) % sorted.count
        var j = random(sorted.count - 1) % (sorted.count - 1)
        if j >= i { j += 1 }
        return less(sorted[i], sorted[j]) ? sorted[i] : sorted[j]
    }
}
