/// A participant's publish and subscribe transports (issue 11's session model): binding an offer's tracks or
/// slots, the SRTP keys DTLS exported, and letting a transport go.
///
/// A participant has at most one publishing and one subscribing connection. A new offer on the same
/// connection is a renegotiation: the tracks and slots it still declares keep their state (see
/// docs/renegotiation.md), new ones are added and the others end. A new connection for the same direction
/// replaces the old one, which is released first.
///
/// Owns the room's connection table: each connection, a participant's or one of the room's own (a relay, the
/// live stream), by the id the worker core gave its transport.
public final class RoomSessions {
    unowned let room: Room
    private var table: [ConnectionID: Connection] = [:]

    init(room: Room) { self.room = room }

    /// Binds a participant's sending connection and the tracks its offer declares.
    public func attachPublisher(_ id: String, connection: ConnectionID, tracks published: [TrackDescription],
                                now: MonoTime) throws(RoomError) {
        let p = try room.ownParticipant(id)
        try OfferRules.checkPublish(published, limits: room.limits)
        if let old = p.publisher?.connection, old.id != connection { detach(old.id, reason: nil) }
        let conn = connectionFor(connection, participant: p)
        let publisher: Publisher
        if let existing = p.publisher {
            publisher = existing
        } else {
            publisher = Publisher(participant: p, connection: conn, effects: room.effects)
            publisher.feedback.receiverReportInterval = room.configuration.receiverReportInterval
            p.publisher = publisher
            conn.publisher = publisher
        }
        room.tracks.bind(publisher, to: published)
        room.recorder.recordNewTracks()
        if publisher.audio != nil { room.election.detector.addSpeaker(p.index, now: now) } else { room.stopSpeaking(p) }
        room.updateCandidacy(p)
        room.listsChanged()
    }

    /// Binds a participant's receiving connection: each description is one slot (a recvonly m-line). Slots
    /// whose mid the new offer keeps keep what feeds them and their stream's continuity.
    public func attachSubscriber(_ id: String, connection: ConnectionID, slots: [SlotDescription],
                                 now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let p = try room.ownParticipant(id)
        try OfferRules.checkSubscribe(slots, limits: room.limits)
        if let old = p.subscriber?.connection, old.id != connection { detach(old.id, reason: nil) }
        let conn = connectionFor(connection, participant: p)
        let s: Subscriber
        if let existing = p.subscriber {
            s = existing
        } else {
            let videos = slots.count { $0.codec.kind == .video }
            s = Subscriber(participant: p, connection: conn, videoCount: VideoCountPolicy(parameters: room.configuration.videoCount, initial: min(1, videos)),
                           resendPolicy: room.limits.resendPolicy, effects: room.effects)
            p.subscriber = s
            conn.subscriber = s
        }
        _ = s.bind(slots, startBitrate: Double(room.configuration.startBitrateKbps) * 1000)
        room.refreshSubscriber(p, now: now, into: out)
    }

    /// Installs the SRTP keys DTLS exported for a connection: `inbound` decrypts what the client sends,
    /// `outbound` protects what the node sends (RFC 5764 section 4.2). Throws when libsrtp refuses them.
    public func setSRTP(connection: ConnectionID, inbound: SRTPKeyingMaterial, outbound: SRTPKeyingMaterial) throws {
        guard let c = table[connection] else { throw RoomError(.invalidSetting, .notFound, "unknown connection \(connection)") }
        let p = room.participants[c.participant]
        guard p != nil || c.participant < 0 else { throw RoomError(.invalidSetting, .notFound, "unknown connection \(connection)") }
        c.inbound = try SRTPSession(keys: inbound, direction: .inbound)
        c.outbound = try SRTPSession(keys: outbound, direction: .outbound)
        // Nothing reaches a subscriber before its keys: a keyframe that came while its transport was coming up
        // could not start its waiting video slots, yet ended the wait. Ask those sources again (the next tick).
        if let s = c.subscriber {
            for t in s.videoSlots.compactMap(\.pending) { t.awaitKeyframe(now: .zero, effects: room.effects) }
            room.effects.wake(at: .zero)
        }
        if let p { room.effects.events.append(.participantState(participant: p.id, state: .connected, reason: nil, path: c.path)) }
    }

    /// The client nominated a pair (ICE), first or anew: a transport may move from UDP to TCP or back. A
    /// change on a connected transport is reported as `connected` again with the new path (reason "path
    /// changed"; a transport that connected before its path was known - hosted on another worker - gets it
    /// with reason nil).
    public func setPath(connection: ConnectionID, _ path: TransportPath) {
        guard let c = table[connection], c.path != path else { return }
        let before = c.path
        c.path = path
        if c.inbound != nil, let p = room.participants[c.participant] {
            room.effects.events.append(.participantState(participant: p.id, state: .connected, reason: before == nil ? nil : "path changed", path: path))
        }
    }

    /// The connection's transport is gone (closed, replaced, consent expired, handshake timed out): its
    /// tracks stop feeding slots, or its slots stop, and the participant stays in the room. `reason`, when
    /// given, is reported as the participant's `disconnected` state.
    public func detach(_ id: ConnectionID, reason: String?, now: MonoTime? = nil, into out: DatagramBatch? = nil) {
        guard let c = table.removeValue(forKey: id) else { return }
        if c.participant < 0 { return room.relays.detach(c) }
        guard let p = room.participants[c.participant] else { return c.release() }
        p.retiredDrops.add(c.drops)
        if p.publisher?.connection === c { room.tracks.unpublish(p) }
        if p.subscriber?.connection === c { room.unsubscribe(p) }
        c.release()
        if let reason { room.effects.events.append(.participantState(participant: p.id, state: .disconnected, reason: reason)) }
        if let now, let out { room.refreshAllSubscribers(now: now, into: out) } else { room.listsChanged() }
    }

    /// The connection lost its transport (ICE consent lapsing, DTLS closed): reported, nothing released.
    public func lost(_ connection: ConnectionID, reason: String) {
        guard let c = table[connection], let p = room.participants[c.participant] else { return }
        room.effects.events.append(.participantState(participant: p.id, state: .disconnected, reason: reason))
    }

    /// The connection's selected path closed (its ICE-TCP connection, RFC 6544): reported as lost, and the path
    /// forgotten, so that the client's nomination of another reports `connected` again with it.
    public func pathClosed(_ connection: ConnectionID, reason: String) {
        table[connection]?.path = nil
        lost(connection, reason: reason)
    }

    /// What a connection routes: each media (not RTX) SSRC with its track's kind, and how many retired SRTP
    /// streams it had to free for new SSRCs (`InboundStreams`). Nil for a connection the room does not hold.
    public func routes(of id: ConnectionID) -> (media: [(ssrc: UInt32, kind: MediaKind)], evictions: Int)? {
        guard let c = table[id] else { return nil }
        let media = (c.publisher?.tracksBySSRC ?? [:]).filter { !$0.value.rtx }.map { ($0.key, $0.value.track.kind) }
        return (media.sorted { $0.0 < $1.0 }, c.inboundSSRCs.evictions)
    }

    private func connectionFor(_ id: ConnectionID, participant p: Participant) -> Connection {
        if let c = table[id], c.participant == p.index { return c }
        table[id]?.release()
        let c = Connection(id: id, participant: p.index)
        table[id] = c
        return c
    }

    // MARK: The table

    /// The room's side of a transport, for a caller that routes many datagrams to it (see `Connection.attached`).
    public func connection(_ id: ConnectionID) -> Connection? { table[id] }

    /// The connections the room routes for a participant (the node closes them when the room or it goes).
    public func connections(of id: String) -> [ConnectionID] {
        guard let p = room.participants.lookup(id) else { return [] }
        return table.values.filter { $0.participant == p.index }.map(\.id)
    }

    public var all: [ConnectionID] { Array(table.keys) }

    /// A connection of the room's own that is no participant's (a relay's, the live stream's) is routed like
    /// a client's; `drop` lets it go.
    func adopt(_ c: Connection) { table[c.id] = c }

    func drop(_ c: Connection) {
        if table[c.id] === c { table[c.id] = nil }
        c.release()
    }

    /// A participant goes: its connections are let go (the node closes the transports).
    func releaseAll(of p: Participant) {
        for c in table.values where c.participant == p.index { table.removeValue(forKey: c.id)?.release() }
    }

    /// The room's client transports that nominated a pair, by path (`/metrics`).
    public func pathCounts(into counts: inout [TransportPath: Int]) {
        for c in table.values where c.participant >= 0 { if let p = c.path { counts[p, default: 0] += 1 } }
    }

    func releaseAll() {
        for c in table.values { c.release() }
        table.removeAll()
    }
}
