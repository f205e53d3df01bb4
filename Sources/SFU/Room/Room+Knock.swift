/// Knock-enabled rooms (EnableX "Moderate Participants' entry", `shared/seeds/000_*`): a participant admitted
/// without the moderator role waits - it may set up its transports, but nothing it sends is forwarded (a
/// counted `awaited` drop at ingress) and its slots stay empty - until a moderator lets it in or turns it away.
/// Moderators are told when someone waits, and one who joins late reads who does from the room state.
extension Room {
    /// Who waits, in the order they knocked: (id, name).
    public var awaitedParticipants: [(id: String, name: String)] {
        participants.inOrder.filter(\.awaited).map { ($0.id, $0.name) }
    }

    func knocked(_ p: Participant) {
        p.awaited = true
        effects.events.append(.participantState(participant: p.id, state: .awaited, reason: "knock"))
        effects.events.append(.knock(action: .awaited, participant: p.id, name: p.name, by: nil))
    }

    /// Lets awaited participants in (`ids` nil: everyone who waits): from now on they are in the room as if they
    /// had just joined. Only a moderator may (5003); an id that is not waiting is refused (5126) and nothing
    /// changes. Returns who was let in.
    @discardableResult
    public func approve(by: String, _ ids: [String]?, now: MonoTime, into out: DatagramBatch) throws(RoomError) -> [String] {
        try requireModerator(by, .unauthorized)
        let who = try awaited(ids)
        for p in who {
            p.awaited = false
            effects.events.append(.knock(action: .approved, participant: p.id, name: p.name, by: by))
            effects.events.append(.participantState(participant: p.id, state: .joined, reason: "approved by \(by)"))
        }
        if !who.isEmpty { publishingChanged(who, now: now, into: out) }
        return who.map(\.id)
    }

    /// Turns awaited participants away (`ids` nil: everyone who waits): each leaves the room (reason "denied by
    /// ..."), and the node closes its transports. The same rules as `approve`. Returns who was turned away.
    @discardableResult
    public func deny(by: String, _ ids: [String]?, now: MonoTime, into out: DatagramBatch) throws(RoomError) -> [String] {
        try requireModerator(by, .unauthorized)
        let who = try awaited(ids)
        for p in who {
            effects.events.append(.knock(action: .denied, participant: p.id, name: p.name, by: by))
            leave(p, reason: "denied by \(by)")
        }
        if !who.isEmpty { refreshAllSubscribers(now: now, into: out) }
        return who.map(\.id)
    }

    /// The awaited participants `ids` names, or all of them; refused whole when one is not waiting here.
    private func awaited(_ ids: [String]?) throws(RoomError) -> [Participant] {
        guard let ids else { return participants.inOrder.filter(\.awaited) }
        guard !ids.isEmpty else { throw RoomError(.undefinedClientIDs, .notFound, "no client IDs given") }
        let found = ids.map { participants.lookup($0) }
        let notWaiting = zip(ids, found).filter { $0.1?.awaited != true }.map(\.0)
        guard notWaiting.isEmpty else {
            throw RoomError(.undefinedClientIDs, .notFound, "not awaited here: \(notWaiting.joined(separator: ", "))")
        }
        var seen: Set<Int> = []
        return found.compactMap { $0 }.filter { seen.insert($0.index).inserted }
    }
}
