import SFU
import WebRTCEdge

/// The session API (offers, answers) and each transport's life through its edge's outputs.
extension WorkerCore {
    /// Answers a participant's offer to send: a new transport, a renegotiation, an ICE restart or a
    /// replacement (see the type's comment). Nothing changes when the offer is refused.
    /// `screenShareMids` names the offer's video m-lines that are screen shares (`OfferAnswer.source`).
    public func publish(room: String, participant: String, offer: String, screenShareMids: Set<String> = [],
                        now: MonoTime) throws -> SessionAnswer {
        try negotiate(.publish, room: room, participant: participant, offer: offer, screenShareMids: screenShareMids, now: now)
    }

    /// Answers a participant's offer to receive: each recvonly m-line is a slot; those in `screenShareMids`
    /// show screen shares.
    public func subscribe(room: String, participant: String, offer: String, screenShareMids: Set<String> = [],
                          now: MonoTime) throws -> SessionAnswer {
        try negotiate(.subscribe, room: room, participant: participant, offer: offer, screenShareMids: screenShareMids, now: now)
    }

    private func negotiate(_ direction: TransportDirection, room name: String, participant: String, offer text: String,
                           screenShareMids: Set<String>, now: MonoTime) throws -> SessionAnswer {
        guard let room = room(name) else { throw NoSuchRoom(room: name) }
        guard room.contains(participant: participant) else {
            throw RoomError(.undefinedClientIDs, .notFound, "unknown participant \(participant)")
        }
        let offer = try SessionDescription.parse(text)
        let remote = try OfferAnswer.remoteTransport(offer)
        let cap = direction == .publish ? limits.room.tracksPerPublish : limits.room.slotsPerSubscription
        guard OfferAnswer.mediaCount(offer, sending: direction == .publish) <= cap else {
            throw direction == .publish
                ? RoomError(.limitReached, .invalid, "a publish may send at most \(cap) tracks", limit: "tracks_per_publish")
                : RoomError(.limitReached, .invalid, "a subscription may have at most \(cap) slots", limit: "slots_per_subscription")
        }
        let key = SessionKey(room: name, participant: participant, direction: direction)
        let existing = sessions[key].flatMap { transports[$0] }
        if let t = existing, let s = t.session, s.remote.fingerprint == remote.fingerprint {
            let restart = s.remote.ufrag != remote.ufrag || s.remote.password != remote.password
            var local = s.local
            if restart { local.ice = .random() }
            let sdp = try bind(t, offer: offer, local: local, screenShareMids: screenShareMids, now: now)
            if restart {
                if let host = t.host {
                    post(.restartICE(t.id, local: local.ice, remote: remote), to: host)
                } else {
                    edge.restartICE(t.id, local: local.ice, remote: remote)
                }
                transportCounters.iceRestarts &+= 1
            } else {
                transportCounters.renegotiated &+= 1
            }
            s.local = local
            s.remote = remote
            route(t)
            return SessionAnswer(sdp: sdp, change: restart ? .iceRestarted : .renegotiated, connection: t.id)
        }
        guard pendingHandshakes < limits.pendingHandshakes else {
            throw RoomError(.limitReached, .conflict,
                            "\(limits.pendingHandshakes) handshakes are under way on this worker; retry when some finish",
                            limit: "pending_handshakes")
        }
        let id = allocateConnectionID()
        let host = direction == .subscribe ? placeSubscriber(in: room) : nil
        let local = host.map { LocalTransport(ice: .random(), fingerprint: edge.certificate.fingerprint, candidates: peerCandidates[$0]) }
            ?? edge.prepare(id)
        let t = ClientTransport(id: id, session: TransportSession(room: room, participant: participant, direction: direction, remote: remote,
                                                                  local: local), host: host, createdAt: now)
        let sdp: String
        do {
            if host == nil { try edge.attach(id, remote: remote) }
            sdp = try bind(t, offer: offer, local: local, screenShareMids: screenShareMids, now: now)
        } catch {
            if host == nil { _ = edge.remove(id, notify: false) }
            throw error
        }
        if let host { post(.host(id, local: local.ice, remote: remote), to: host) }
        transports[id] = t
        sessions[key] = id
        handshaking.insert(id)
        route(t)
        if let old = existing {
            forget(old, notify: true)  // the room already let go of it when the new one bound
            transportCounters.replaced &+= 1
        } else {
            transportCounters.created &+= 1
        }
        return SessionAnswer(sdp: sdp, change: existing == nil ? .created : .replaced, connection: id)
    }

    /// Builds the answer and binds the offer's tracks or slots to the transport in the room.
    private func bind(_ t: ClientTransport, offer: SessionDescription, local: LocalTransport, screenShareMids: Set<String>,
                      now: MonoTime) throws -> String {
        guard let s = t.session else { return "" }
        switch s.direction {
        case .publish:
            let r = try OfferAnswer.answerPublish(offer, local: local, screenShareMids: screenShareMids)
            try s.room.sessions.attachPublisher(s.participant, connection: t.id, tracks: r.tracks, now: now)
            return r.answer.text
        case .subscribe:
            var ssrcs = s.slotSSRCs
            let r = try OfferAnswer.answerSubscribe(offer, local: local, screenShareMids: screenShareMids) { mid, _, _ in
                if let known = ssrcs[mid] { return known }
                var ssrc: UInt32
                repeat { ssrc = UInt32.random(in: 0x1000_0000...0xEFFF_FFFF) } while ssrcs.values.contains(ssrc)
                ssrcs[mid] = ssrc
                return ssrc
            }
            try s.room.sessions.attachSubscriber(s.participant, connection: t.id, slots: r.slots, now: now, into: batch)
            s.slotSSRCs = [:]
            for slot in r.slots {
                s.slotSSRCs[slot.mid] = slot.ssrc
                if let rtx = slot.rtxSSRC { s.slotSSRCs[slot.mid + "/rtx"] = rtx }
            }
            return r.answer.text
        }
    }

    // MARK: Transport lifecycle

    /// What the edge reported, as inputs to the transports' lifecycles (a transport hosted here for another
    /// worker's room: passed to its home, with its keys kept here to protect what the home hands over).
    func handle(_ outputs: [WorkerEdge.Output], now: MonoTime) {
        for o in outputs {
            if let home = home(of: o) {
                post(.transport(o), to: home)
                continue
            }
            switch o {
            case .send(let bytes, let to):
                outbox.control.append((bytes, to))
            case .selected(let conn, let address):
                guard let t = transports[conn] else { continue }
                if let s = t.session {
                    schedule.touch(s.room)
                    s.room.sessions.setPath(connection: conn, s.remote.path(from: address))
                }
                advance(t, .nominated, now: now)
            case .keys(let conn, let keys):
                guard let t = transports[conn], let s = t.session else { continue }
                schedule.touch(s.room)
                transportCounters.dtlsHandshakes &+= 1
                // The path as it stands when the transport connects (the nominated pair, else the one the
                // client's checks last came from): `connected` reports it; a nomination later corrects it.
                if let agent = edge.router.agent(conn), let a = agent.currentAddress {
                    s.room.sessions.setPath(connection: conn, s.remote.path(from: a))
                }
                do {
                    try s.room.sessions.setSRTP(connection: conn, inbound: keys.inbound, outbound: keys.outbound)
                    advance(t, .keyed, now: now)
                } catch {
                    transportCounters.srtpSetupFailures &+= 1
                    advance(t, .failed(reason: "SRTP setup failed: \(error)"), notify: true, now: now)
                }
            case .state(let conn, .disconnected):
                let ms = edge.disconnectedAfter.milliseconds
                let quiet = ms % 1000 == 0 ? "\(ms / 1000)" : "\(Double(ms) / 1000)"
                guard let room = transports[conn]?.session?.room else { continue }
                schedule.touch(room)
                room.sessions.lost(conn, reason: "no ICE check for \(quiet) s")
            case .pathClosed(let conn):
                guard let room = transports[conn]?.session?.room else { continue }
                schedule.touch(room)
                room.sessions.pathClosed(conn, reason: "its ICE-TCP connection closed")
            case .state(let conn, .failed):
                guard let t = transports[conn] else { continue }
                transportCounters.consentExpiries &+= 1
                advance(t, .failed(reason: "ICE consent expired"), now: now)
            case .failed(let conn, let reason):
                transportCounters.dtlsFailures &+= 1
                if let t = transports[conn] { advance(t, .failed(reason: "DTLS failed: \(reason)"), now: now) }
            case .closed(let conn):
                guard let t = transports[conn] else { continue }
                transportCounters.closedByClient &+= 1
                advance(t, .failed(reason: "the client closed its transport (DTLS close_notify)"), now: now)
            default:
                break
            }
        }
    }

    /// Feeds an input to a transport's lifecycle and carries out what it says. `notify`: a close sends the
    /// client DTLS close_notify first.
    func advance(_ t: ClientTransport, _ input: TransportLifecycle.Input, notify: Bool = false, now: MonoTime) {
        if let room = t.session?.room { schedule.touch(room) }
        switch t.lifecycle.handle(input) {
        case .none: break
        case .settled: handshaking.remove(t.id)
        case .close(let reason):
            forget(t, notify: notify)
            t.session?.room.sessions.detach(t.id, reason: reason, now: now, into: batch)
        }
    }

    /// Transports that have not finished ICE (a nomination) and DTLS in time: closed, and the room says why.
    func closeStalledHandshakes(now: MonoTime) {
        for id in handshaking {
            guard let t = transports[id] else { continue }
            if t.host == nil, edge.wasChecked(id) { _ = t.lifecycle.handle(.checked) }
            let before = t.lifecycle.state
            advance(t, .deadline(age: now - t.lifecycle.createdAt, timeout: limits.handshakeTimeout), now: now)
            if t.lifecycle.state != before { transportCounters.handshakeTimeouts &+= 1 }
        }
    }

    /// Removes a transport from the edge and the table (DTLS close_notify first when `notify`).
    func forget(_ t: ClientTransport, notify: Bool) {
        if let host = t.host {
            post(.release(t.id, notify: notify), to: host)
        } else {
            for o in edge.remove(t.id, notify: notify) { if case .send(let bytes, let to) = o { outbox.control.append((bytes, to)) } }
        }
        _ = t.lifecycle.handle(.released)
        transports[t.id] = nil
        handshaking.remove(t.id)
        hostedUnchecked.remove(t.id)
        if let key = t.session?.key, sessions[key] == t.id { sessions[key] = nil }
    }

    /// Points the transport at its room connection, the media half its datagrams feed from now on; a
    /// transport another worker hosts writes through the hand-off to that worker.
    func route(_ t: ClientTransport) {
        guard let s = t.session else { return }
        t.media = s.room.sessions.connection(t.id)
        if let host = t.host { t.media?.egress = handoff(.send, to: host) }
    }
}
