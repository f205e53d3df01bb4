/// A participant's publish and subscribe transports (issue 11's session model): binding an offer's tracks or
/// slots, the SRTP keys DTLS exported, and letting a transport go.
///
/// A participant has at most one publishing and one subscribing connection. A new offer on the same
/// connection is a renegotiation: the tracks and slots it still declares keep their state (see
/// docs/renegotiation.md), new ones are added and the others end. A new connection for the same direction
/// replaces the old one, which is released first.
extension Room {
    /// One of this node's own participants: another node's (a room that spans nodes) sends and receives there.
    func ownParticipant(_ id: String) throws(RoomError) -> Participant {
        let p = try participant(id)
        if let origin = p.origin { throw RoomError(.undefinedClientIDs, .notFound, "\(id) is a participant of node \(origin), not of this one") }
        return p
    }

    /// Binds a participant's sending connection and the tracks its offer declares.
    public func attachPublisher(_ id: String, connection: ConnectionID, tracks published: [TrackDescription],
                                now: MonoTime) throws(RoomError) {
        let p = try ownParticipant(id)
        try OfferRules.checkPublish(published, limits: limits)
        if let old = p.publisher?.connection, old.id != connection { detachConnection(old.id, reason: nil) }
        let conn = connectionFor(connection, participant: p)
        let publisher: Publisher
        if let existing = p.publisher {
            publisher = existing
        } else {
            publisher = Publisher(participant: p, connection: conn, effects: effects)
            publisher.feedback.receiverReportInterval = configuration.receiverReportInterval
            p.publisher = publisher
            conn.publisher = publisher
        }
        bind(publisher, to: published)
        recorder.recordNewTracks()
        if publisher.audio != nil { election.detector.addSpeaker(p.index, now: now) } else { stopSpeaking(p) }
        updateCandidacy(p)
        listsChanged()
    }

    /// Binds a participant's receiving connection: each description is one slot (a recvonly m-line). Slots
    /// whose mid the new offer keeps keep what feeds them and their stream's continuity.
    public func attachSubscriber(_ id: String, connection: ConnectionID, slots: [SlotDescription],
                                 now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let p = try ownParticipant(id)
        try OfferRules.checkSubscribe(slots, limits: limits)
        if let old = p.subscriber?.connection, old.id != connection { detachConnection(old.id, reason: nil) }
        let conn = connectionFor(connection, participant: p)
        let s: Subscriber
        if let existing = p.subscriber {
            s = existing
        } else {
            let videos = slots.count { $0.codec.kind == .video }
            s = Subscriber(participant: p, connection: conn, videoCount: VideoCountPolicy(parameters: configuration.videoCount, initial: min(1, videos)),
                           resendPolicy: limits.resendPolicy, effects: effects)
            p.subscriber = s
            conn.subscriber = s
        }
        _ = s.bind(slots, startBitrate: Double(configuration.startBitrateKbps) * 1000)
        refreshSubscriber(p, now: now, into: out)
    }

    /// Installs the SRTP keys DTLS exported for a connection: `inbound` decrypts what the client sends,
    /// `outbound` protects what the node sends (RFC 5764 section 4.2). Throws when libsrtp refuses them.
    public func setSRTP(connection: ConnectionID, inbound: SRTPKeyingMaterial, outbound: SRTPKeyingMaterial) throws {
        guard let c = connections[connection] else { throw RoomError(.invalidSetting, .notFound, "unknown connection \(connection)") }
        let p = participants[c.participant]
        guard p != nil || c.participant < 0 else { throw RoomError(.invalidSetting, .notFound, "unknown connection \(connection)") }
        c.inbound = try SRTPSession(keys: inbound, direction: .inbound)
        c.outbound = try SRTPSession(keys: outbound, direction: .outbound)
        // Nothing reaches a subscriber before its keys: a keyframe that came while its transport was coming up
        // could not start its waiting video slots, yet ended the wait. Ask those sources again (the next tick).
        if let s = c.subscriber {
            for t in s.videoSlots.compactMap(\.pending) { t.awaitKeyframe(now: .zero, effects: effects) }
            effects.wake(at: .zero)
        }
        if let p { effects.events.append(.participantState(participant: p.id, state: .connected, reason: nil, path: c.path)) }
    }

    /// The client nominated a pair (ICE), first or anew: a transport may move from UDP to TCP or back. A
    /// change on a connected transport is reported as `connected` again with the new path (reason "path
    /// changed"; a transport that connected before its path was known - hosted on another worker - gets it
    /// with reason nil).
    public func setPath(connection: ConnectionID, _ path: TransportPath) {
        guard let c = connections[connection], c.path != path else { return }
        let before = c.path
        c.path = path
        if c.inbound != nil, let p = participants[c.participant] {
            effects.events.append(.participantState(participant: p.id, state: .connected, reason: before == nil ? nil : "path changed", path: path))
        }
    }

    /// The connection's transport is gone (closed, replaced, consent expired, handshake timed out): its
    /// tracks stop feeding slots, or its slots stop, and the participant stays in the room. `reason`, when
    /// given, is reported as the participant's `disconnected` state.
    public func detachConnection(_ id: ConnectionID, reason: String?, now: MonoTime? = nil, into out: DatagramBatch? = nil) {
        guard let c = connections.removeValue(forKey: id) else { return }
        if c.participant < 0 { return relays.detach(c) }
        guard let p = participants[c.participant] else { return c.release() }
        p.retiredDrops.add(c.drops)
        if p.publisher?.connection === c { unpublish(p) }
        if p.subscriber?.connection === c { unsubscribe(p) }
        c.release()
        if let reason { effects.events.append(.participantState(participant: p.id, state: .disconnected, reason: reason)) }
        if let now, let out { refreshAllSubscribers(now: now, into: out) } else { listsChanged() }
    }

    /// The connection lost its transport (ICE consent lapsing, DTLS closed): reported, nothing released.
    public func connectionLost(_ connection: ConnectionID, reason: String) {
        guard let c = connections[connection], let p = participants[c.participant] else { return }
        effects.events.append(.participantState(participant: p.id, state: .disconnected, reason: reason))
    }

    /// What a connection routes: each media (not RTX) SSRC with its track's kind, and how many retired SRTP
    /// streams it had to free for new SSRCs (`InboundStreams`). Nil for a connection the room does not hold.
    public func routes(of id: ConnectionID) -> (media: [(ssrc: UInt32, kind: MediaKind)], evictions: Int)? {
        guard let c = connections[id] else { return nil }
        let media = (c.publisher?.tracksBySSRC ?? [:]).filter { !$0.value.rtx }.map { ($0.key, $0.value.track.kind) }
        return (media.sorted { $0.0 < $1.0 }, c.inboundSSRCs.evictions)
    }

    // MARK: Pieces

    /// Binds a publisher's tracks to what it now publishes (`Publisher.bind`), keeping the room's track table.
    func bind(_ publisher: Publisher, to published: [TrackDescription]) {
        let owner = publisher.participant.index
        let (ended, _) = publisher.bind(published) { d in
            let t = PublishedTrack(index: nextTrackIndex, owner: owner, description: d, levelSource: configuration.levelSource,
                                       onsetReplay: configuration.onsetReplay)
            nextTrackIndex += 1
            tracks[t.index] = t
            return t
        }
        for t in ended { tracks[t.index] = nil }
    }

    private func connectionFor(_ id: ConnectionID, participant p: Participant) -> Connection {
        if let c = connections[id], c.participant == p.index { return c }
        connections[id]?.release()
        let c = Connection(id: id, participant: p.index)
        connections[id] = c
        return c
    }

    /// The publisher's tracks end: slots they fed stop, and it leaves talker candidacy.
    func unpublish(_ p: Participant) {
        guard let publisher = p.publisher else { return }
        for t in publisher.allTracks { tracks[t.index] = nil }
        if p.origin != nil { publisher.connection.remotePublishers = publisher.connection.remotePublishers.filter { $0.value !== publisher } }
        publisher.endAll()
        p.publisher = nil
        stopSpeaking(p)
    }

    /// The subscriber's slots end: nothing feeds them any more.
    func unsubscribe(_ p: Participant) {
        p.subscriber?.unbind()
        p.subscriber = nil
    }

    /// Takes a participant out of the detector; a dominant speaker who goes is reported as none.
    func stopSpeaking(_ p: Participant) {
        let wasDominant = election.dominant == p.index
        election.detector.removeSpeaker(p.index)
        if wasDominant, home.followed == nil { effects.events.append(.dominantSpeaker(participant: nil)) }
    }
}
