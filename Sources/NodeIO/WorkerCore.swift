import SFU
import WebRTCEdge

/// Everything one worker does, sans-IO: its edge (ICE, DTLS), its rooms and one connection table of client
/// transports. The shell (`Worker`) feeds it datagrams, time and commands, and sends what it produces: media
/// in `batch` (to `destination(of:)`), control datagrams in `drainControl()`, events in `drainEvents()`.
/// It never reads a clock or touches a socket, so tests drive the real dispatch on virtual time.
///
/// Session model: a participant has at most one transport per direction (publish, subscribe) over its
/// life. An offer for a direction that has one is a renegotiation when the client's ICE credentials and
/// DTLS fingerprint are unchanged (no new handshake), an ICE restart when only the credentials changed, and
/// a replacement when the fingerprint changed (the client started over): the old transport is closed
/// (DTLS close_notify) and freed at once. A transport that does not finish ICE and DTLS within
/// `limits.handshakeTimeout`, whose consent expires (RFC 7675) or that the client closes is closed and
/// reported; nothing more is sent to it.
///
/// Rooms across cores: a room lives on one worker (its home), which ranks talkers, rewrites every packet and
/// keeps each connection's state and send history. Once a room has `limits.spreadRoomAfter` subscribers, a
/// new subscriber's transport may live on another worker (its host), which answers its ICE checks, runs its
/// DTLS, protects what is sent to it and owns the socket it uses: the home hands the host rewritten plain
/// packets and the host hands the home what the client sends (`handoffs`: batches written in place and
/// swapped whole), and transport events go both ways as `PeerMessage`s. A hosted listener costs its room's
/// worker the rewrite (~0.3 us) and its host the SRTP protect and the syscall (the rest, ~2 us): so a
/// 1,000-listener lecture uses every core.
public final class WorkerCore {
    public let edge: WorkerEdge
    public let index: Int
    public let limits: WorkerLimits
    public private(set) var rooms: [String: Room] = [:]
    var transports: [ConnectionID: Transport] = [:]
    var sessions: [SessionKey: ConnectionID] = [:]
    /// Transports that have not both finished DTLS and been nominated: the handshake deadline watches them.
    var unsettled: Set<ConnectionID> = []
    /// Media the rooms produced, each to a connection.
    public let batch: DatagramBatch
    public private(set) var transportCounters = TransportCounters()
    /// Media datagrams whose connection has no room any more.
    public internal(set) var ingressDrops: UInt64 = 0
    /// Datagrams of hosted transports that the handoff to their room's worker had no room for.
    public internal(set) var handoffDrops: UInt64 = 0
    /// Packets a home handed over for a transport this worker no longer hosts (released while they were on
    /// their way) or could not protect: not sent.
    public internal(set) var hostedDiscards: UInt64 = 0
    /// Counters of rooms destroyed here, so totals never go back.
    public private(set) var retired = RoomCounters()
    var control: [(bytes: [UInt8], to: TransportAddress)] = []
    private var retiredEvents: [(room: String, events: [RoomEvent])] = []
    /// Where this worker's connection ids come from (unique across workers, never reused while live).
    var connectionIDs: ConnectionIDs
    private var nextLivenessCheck = MonoTime.zero
    /// Each worker's host candidates, by worker index (this one's too): what the answer for a transport placed
    /// on that worker carries. Fewer than two: every transport stays here.
    public var peerCandidates: [[TransportAddress]] = []
    /// Batches for other workers, created on first use: one per worker and kind.
    public internal(set) var handoffs: [Handoff] = []
    var peerMessages: [(worker: Int, message: PeerMessage)] = []
    /// Transports this worker hosts for rooms on other workers, and those whose first check is unreported.
    var hosted: [ConnectionID: HostedTransport] = [:]
    var hostedUnchecked: Set<ConnectionID> = []

    /// Connection ids are unique across workers: worker i hands out i+1, i+1+1024, ... (`ConnectionIDs`).
    public init(edge: WorkerEdge, index: Int, limits: WorkerLimits = .init(), batchCapacity: Int = 4096) {
        self.edge = edge
        self.index = index
        self.limits = limits
        connectionIDs = ConnectionIDs(worker: index)
        batch = DatagramBatch(capacity: batchCapacity)
    }

    // MARK: Inputs

    /// One datagram from the worker's socket, decrypted in place when it is media. Allocates nothing on
    /// the media path. `arrival` is the kernel's receive stamp when the socket has them (see `Room.receive`).
    public func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, from source: TransportAddress, now: MonoTime,
                        arrival: MonoTime? = nil) {
        let datagram = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
        let kind = PacketClass(datagram)
        if kind == .rtp {
            // The source address finds the transport's edge row; its id finds what its media feeds here.
            guard let record = edge.mediaRecord(from: source, now: now) else { return }  // counted by the edge
            if let t = transports[record.id], let media = t.media {
                t.room.receive(buffer, length: length, from: media, now: now, arrival: arrival, into: batch)
            } else if let relay = hosted[record.id]?.relay {
                hand(datagram, of: record.id, arrival: arrival ?? now, to: relay)
            } else {
                ingressDrops &+= 1
            }
            return
        }
        handle(edge.receive(datagram, kind, from: source, now: now), now: now)
    }

    /// Runs what is due: room timers, ICE consent and DTLS retransmissions, handshake deadlines.
    public func tick(now: MonoTime) {
        for room in rooms.values where room.nextDeadline <= now { room.tick(now: now, into: batch) }
        if edge.nextDeadline <= now { handle(edge.tick(now: now), now: now) }
        if nextLivenessCheck <= now {
            nextLivenessCheck = now + .seconds(1)
            closeStalledHandshakes(now: now)
            reportHostedChecks()
        }
    }

    /// When `tick` has something to do; `.never` for an idle worker.
    /// The worker asks after every wakeup, so this visits rooms (each caches its own) and never the
    /// transports: those still handshaking are kept in `unsettled` as they change.
    public var nextDeadline: MonoTime {
        var t = edge.nextDeadline
        for room in rooms.values { t = min(t, room.nextDeadline) }
        if !unsettled.isEmpty || !hostedUnchecked.isEmpty { t = min(t, nextLivenessCheck) }
        return t
    }

    /// Where media for a connection goes: the address its client nominated, while consent holds.
    public func destination(of connection: ConnectionID) -> TransportAddress? { edge.destination(of: connection) }

    /// Control datagrams produced since the last call (STUN answers, DTLS flights, close_notify).
    public func drainControl() -> [(bytes: [UInt8], to: TransportAddress)] {
        guard !control.isEmpty else { return [] }
        defer { control.removeAll(keepingCapacity: true) }
        return control
    }

    /// Events since the last call, room by room: destroyed rooms' last events first.
    public func drainEvents() -> [(room: String, events: [RoomEvent])] {
        var out = retiredEvents
        retiredEvents.removeAll()
        for room in rooms.values where room.hasPendingEvents { out.append((room.name, room.drainEvents())) }
        return out
    }

    public var hasPendingEvents: Bool { !retiredEvents.isEmpty || rooms.values.contains { $0.hasPendingEvents } }

    // MARK: Rooms

    public func room(_ name: String) -> Room? { rooms[name] }

    public func addRoom(_ room: Room) { rooms[room.name] = room }

    /// Destroys a room: its participants are told they left, its transports are closed (DTLS close_notify).
    public func destroyRoom(_ name: String, now: MonoTime) {
        guard let room = rooms.removeValue(forKey: name) else { return }
        room.destroy(now: now)
        retiredEvents.append((name, room.drainEvents()))
        retired.add(room.counters)
        for t in transports.values where t.room === room { forget(t, notify: true) }
    }

    /// Whether a handoff's batch is over half full: the shell hands it over before the rooms write more.
    public var handoffsNeedFlush: Bool {
        for h in handoffs where h.batch.count > h.batch.capacity / 2 { return true }
        return false
    }

    /// Destroys every room (the worker stops).
    public func destroyAllRooms(now: MonoTime) {
        for name in Array(rooms.keys) { destroyRoom(name, now: now) }
    }

    /// Transports in the table (what `/metrics` calls connections).
    public var connectionCount: Int { transports.count }

    // MARK: Sessions

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

    /// Removes a participant and closes its transports; returns how many were closed.
    public func removeParticipant(room name: String, _ id: String, by: String?, now: MonoTime) throws -> Int {
        guard let room = rooms[name] else { throw NoSuchRoom(room: name) }
        let conns = room.connections(of: id)
        try room.remove(id, by: by, now: now, into: batch)
        for c in conns { if let t = transports[c] { forget(t, notify: true) } }
        return conns.count
    }

    private func negotiate(_ direction: TransportDirection, room name: String, participant: String, offer text: String,
                           screenShareMids: Set<String>, now: MonoTime) throws -> SessionAnswer {
        guard let room = rooms[name] else { throw NoSuchRoom(room: name) }
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
        if let t = existing, t.remote.fingerprint == remote.fingerprint {
            let restart = t.remote.ufrag != remote.ufrag || t.remote.password != remote.password
            var local = t.local
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
            t.local = local
            t.remote = remote
            route(t)
            return SessionAnswer(sdp: sdp, change: restart ? .iceRestarted : .renegotiated, connection: t.id)
        }
        guard pendingHandshakes < limits.pendingHandshakes else {
            throw RoomError(.limitReached, .conflict,
                            "\(limits.pendingHandshakes) handshakes are under way on this worker; retry when some finish",
                            limit: "pending_handshakes")
        }
        let id = connectionIDs.allocate { [transports, hosted] in transports[$0] != nil || hosted[$0] != nil }
        let host = direction == .subscribe ? placeSubscriber(in: room) : nil
        let local = host.map { LocalTransport(ice: .random(), fingerprint: edge.certificate.fingerprint, candidates: peerCandidates[$0]) }
            ?? edge.prepare(id)
        let t = Transport(id: id, room: room, participant: participant, direction: direction, remote: remote,
                          local: local, createdAt: now, host: host)
        let sdp: String
        do {
            if host == nil { try edge.attach(id, remote: remote) }
            sdp = try bind(t, offer: offer, local: t.local, screenShareMids: screenShareMids, now: now)
        } catch {
            if host == nil { _ = edge.remove(id, notify: false) }
            throw error
        }
        if let host { post(.host(id, local: local.ice, remote: remote), to: host) }
        transports[id] = t
        sessions[key] = id
        unsettled.insert(id)
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
    private func bind(_ t: Transport, offer: SessionDescription, local: LocalTransport, screenShareMids: Set<String>,
                      now: MonoTime) throws -> String {
        switch t.direction {
        case .publish:
            let r = try OfferAnswer.answerPublish(offer, local: local, screenShareMids: screenShareMids)
            try t.room.attachPublisher(t.participant, connection: t.id, tracks: r.tracks, now: now)
            return r.answer.text
        case .subscribe:
            var ssrcs = t.slotSSRCs
            let r = try OfferAnswer.answerSubscribe(offer, local: local, screenShareMids: screenShareMids) { mid, _, _ in
                if let s = ssrcs[mid] { return s }
                var s: UInt32
                repeat { s = UInt32.random(in: 0x1000_0000...0xEFFF_FFFF) } while ssrcs.values.contains(s)
                ssrcs[mid] = s
                return s
            }
            try t.room.attachSubscriber(t.participant, connection: t.id, slots: r.slots, now: now, into: batch)
            t.slotSSRCs = [:]
            for slot in r.slots {
                t.slotSSRCs[slot.mid] = slot.ssrc
                if let rtx = slot.rtxSSRC { t.slotSSRCs[slot.mid + "/rtx"] = rtx }
            }
            return r.answer.text
        }
    }

    // MARK: Transport lifecycle

    func handle(_ outputs: [WorkerEdge.Output], now: MonoTime) {
        for o in outputs {
            if let home = home(of: o) {
                post(.transport(o), to: home)  // a transport hosted here for a room elsewhere
                continue
            }
            switch o {
            case .send(let bytes, let to):
                control.append((bytes, to))
            case .selected(let conn, _):
                guard let t = transports[conn] else { continue }
                t.nominated = true
                settle(t)
            case .keys(let conn, let keys):
                guard let t = transports[conn] else { continue }
                transportCounters.dtlsHandshakes &+= 1
                do {
                    try t.room.setSRTP(connection: conn, inbound: keys.inbound, outbound: keys.outbound)
                    t.established = true
                    settle(t)
                } catch {
                    transportCounters.srtpSetupFailures &+= 1
                    close(t, reason: "SRTP setup failed: \(error)", notify: true, now: now)
                }
            case .state(let conn, .disconnected):
                let ms = edge.disconnectedAfter.milliseconds
                let quiet = ms % 1000 == 0 ? "\(ms / 1000)" : "\(Double(ms) / 1000)"
                transports[conn]?.room.connectionLost(conn, reason: "no ICE check for \(quiet) s")
            case .state(let conn, .failed):
                guard let t = transports[conn] else { continue }
                transportCounters.consentExpiries &+= 1
                close(t, reason: "ICE consent expired", notify: false, now: now)
            case .failed(let conn, let reason):
                transportCounters.dtlsFailures &+= 1
                if let t = transports[conn] { close(t, reason: "DTLS failed: \(reason)", notify: false, now: now) }
            case .closed(let conn):
                guard let t = transports[conn] else { continue }
                transportCounters.closedByClient &+= 1
                close(t, reason: "the client closed its transport (DTLS close_notify)", notify: false, now: now)
            default:
                break
            }
        }
    }

    /// Transports that have not finished ICE (a nomination) and DTLS in time: closed, and the room says why.
    private func closeStalledHandshakes(now: MonoTime) {
        let stalled = unsettled.compactMap { transports[$0] }.filter {
            (!$0.established || !$0.nominated) && now - $0.createdAt >= limits.handshakeTimeout
        }
        for t in stalled {
            transportCounters.handshakeTimeouts &+= 1
            let seconds = Int(limits.handshakeTimeout.seconds)
            let checked = t.host == nil ? edge.wasChecked(t.id) : t.checked
            let why = !checked ? "no ICE connectivity check within \(seconds) s"
                : !t.established ? "DTLS did not complete within \(seconds) s" : "no ICE nomination within \(seconds) s"
            close(t, reason: why, notify: false, now: now)
        }
    }

    /// Closes a transport whose participant stays: the room releases what it fed and reports `reason`.
    private func close(_ t: Transport, reason: String, notify: Bool, now: MonoTime) {
        forget(t, notify: notify)
        t.room.detachConnection(t.id, reason: reason, now: now, into: batch)
    }

    /// Removes a transport from the edge and the table (DTLS close_notify first when `notify`).
    private func forget(_ t: Transport, notify: Bool) {
        if let host = t.host {
            post(.release(t.id, notify: notify), to: host)
        } else {
            for o in edge.remove(t.id, notify: notify) { if case .send(let bytes, let to) = o { control.append((bytes, to)) } }
        }
        transports[t.id] = nil
        unsettled.remove(t.id)
        if sessions[t.key] == t.id { sessions[t.key] = nil }
    }

    /// Points the transport's edge row at its room connection: where its media goes from now on.
    private func route(_ t: Transport) {
        if let host = t.host {
            t.room.connection(t.id)?.egress = handoff(.send, to: host)
            return
        }
        t.media = t.room.connection(t.id)
    }

    private func settle(_ t: Transport) {
        if t.established && t.nominated { unsettled.remove(t.id) }
    }
}
