/// Relays to the other nodes of a room that spans nodes (issue 25; docs/cluster.md, Relays): what this node
/// sends each of them, what each sends here, and who is in the room at each. The relay's connection is a
/// transport like a client's (its SRTP keys come with `setSRTP`; the peer's NACKs, key frame requests and
/// reports arrive on it as a subscriber's do). Another node's participants are the room's (its roster), each
/// marked with its node (`Participant.origin`); what media each relay carries is the relay's (`RelayLink`).
///
/// Owns the room's relay links, by peer node; admits, binds and lets go other nodes' participants through the
/// room's membership calls.
public final class RoomRelays {
    unowned let room: Room
    /// Relays to the other nodes of the room, by peer node.
    private(set) var links: [String: RelayLink] = [:]

    init(room: Room) { self.room = room }

    var isEmpty: Bool { links.isEmpty }

    /// Starts relaying this room to node `peer` through `connection`: the audio and video of the room's local
    /// top K (`RelayPlan`), from the next refresh on.
    public func attach(peer: String, connection id: ConnectionID, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        guard !peer.isEmpty else { throw RoomError(.invalidSetting, .invalid, "relay peer must not be empty") }
        guard links[peer] == nil else { throw RoomError(.participantExists, .conflict, "room \(room.name) already relays to \(peer)") }
        guard links.count < room.limits.relays else {
            throw RoomError(.limitReached, .conflict, "room \(room.name) relays to \(room.limits.relays) nodes, its limit", limit: "relays_per_room")
        }
        guard room.sessions.connection(id) == nil else { throw RoomError(.invalidSetting, .conflict, "connection \(id) is in use") }
        // The relay is no participant: an index below every participant's, never in the roster or a list.
        let index = room.nextNobodyIndex()
        let holder = Participant(id: "relay:\(peer)", index: index, name: peer, role: .participant, talkerCount: nil)
        let conn = Connection(id: id, participant: index)
        room.sessions.adopt(conn)
        let k = room.configuration.maxActiveTalkers
        links[peer] = RelayLink(peer: peer, connection: conn, holder: holder,
                                 videoCount: VideoCountPolicy(parameters: room.configuration.videoCount, initial: k), resendPolicy: room.limits.resendPolicy,
                                 maxSlots: 2 * k, effects: room.effects)
        refresh(room.localRanking, now: now, into: out)
    }

    /// What the relay to `peer` carries now: each relayed participant's audio or camera, the SSRC and format it
    /// goes under (what the peer binds to that participant's tracks: `RoomRelays.receive` there). Nil when the
    /// room has no relay to `peer`.
    public func carried(to peer: String) -> [RelayedStream]? { links[peer]?.carried }

    /// What the relay from `peer` carries, as the peer described it (its `carried(to:)`): a participant not in
    /// the room yet is admitted as a remote participant of `peer`, and each stream is bound to its track on the
    /// relay's connection, from which its media then comes like a publisher's. Streams described before stay
    /// bound. The room's lists and slots follow at the next tick.
    public func receive(_ streams: [RelayedStream], from peer: String, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        guard let link = links[peer] else { throw RoomError(.invalidSetting, .notFound, "room \(room.name) has no relay with \(peer)") }
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
            if let known = room.participants.lookup(s.participant) {
                // One this room has as its own or another node's (it moved, and its old node has not said it
                // left yet) is not bound: skipped, not refused with the rest.
                guard known.origin == peer else { continue }
            } else {
                newcomers.insert(s.participant)
            }
        }
        let streams = streams.filter { room.participants.lookup($0.participant).map { $0.origin == peer } ?? true }
        guard room.participants.remoteCount + newcomers.count <= room.participants.remoteCapacity else {
            throw RoomError(.limitReached, .conflict, "room \(room.name) holds \(room.participants.remoteCapacity) participants of other nodes",
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
        for s in streams where room.home.decidesModeration {
            if let p = room.participants.lookup(s.participant), p.role != s.role {
                p.role = s.role
                roleChanged.append(p)
            }
        }
        for id in changed.sorted() {
            let p: Participant
            if let known = room.participants.lookup(id) {
                p = known
            } else {
                let first = streams.first { $0.participant == id }
                p = try admitRemote(id, name: first?.name, role: first?.role ?? .participant, from: peer)
            }
            let publisher = p.publisher ?? {
                let made = Publisher(participant: p, connection: link.connection, effects: room.effects)
                made.feedback.receiverReportInterval = room.configuration.receiverReportInterval
                p.publisher = made
                return made
            }()
            let described = (link.remoteTracks[id] ?? [:]).sorted { $0.key < $1.key }.map(\.value)
            room.tracks.bind(publisher, to: described)
            link.connection.remotePublishers = link.connection.remotePublishers.filter { $0.value !== publisher }
            for ssrc in publisher.tracksBySSRC.keys { link.connection.remotePublishers[ssrc] = publisher }
            if publisher.audio != nil { room.election.detector.addSpeaker(p.index, now: now) }
            room.updateCandidacy(p)
        }
        if !roleChanged.isEmpty { room.publishingChanged(roleChanged, now: now, into: out) }
        if !changed.isEmpty || !roleChanged.isEmpty { room.listsChanged() }
    }

    /// This node's own participants, to tell the other nodes of the room who is in it here (`receiveMembers`
    /// there): everyone, not only those relayed, so that every node - the home above all, where moderator
    /// commands are decided - knows the whole room by id and role.
    public var localMembers: [RelayedMember] {
        // One who waits to be let into a knock-enabled room is not in it yet for the other nodes.
        room.participants.inOrder.lazy.filter { $0.origin == nil && !$0.awaited }.map { RelayedMember(participant: $0.id, name: $0.name, role: $0.role) }
    }

    /// Who is in the room at `peer` (its `localMembers`): each one not here yet is admitted as a remote participant
    /// of `peer` with the role it has there (later roles come from the home: `applyModeration`); it publishes
    /// nothing here until the relay carries its media (`receive`). One this room already has from
    /// elsewhere, or past the room's capacity, is left out. Returns how many were admitted.
    @discardableResult
    public func receiveMembers(_ members: [RelayedMember], from peer: String) -> Int {
        guard links[peer] != nil else { return 0 }
        var admitted = 0
        for m in members where !m.participant.isEmpty && room.participants.lookup(m.participant) == nil {
            guard (try? admitRemote(m.participant, name: m.name, role: m.role, from: peer)) != nil else { break }
            admitted += 1
        }
        if admitted > 0 { room.listsChanged() }
        return admitted
    }

    /// Admits another node's participant (bounded apart from this node's own: `Roster.admit`), with what the
    /// home's moderation says of it.
    private func admitRemote(_ id: String, name: String?, role: Role, from peer: String) throws(RoomError) -> Participant {
        let p = try room.participants.admit(id, name: name, role: role, talkerCount: nil, locked: false, roomName: room.name, origin: peer)
        room.election.join(p.index)
        room.effects.events.append(.participantState(participant: id, state: .joined, reason: nil))
        room.home.reapply(for: p)
        room.home.unpark(p)
        return p
    }

    /// The node participant `id` is in the room at, when it is another node's (nil: this node's own, or not in
    /// the room).
    public func origin(of id: String) -> String? { room.participants.lookup(id)?.origin }

    /// This node's own participant `id`'s index (its admission: a participant who left and came back has
    /// another), nil when `id` is not one of this node's own: what tells another node that it left.
    public func localIndex(of id: String) -> Int? { room.participants.lookup(id).flatMap { $0.origin == nil ? $0.index : nil } }

    /// Participants of `peer` that left the room there: their remote participants here leave too (a relay
    /// that goes on keeps no one its peer no longer has). Ids that are not `peer`'s are ignored.
    public func remoteLeft(_ ids: [String], from peer: String) {
        var any = false
        for id in ids {
            room.home.leftForGood(id, at: peer)
            guard let p = room.participants.lookup(id), p.origin == peer else { continue }
            room.leave(p, reason: "left at \(peer)")
            any = true
        }
        if any { room.listsChanged() }
    }

    func refresh(_ ranking: RoomRanking, now: MonoTime, into out: DatagramBatch) {
        guard !links.isEmpty else { return }
        let k = room.configuration.maxActiveTalkers
        // What came from another node is never relayed onwards.
        let remote = Set(room.participants.all.lazy.filter { $0.origin != nil }.map(\.index))
        let wanted = RelayPlan.wanted(ranking, k: k, videos: k, exclude: remote)
        for link in links.values { link.follow(wanted, participants: room.participants, configuration: room.configuration, now: now, into: out) }
    }

    /// The relay whose connection this is, let go (the node closes the transport): the remote participants
    /// whose media came over it leave the room.
    func detach(_ conn: Connection) {
        guard let link = links.values.first(where: { $0.connection === conn }) else { return }
        links[link.peer] = nil
        for p in room.participants.inOrder where p.origin == link.peer {
            room.home.park(p)
            room.leave(p, reason: "relay from \(link.peer) closed")
        }
        link.release()
        room.listsChanged()
    }

    /// A participant of `peer` left the room here: its tracks are bound anew if the peer relays it again.
    func forget(_ p: Participant) {
        if let origin = p.origin { links[origin]?.remoteTracks[p.id] = nil }
    }

    /// The room ends, or is let go: every relay lets go of what it holds.
    func releaseAll() {
        for r in links.values { r.release() }
        links.removeAll()
    }
}
