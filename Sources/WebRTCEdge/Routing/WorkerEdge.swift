import SFUBase

/// Everything between a worker's UDP socket and its rooms, sans-IO: the port router, each connection's
/// ICE-lite agent and DTLS server. The node feeds it datagrams and time; it answers with datagrams to send,
/// SRTP keys to install in the room, media to hand to the room, and connection state changes.
public final class WorkerEdge {
    public enum Output: Equatable, Sendable {
        case send([UInt8], to: TransportAddress)
        /// DTLS finished: install these keys on the connection (`RoomSessions.setSRTP`).
        case keys(ConnectionID, DTLSEndpoint.SRTPKeys)
        /// The datagram is RTP/RTCP of this connection: pass it to its room.
        case media(ConnectionID)
        case state(ConnectionID, ICEState)
        case selected(ConnectionID, TransportAddress)
        case failed(ConnectionID, String)
        /// The client closed its DTLS association (close_notify): it said goodbye.
        case closed(ConnectionID)
        /// The selected path's connection closed (ICE-TCP): nothing is sent until the client nominates another;
        /// consent runs on.
        case pathClosed(ConnectionID)
    }

    public let certificate: DTLSCertificate
    /// One OpenSSL context for every connection of the worker.
    public let dtlsContext: DTLSContext
    public var candidates: [TransportAddress]
    /// First DTLS retransmission timeout (1 s by RFC 6347; tests shorten it).
    public var dtlsInitialTimeout: MonoTime.Interval = .seconds(1)
    /// ICE consent lifetime of new connections (RFC 7675 section 5.1: 30 s; tests shorten it).
    public var consentTimeout: MonoTime.Interval = .seconds(30)
    /// How long without a valid check before a connection is reported disconnected (consent may be lapsing):
    /// 10 s, or a third of a shorter consent lifetime.
    public var disconnectedAfter: MonoTime.Interval { min(.seconds(10), .init(nanoseconds: consentTimeout.nanoseconds / 3)) }
    public let router = EdgeRouter()
    private var pending: [ConnectionID: ICELiteAgent] = [:]
    /// Connections whose DTLS handshake is under way: the only ones with retransmission timers.
    private var handshaking: Set<ConnectionID> = []

    public init(certificate: DTLSCertificate, candidates: [TransportAddress]) {
        self.certificate = certificate
        self.candidates = candidates
        // Creating a context fails only if OpenSSL cannot take the node's own certificate and key.
        do { dtlsContext = try DTLSContext(role: .server, certificate: certificate) } catch {
            preconditionFailure("the node's DTLS certificate cannot make a context: \(error)")
        }
    }

    /// Connections prepared or still handshaking: what a client can make the worker hold without
    /// finishing (`limits.pending_handshakes`).
    public var pendingHandshakes: Int { pending.count + handshaking.count }

    /// Whether the connection's DTLS handshake is under way (it counts in `pendingHandshakes`).
    public func isHandshaking(_ connection: ConnectionID) -> Bool { handshaking.contains(connection) }

    /// Fresh ICE credentials for a new connection: what its SDP answer carries. `local` is given when another
    /// worker wrote the answer (a transport this worker hosts for a room elsewhere).
    public func prepare(_ connection: ConnectionID, local: ICECredentials = .random()) -> LocalTransport {
        let agent = ICELiteAgent(local: local)
        agent.consentTimeout = consentTimeout
        agent.disconnectedAfter = disconnectedAfter
        pending[connection] = agent
        return LocalTransport(ice: agent.local, fingerprint: certificate.fingerprint, candidates: candidates)
    }

    /// Binds the client's transport parameters from its offer; from now on its checks are answered.
    public func attach(_ connection: ConnectionID, remote: RemoteTransport) throws {
        guard let agent = pending.removeValue(forKey: connection) else {
            throw DTLSError.setup("connection \(connection) was not prepared")
        }
        agent.remoteUfrag = remote.ufrag
        let record = router.add(connection, agent: agent)
        do {
            record.dtls = try DTLSEndpoint(context: dtlsContext, remoteFingerprint: remote.fingerprint,
                                           initialRetransmitTimeout: dtlsInitialTimeout)
        } catch {
            router.remove(connection)
            throw error
        }
        handshaking.insert(connection)
    }

    /// An ICE restart on a connection (RFC 8445 section 9): the client's new credentials and the node's own
    /// new ones, which its answer carries. DTLS and SRTP go on untouched.
    public func restartICE(_ connection: ConnectionID, local: ICECredentials, remote: RemoteTransport) {
        router.restart(connection, local: local, remoteUfrag: remote.ufrag)
    }

    /// Whether the client ever passed a connectivity check (to tell why a handshake never finished).
    public func wasChecked(_ connection: ConnectionID) -> Bool {
        (router.agent(connection)?.checksAnswered ?? 0) > 0
    }

    /// Forgets a connection (participant left, room destroyed, transport replaced); sends DTLS close_notify
    /// if it was up and `notify` (not to a client whose consent expired: RFC 7675 section 5.1 says stop).
    public func remove(_ connection: ConnectionID, notify: Bool = true) -> [Output] {
        var out: [Output] = []
        if let r = router.record(connection), let d = r.dtls {
            r.dtls = nil
            if notify, let to = destination(of: connection) { out += d.close().map { .send($0, to: to) } }
        }
        router.remove(connection)
        pending[connection] = nil
        handshaking.remove(connection)
        return out
    }

    /// Where the room's datagrams for `connection` go: the address the client nominated last, while its
    /// consent holds (a failed or closed agent gets nothing more).
    public func destination(of connection: ConnectionID) -> TransportAddress? {
        guard let agent = router.agent(connection), agent.state != .failed, agent.state != .closed else { return nil }
        return agent.selected
    }

    /// The hot path: the row of the transport an RTP/RTCP datagram belongs to, if its source passed ICE and
    /// its DTLS is done; nil (counted) otherwise. One lookup; allocates nothing. Other datagrams go to `receive`.
    public func mediaRecord(from: TransportAddress, now: MonoTime) -> EdgeConnection? {
        guard let record = router.mediaRecord(from: from, now: now) else { return nil }
        guard record.keyed else {
            mediaBeforeKeys += 1
            return nil
        }
        return record
    }

    /// Whether `address` (a TCP connection's remote end, say) carries a transport now: it passed an ICE check
    /// and its consent holds.
    public func routes(_ address: TransportAddress, now: MonoTime) -> Bool { router.routes(address, now: now) }

    /// The transport `address` carries now (it passed a check and consent holds), if any.
    public func transport(of address: TransportAddress, now: MonoTime) -> ConnectionID? { router.transport(of: address, now: now) }

    /// The shell closed the connection of `address` (an ICE-TCP connection, RFC 6544: a candidate pair of its
    /// own): its checks no longer count, and a transport that had it selected has no path until its client
    /// nominates another.
    public func pathClosed(_ address: TransportAddress) -> [Output] {
        guard let record = router.forget(address) else { return [] }
        return agentEvents(record.id)
    }

    /// Datagrams the edge dropped, by reason (the router's, plus media that arrived before DTLS was done).
    public var drops: [(reason: String, count: Int)] {
        EdgeDropReason.allCases.map { ($0.description, router.drops($0)) } + [("media_before_dtls", mediaBeforeKeys)]
    }

    private var mediaBeforeKeys = 0

    public func receive(_ datagram: UnsafeRawBufferPointer, from: TransportAddress, now: MonoTime) -> [Output] {
        receive(datagram, PacketClass(datagram), from: from, now: now)
    }

    /// `receive` for a datagram the caller has classified already.
    public func receive(_ datagram: UnsafeRawBufferPointer, _ kind: PacketClass, from: TransportAddress, now: MonoTime) -> [Output] {
        var out: [Output] = []
        switch router.route(datagram, kind, from: from, now: now) {
        case .reply(let bytes, let conn):
            out.append(.send(bytes, to: from))
            out += agentEvents(conn)
        case .dtls(let conn):
            guard let r = router.record(conn), let d = r.dtls else { break }
            let wasConnected = r.keyed
            out += d.receive(datagram, now: now).map { .send($0, to: from) }
            out += dtlsOutcome(r, d, wasConnected: wasConnected)
        case .media(let conn):
            if router.record(conn)?.keyed == true { out.append(.media(conn)) } else { mediaBeforeKeys += 1 }
        case .dropped:
            break  // counted by the router
        }
        return out
    }

    public func tick(now: MonoTime) -> [Output] {
        var out: [Output] = []
        if now >= router.nextDeadline {
            router.tick(now: now)
            for r in router.connections where r.dtls != nil { out += agentEvents(r.id) }
        }
        for conn in handshaking {
            guard let r = router.record(conn), let d = r.dtls, now >= d.nextDeadline,
                  let to = r.agent.selected ?? r.agent.validatedAddresses.first else { continue }
            out += d.tick(now: now).map { .send($0, to: to) }
            out += dtlsOutcome(r, d, wasConnected: false)
        }
        return out
    }

    public var nextDeadline: MonoTime {
        handshaking.reduce(router.nextDeadline) { m, conn in min(m, router.record(conn)?.dtls?.nextDeadline ?? .never) }
    }

    private func agentEvents(_ conn: ConnectionID) -> [Output] {
        (router.agent(conn)?.drainEvents() ?? []).map {
            switch $0 {
            case .stateChanged(let s): .state(conn, s)
            case .selectedAddressChanged(let a): .selected(conn, a)
            case .selectedPathClosed: .pathClosed(conn)
            }
        }
    }

    private func dtlsOutcome(_ r: EdgeConnection, _ d: DTLSEndpoint, wasConnected: Bool) -> [Output] {
        let conn = r.id
        if d.state != .handshaking && d.state != .new { handshaking.remove(conn) }
        r.updateKeyed()
        switch d.state {
        case .connected where !wasConnected: return d.keys.map { [.keys(conn, $0)] } ?? []
        case .failed(let reason): r.dtls = nil; r.keyed = false; return [.failed(conn, reason)]
        case .closed: return [.closed(conn)]
        default: return []
        }
    }
}
