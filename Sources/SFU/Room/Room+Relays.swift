/// Relays to the other nodes of a room that spans nodes (issue 25; docs/cluster.md, Relays): what this node
/// sends each of them. The relay's connection is a transport like a client's (its SRTP keys come with
/// `setSRTP`; the peer's NACKs, key frame requests and reports arrive on it as a subscriber's do).
extension Room {
    /// Starts relaying this room to node `peer` through `connection`: the audio and video of the room's local
    /// top K (`RelayPlan`), from the next refresh on.
    public func attachRelay(peer: String, connection id: ConnectionID, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        guard !peer.isEmpty else { throw RoomError(.invalidSetting, .invalid, "relay peer must not be empty") }
        guard relays[peer] == nil else { throw RoomError(.participantExists, .conflict, "room \(name) already relays to \(peer)") }
        guard relays.count < limits.relays else {
            throw RoomError(.limitReached, .conflict, "room \(name) relays to \(limits.relays) nodes, its limit", limit: "relays_per_room")
        }
        guard connections[id] == nil else { throw RoomError(.invalidSetting, .conflict, "connection \(id) is in use") }
        // The relay is no participant: an index below every participant's, never in the roster or a list.
        let index = nextNobodyIndex()
        let holder = Participant(id: "relay:\(peer)", index: index, name: peer, role: .participant, talkerCount: nil)
        let conn = Connection(id: id, participant: index)
        connections[id] = conn
        let k = configuration.maxActiveTalkers
        relays[peer] = RelayLink(peer: peer, connection: conn, holder: holder,
                                 videoCount: VideoCountPolicy(parameters: configuration.videoCount, initial: k), resendPolicy: limits.resendPolicy,
                                 maxSlots: 2 * k, effects: effects)
        refreshRelays(localRanking, now: now, into: out)
    }

    /// What the relay to `peer` carries now: each relayed participant's audio or camera, the SSRC and format it
    /// goes under (what the peer binds to that participant's tracks: `receiveRelayed` there). Nil when the
    /// room has no relay to `peer`.
    public func relayed(to peer: String) -> [RelayedStream]? { relays[peer]?.carried }

    /// What the relay from `peer` carries, as the peer described it (its `relayed(to:)`): a participant not in
    /// the room yet is admitted as a remote participant of `peer`, and each stream is bound to its track on the
    /// relay's connection, from which its media then comes like a publisher's. Streams described before stay
    /// bound. The room's lists and slots follow at the next tick.
    public func receiveRelayed(_ streams: [RelayedStream], from peer: String, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        guard let link = relays[peer] else { throw RoomError(.invalidSetting, .notFound, "room \(name) has no relay with \(peer)") }
        // Everything is checked before anything is bound: a description refused is refused whole.
        // One SSRC is one stream: the peer may not give two streams the same one.
        var owners: [UInt32: String] = [:]
        for (ssrc, publisher) in link.connection.remotePublishers { owners[ssrc] = publisher.participant.id }
        var newcomers: Set<String> = []
        var named: Set<UInt32> = []
        for s in streams {
            // Within one description every SSRC, media or RTX, names one stream.
            for ssrc in [s.ssrc] + (s.rtxSSRC.map { [$0] } ?? []) {
                guard named.insert(ssrc).inserted else {
                    throw RoomError(.invalidSetting, .conflict, "\(peer) names SSRC \(ssrc) for two streams")
                }
            }
            // Audio is Opus, video is not: a stream of one kind under the other's codec would be a second track.
            guard (s.kind == .audio) == (s.codec == .opus), !s.participant.isEmpty else {
                throw RoomError(.invalidSetting, .invalid, "\(peer) relays a \(s.kind) stream of \(s.participant) as \(s.codec)")
            }
            for ssrc in [s.ssrc] + (s.rtxSSRC.map { [$0] } ?? []) {
                if let other = owners[ssrc], other != s.participant {
                    throw RoomError(.invalidSetting, .conflict, "\(peer) relays SSRC \(ssrc) for both \(other) and \(s.participant)")
                }
                owners[ssrc] = s.participant
            }
            if let known = participants.lookup(s.participant) {
                // One this room has as its own or another node's (it moved, and its old node has not said it
                // left yet) is not bound: skipped, not refused with the rest.
                guard known.origin == peer else { continue }
            } else {
                newcomers.insert(s.participant)
            }
        }
        let streams = streams.filter { participants.lookup($0.participant).map { $0.origin == peer } ?? true }
        guard participants.remoteCount + newcomers.count <= participants.remoteCapacity else {
            throw RoomError(.limitReached, .conflict, "room \(name) holds \(participants.remoteCapacity) participants of other nodes",
                            limit: "participants_per_room")
        }
        var changed: Set<String> = []
        for s in streams where link.remoteTracks[s.participant]?[s.relayedKind] != s.track {
            link.remoteTracks[s.participant, default: [:]][s.relayedKind] = s.track
            changed.insert(s.participant)
        }
        // A source described now is described whole: its layers not described any more are gone (a simulcast
        // camera renegotiated to fewer layers), so the source is not taken for simulcast with dead layers.
        var described: [String: Set<RelayedKind>] = [:]
        for s in streams { described[s.participant, default: []].insert(s.relayedKind) }
        for (who, kinds) in described {
            let sources = Set(kinds.map(\.source))
            let stale = (link.remoteTracks[who] ?? [:]).keys.filter { sources.contains($0.source) && !kinds.contains($0) }
            for k in stale { link.remoteTracks[who]?[k] = nil }
            if !stale.isEmpty { changed.insert(who) }
        }
        // A role the origin changed (a moderator publishes under the floor and a room mute) follows at once -
        // unless the room has a home: then roles are the home's (`applyModeration`), and a description sent
        // before the origin applied the home's last state must not undo it.
        var roleChanged: [Participant] = []
        for s in streams where appliedModeration == nil && homeEpoch == 0 {
            if let p = participants.lookup(s.participant), p.role != s.role {
                p.role = s.role
                roleChanged.append(p)
            }
        }
        for id in changed.sorted() {
            let p: Participant
            if let known = participants.lookup(id) {
                p = known
            } else {
                let first = streams.first { $0.participant == id }
                p = try admitRemote(id, name: first?.name, role: first?.role ?? .participant, from: peer)
            }
            let publisher = p.publisher ?? {
                let made = Publisher(participant: p, connection: link.connection, effects: effects)
                made.feedback.receiverReportInterval = configuration.receiverReportInterval
                p.publisher = made
                return made
            }()
            let described = (link.remoteTracks[id] ?? [:]).sorted { $0.key < $1.key }.map(\.value)
            bind(publisher, to: described)
            link.connection.remotePublishers = link.connection.remotePublishers.filter { $0.value !== publisher }
            for ssrc in publisher.tracksBySSRC.keys { link.connection.remotePublishers[ssrc] = publisher }
            if publisher.audio != nil { election.detector.addSpeaker(p.index, now: now) }
            updateCandidacy(p)
        }
        if !roleChanged.isEmpty { publishingChanged(roleChanged, now: now, into: out) }
        if !changed.isEmpty || !roleChanged.isEmpty { listsChanged() }
    }

    /// This node's own participants, to tell the other nodes of the room who is in it here (`receiveMembers`
    /// there): everyone, not only those relayed, so that every node - the home above all, where moderator
    /// commands are decided - knows the whole room by id and role.
    public var localMembers: [RelayedMember] {
        // One who waits to be let into a knock-enabled room is not in it yet for the other nodes.
        participants.inOrder.lazy.filter { $0.origin == nil && !$0.awaited }.map { RelayedMember(participant: $0.id, name: $0.name, role: $0.role) }
    }

    /// Who is in the room at `peer` (its `localMembers`): each one not here yet is admitted as a remote participant
    /// of `peer` with the role it has there (later roles come from the home: `applyModeration`); it publishes
    /// nothing here until the relay carries its media (`receiveRelayed`). One this room already has from
    /// elsewhere, or past the room's capacity, is left out. Returns how many were admitted.
    @discardableResult
    public func receiveMembers(_ members: [RelayedMember], from peer: String) -> Int {
        guard relays[peer] != nil else { return 0 }
        var admitted = 0
        for m in members where !m.participant.isEmpty && participants.lookup(m.participant) == nil {
            guard (try? admitRemote(m.participant, name: m.name, role: m.role, from: peer)) != nil else { break }
            admitted += 1
        }
        if admitted > 0 { listsChanged() }
        return admitted
    }

    /// Admits another node's participant (bounded apart from this node's own: `Roster.admit`), with what the
    /// home's moderation says of it.
    private func admitRemote(_ id: String, name: String?, role: Role, from peer: String) throws(RoomError) -> Participant {
        let p = try participants.admit(id, name: name, role: role, talkerCount: nil, locked: false, roomName: self.name, origin: peer)
        election.join(p.index)
        effects.events.append(.participantState(participant: id, state: .joined, reason: nil))
        reapplySharedModeration(for: p)
        unpark(p)
        return p
    }

    /// The node participant `id` is in the room at, when it is another node's (nil: this node's own, or not in
    /// the room).
    public func origin(of id: String) -> String? { participants.lookup(id)?.origin }

    /// This node's own participant `id`'s index (its admission: a participant who left and came back has
    /// another), nil when `id` is not one of this node's own: what tells another node that it left.
    public func localIndex(of id: String) -> Int? { participants.lookup(id).flatMap { $0.origin == nil ? $0.index : nil } }

    /// Participants of `peer` that left the room there: their remote participants here leave too (a relay
    /// that goes on keeps no one its peer no longer has). Ids that are not `peer`'s are ignored.
    public func remoteLeft(_ ids: [String], from peer: String) {
        var any = false
        for id in ids {
            if parked[id]?.peer == peer { parked[id] = nil }  // it left for good
            guard let p = participants.lookup(id), p.origin == peer else { continue }
            leave(p, reason: "left at \(peer)")
            any = true
        }
        if any { listsChanged() }
    }

    func refreshRelays(_ ranking: RoomRanking, now: MonoTime, into out: DatagramBatch) {
        guard !relays.isEmpty else { return }
        let k = configuration.maxActiveTalkers
        // What came from another node is never relayed onwards.
        let remote = Set(participants.all.lazy.filter { $0.origin != nil }.map(\.index))
        let wanted = RelayPlan.wanted(ranking, k: k, videos: k, exclude: remote)
        for link in relays.values { link.follow(wanted, participants: participants, configuration: configuration, now: now, into: out) }
    }

    /// The relay whose connection this is, let go (the node closes the transport): the remote participants
    /// whose media came over it leave the room.
    func detachRelay(_ conn: Connection) {
        guard let link = relays.values.first(where: { $0.connection === conn }) else { return }
        relays[link.peer] = nil
        for p in participants.inOrder where p.origin == link.peer {
            park(p)
            leave(p, reason: "relay from \(link.peer) closed")
        }
        link.release()
        listsChanged()
    }
}
