/// Who is in a room: its participants by index (given at admission, never reused in the room's life: what the
/// election, pins, the floor and slot plans name participants by) and by the client's id. It checks what
/// admission may refuse and owns nothing else; the room wires what a participant sends and receives.
struct Roster {
    private(set) var byIndex: [Int: Participant] = [:]
    private var indexByID: [String: Int] = [:]
    private var nextIndex = 0
    /// The room's `participants_per_room`: this node's own participants, at most (what placement counts).
    let capacity: Int
    /// Other nodes' participants of a room that spans nodes, at most (each node holds its own to `capacity`).
    let remoteCapacity: Int
    private(set) var remoteCount = 0

    init(capacity: Int, remoteCapacity: Int = 0) {
        self.capacity = capacity
        self.remoteCapacity = remoteCapacity
    }

    var count: Int { byIndex.count }
    /// This node's own participants.
    var localCount: Int { byIndex.count - remoteCount }
    var isEmpty: Bool { byIndex.isEmpty }
    /// In no particular order: for work whose result does not depend on it.
    var all: Dictionary<Int, Participant>.Values { byIndex.values }
    /// In admission order: for work that emits events or datagrams, so that runs are reproducible.
    var inOrder: [Participant] { byIndex.values.sorted { $0.index < $1.index } }

    subscript(index: Int) -> Participant? { byIndex[index] }
    func contains(_ id: String) -> Bool { indexByID[id] != nil }

    func participant(_ id: String) throws(RoomError) -> Participant {
        guard let i = indexByID[id], let p = byIndex[i] else {
            throw RoomError(.undefinedClientIDs, .notFound, "unknown participant \(id)")
        }
        return p
    }

    /// The participant `id` names, nil when none (a moderator's target that may not exist).
    func lookup(_ id: String) -> Participant? { indexByID[id].flatMap { byIndex[$0] } }

    /// The indices of `ids`, all of which must be in the room (EnableX: 5011 undefined client IDs).
    func resolve(_ ids: [String]) throws(RoomError) -> [Int] {
        guard !ids.isEmpty else { throw RoomError(.undefinedClientIDs, .notFound, "no client IDs given") }
        var indices: [Int] = []
        var unknown: [String] = []
        for id in ids {
            if let i = indexByID[id] { indices.append(i) } else { unknown.append(id) }
        }
        guard unknown.isEmpty else {
            throw RoomError(.undefinedClientIDs, .notFound, "undefined client IDs: \(unknown.joined(separator: ", "))")
        }
        return indices
    }

    /// The participant `id` names, which must be in the session: one awaited in a knock-enabled room is not yet
    /// (EnableX 5126, as for an id not in the room), so that no moderator command reaches it before approval.
    func admitted(_ id: String) throws(RoomError) -> Participant {
        let p = try participant(id)
        guard !p.awaited else { throw RoomError(.undefinedClientIDs, .notFound, "\(id) waits to be let in: not in the session yet") }
        return p
    }

    /// `resolve` for participants in the session: an awaited one is refused like an unknown id (`admitted`).
    func resolveAdmitted(_ ids: [String]) throws(RoomError) -> [Int] {
        let indices = try resolve(ids)
        let waiting = indices.compactMap { byIndex[$0] }.filter(\.awaited).map(\.id)
        guard waiting.isEmpty else {
            throw RoomError(.undefinedClientIDs, .notFound, "waiting to be let in, not in the session yet: \(waiting.joined(separator: ", "))")
        }
        return indices
    }

    /// Admits a participant: refused for an empty or taken id, while `locked`, when the room is full, or for a
    /// talker count outside 1-12. `origin`: another node's participant (bounded by `remoteCapacity`, not
    /// `capacity`).
    mutating func admit(_ id: String, name: String?, role: Role, talkerCount: Int?, locked: Bool,
                        roomName: String, origin: String? = nil) throws(RoomError) -> Participant {
        guard !id.isEmpty else { throw RoomError(.invalidSetting, .invalid, "participant id must not be empty") }
        guard indexByID[id] == nil else {
            throw RoomError(.participantExists, .conflict, "participant \(id) is already in the room")
        }
        if origin == nil {
            try checkLocal(talkerCount: talkerCount, locked: locked, roomName: roomName)
        } else {
            guard remoteCount < remoteCapacity else {
                throw RoomError(.limitReached, .conflict, "room \(roomName) holds \(remoteCapacity) participants of other nodes", limit: "participants_per_room")
            }
            if let t = talkerCount { try Self.checkTalkerCount(t) }
        }
        let p = Participant(id: id, index: nextIndex, name: name ?? id, role: role, talkerCount: talkerCount, origin: origin)
        if origin != nil { remoteCount += 1 }
        nextIndex += 1
        byIndex[p.index] = p
        indexByID[id] = p.index
        return p
    }

    /// What admitting one of this node's own checks besides its id: the lock, the room's capacity, the talker
    /// count.
    func checkLocal(talkerCount: Int?, locked: Bool, roomName: String) throws(RoomError) {
        guard !locked else { throw RoomError(.roomLocked, .conflict, "room \(roomName) is locked") }
        guard localCount < capacity else {
            throw RoomError(.limitReached, .conflict, "room \(roomName) is full (\(capacity) participants)", limit: "participants_per_room")
        }
        if let t = talkerCount { try Self.checkTalkerCount(t) }
    }

    static func checkTalkerCount(_ t: Int) throws(RoomError) {
        guard RoomConfiguration.maxActiveTalkersRange.contains(t) else {
            throw RoomError(.invalidSetting, .invalid, "talker_count must be 1-12, got \(t)")
        }
    }

    mutating func remove(_ p: Participant) {
        guard byIndex.removeValue(forKey: p.index) != nil else { return }
        indexByID[p.id] = nil
        if p.origin != nil { remoteCount -= 1 }
    }

    /// Empties the roster; indices still never repeat.
    mutating func removeAll() {
        byIndex.removeAll()
        indexByID.removeAll()
        remoteCount = 0
    }
}
