import NodeIO
import SFU
import SFUMedia
import SFUSimulation

/// The session target's promises (listed on `FuzzSession`), checked after every operation.
extension FuzzSession {
    /// The kinds a participant's media may not leave the room in: hard-muted (room mute for a participant
    /// too), or without the floor in a lecture room.
    func refusedKinds(_ who: String) -> Set<MediaKind> {
        guard let snap = room?.snapshot(), let p = snap.participants.first(where: { $0.id == who }) else { return [] }
        let floor = snap.configuration.mode == .group || p.role == .moderator || snap.approvedHands.contains(who)
        var kinds = Set<MediaKind>()
        if !floor || p.hardMutedAudio { kinds.insert(.audio) }
        if !floor || p.hardMutedVideo { kinds.insert(.video) }
        return kinds
    }

    /// Packets sent on every slot of these kinds, all subscribers together.
    func packetsSent(_ kinds: Set<MediaKind>) -> UInt64 {
        guard !kinds.isEmpty, let room else { return 0 }
        return room.stats().reduce(0) { sum, s in sum + s.slots.filter { kinds.contains($0.kind) }.reduce(0) { $0 + $1.packetsSent } }
    }

    /// The room's view of talkers and slots, from its stats, its snapshot and the `active_talkers` events
    /// drained since the last step.
    mutating func checkSlotsAndTalkers() {
        defer { net.kept = []; destroyed = false }
        guard let room else { return }
        let ids = Set(room.participantIDs)
        let snap = room.snapshot()
        promise(ids.count <= room.limits.participants, "\(ids.count) participants, the cap is \(room.limits.participants)")
        let named = snap.pinned + snap.activeTalkers + snap.raisedHands + snap.approvedHands + (snap.dominantSpeaker.map { [$0] } ?? [])
        promise(Set(named).isSubset(of: ids), "pins, talkers, hands or the dominant speaker name someone not in the room: \(snap)")
        promise(snap.pinned.count < snap.configuration.maxActiveTalkers, "\(snap.pinned.count) pins for \(snap.configuration.maxActiveTalkers) talkers")
        // The node numbers what it sends itself: libsrtp refusing one of its packets means a slot's sequence
        // went back (issue 23: a slot described anew restarted its rewriter at offset 0).
        promise(room.counters.drops[.protectRefused] == 0, "the node's own packets were refused by SRTP: its numbering went back")
        for s in room.stats() {
            checkSlotMap(s.participant, s.slots.map { ($0.kind, $0.participant) }, ids, "stats")
        }
        guard !destroyed else { return }
        for (name, events) in net.kept where name == roomName {
            for case .activeTalkers(let subscriber, let talkers, let slots) in events {
                checkSlotMap(subscriber, slots.map { ($0.kind, $0.participant) }, ids, "active_talkers")
                let talking = talkers.map(\.participant)
                let cap = min(snap.configuration.maxActiveTalkers, talkerCounts[subscriber] ?? .max)
                promise(talking.count <= cap, "\(subscriber)'s talker list has \(talking.count) entries, its cap is \(cap)")
                promise(Set(talking).count == talking.count && !talking.contains(subscriber) && Set(talking).isSubset(of: ids),
                        "\(subscriber)'s talker list \(talking) repeats someone, names the subscriber or a stranger")
            }
        }
    }

    func checkSlotMap(_ subscriber: String, _ slots: [(kind: MediaKind, participant: String?)], _ ids: Set<String>, _ source: String) {
        promise(ids.contains(subscriber), "\(source): a slot map for \(subscriber), who is not in the room")
        for kind in [MediaKind.audio, .video] {
            let names = slots.filter { $0.kind == kind }.compactMap(\.participant)
            promise(Set(names).count == names.count, "\(source): \(subscriber)'s \(kind) slots repeat a participant: \(names)")
            promise(!names.contains(subscriber), "\(source): \(subscriber) receives itself")
            promise(Set(names).isSubset(of: ids), "\(source): \(subscriber)'s slots name someone not in the room: \(names)")
        }
    }

    /// What a refused offer must leave as it was: the transport table, the node's ICE credentials on each
    /// transport, what the room reports, and no events.
    struct Snapshot: Equatable, CustomStringConvertible {
        var connections: Int
        var routed: Int
        var pending: Int
        var roomConnections: [String: [UInt64]]
        var ufrags: [UInt64: String]
        var room: RoomSnapshot?
        var events: Bool
        var description: String {
            "\(connections) transports, \(routed) routed, \(pending) pending, \(roomConnections), ufrags \(ufrags), events \(events), \(String(describing: room))"
        }
    }

    func snapshot() -> Snapshot {
        let conns = Self.ids.flatMap { room?.sessions.connections(of: $0) ?? [] }
        return Snapshot(connections: net.core.connectionCount, routed: net.core.edge.router.count, pending: net.core.edge.pendingHandshakes,
                        roomConnections: Dictionary(uniqueKeysWithValues: Self.ids.map { ($0, (room?.sessions.connections(of: $0) ?? []).map(\.raw).sorted()) }),
                        ufrags: Dictionary(uniqueKeysWithValues: conns.map { ($0.raw, net.core.edge.router.agent($0)?.local.ufrag ?? "-") }),
                        room: room?.snapshot(), events: net.core.hasPendingEvents)
    }

    /// One transport per participant and direction; the router routes exactly the core's transports.
    mutating func checkTables() {
        let participants = room?.participantCount ?? 0
        promise(net.core.connectionCount <= 2 * participants,
                "\(net.core.connectionCount) transports for \(participants) participants")
        promise(net.core.edge.router.count == net.core.connectionCount,
                "the router routes \(net.core.edge.router.count) connections, the core has \(net.core.connectionCount)")
        promise(net.core.edge.pendingHandshakes <= net.core.connectionCount, "prepared transports were left behind")
        let routed = room?.sessions.all ?? []
        promise(routed.count == net.core.connectionCount && routed.allSatisfy { net.core.edge.router.agent($0) != nil },
                "the room routes \(routed), the core holds \(net.core.connectionCount) transports")
        for id in Self.ids { promise((room?.sessions.connections(of: id).count ?? 0) <= 2, "\(id) has more than two connections") }
        // Transports the core closed (handshake timeout, consent, DTLS failure, close_notify) leave the model.
        sessions = sessions.filter { net.core.edge.router.agent($0.value.connection) != nil }
        promise(net.misdirected == nil, net.misdirected ?? "")
    }
}
