import SFUBase

/// Demultiplexes the datagrams of one UDP port shared by every client of a worker (RFC 7983): a client is
/// found by ICE username on first contact and by its source address once that address has passed a check.
/// Anything from an address that has not passed a check is dropped and counted, never decrypted.
public final class EdgeRouter {
    public enum Route: Equatable {
        /// A STUN response to send back to the source.
        case reply([UInt8], connection: ConnectionID)
        /// DTLS from a validated address of the connection.
        case dtls(ConnectionID)
        /// RTP or RTCP from a validated address of the connection.
        case media(ConnectionID)
        case dropped(EdgeDropReason)
    }

    private var byUfrag: [String: EdgeConnection] = [:]
    private var records: [ConnectionID: EdgeConnection] = [:]
    /// Validated source address -> its transport: the one lookup of the media path.
    private var byAddress: [TransportAddress: EdgeConnection] = [:]
    public private(set) var drops = [Int](repeating: 0, count: EdgeDropReason.allCases.count)

    public init() {}

    /// Routes a new transport's checks to `agent`; returns its row.
    @discardableResult
    public func add(_ connection: ConnectionID, agent: ICELiteAgent) -> EdgeConnection {
        let record = EdgeConnection(id: connection, agent: agent)
        records[connection] = record
        byUfrag[agent.local.ufrag] = record
        return record
    }

    public func remove(_ connection: ConnectionID) {
        guard let record = records.removeValue(forKey: connection) else { return }
        byUfrag[record.agent.local.ufrag] = nil
        for a in record.agent.validatedAddresses where byAddress[a] === record { byAddress[a] = nil }
        record.agent.close()
        record.keyed = false
    }

    public func agent(_ connection: ConnectionID) -> ICELiteAgent? { records[connection]?.agent }

    /// Every row (timers and metrics).
    public var connections: Dictionary<ConnectionID, EdgeConnection>.Values { records.values }

    /// The row of a connection (control paths; the media path finds it by address).
    public func record(_ connection: ConnectionID) -> EdgeConnection? { records[connection] }

    /// New credentials for an agent (ICE restart): its checks are found by the new ufrag from now on.
    public func restart(_ connection: ConnectionID, local: ICECredentials, remoteUfrag: String) {
        guard let record = records[connection] else { return }
        byUfrag[record.agent.local.ufrag] = nil
        record.agent.restart(local: local, remoteUfrag: remoteUfrag)
        byUfrag[local.ufrag] = record
    }

    /// A path that closed (an ICE-TCP connection, RFC 6544): nothing is routed by its address any more and the
    /// checks it passed are void. Returns the row it routed to. (A connection checked with two transports'
    /// credentials routes to the last; the other's checks on it die with its consent - its number never returns.)
    public func forget(_ address: TransportAddress) -> EdgeConnection? {
        guard let record = byAddress.removeValue(forKey: address) else { return nil }
        record.agent.forget(address)
        return record
    }

    /// Connections routed here.
    public var count: Int { records.count }

    public func drops(_ r: EdgeDropReason) -> Int { drops[r.rawValue] }

    private func drop(_ r: EdgeDropReason) -> Route {
        drops[r.rawValue] += 1
        return .dropped(r)
    }

    public func route(_ datagram: UnsafeRawBufferPointer, from: TransportAddress, now: MonoTime) -> Route {
        route(datagram, PacketClass(datagram), from: from, now: now)
    }

    /// `route` for a datagram the caller has classified already (RFC 7983: classified once per datagram).
    public func route(_ datagram: UnsafeRawBufferPointer, _ kind: PacketClass, from: TransportAddress, now: MonoTime) -> Route {
        switch kind {
        case .stun:
            let m: STUNMessage
            switch STUNMessage.parse(datagram) {
            case .success(let parsed): m = parsed
            case .failure(let r): return drop(r)
            }
            let owner: EdgeConnection? = {
                if let u = m.usernameString(in: datagram), let colon = u.firstIndex(of: ":") {
                    return byUfrag[String(u[..<colon])]
                }
                return byAddress[from]
            }()
            guard let record = owner else { return drop(.stunUnknownUsername) }
            switch record.agent.handle(m, datagram, from: from, now: now) {
            case .success(let response):
                if record.agent.isValidated(from, now: now) { byAddress[from] = record }
                return .reply(response, connection: record.id)
            case .failure(let r):
                return drop(r)
            }
        case .dtls, .rtp:
            guard let record = validated(from, now: now) else { return drop(.unvalidatedAddress) }
            return kind == .dtls ? .dtls(record.id) : .media(record.id)
        case .unknown:
            return drop(.unknownPacketClass)
        }
    }

    /// The media path: the row of the transport whose validated address sent an RTP/RTCP datagram, or nil,
    /// counted as `unvalidatedAddress`. One table lookup; allocates nothing.
    public func mediaRecord(from: TransportAddress, now: MonoTime) -> EdgeConnection? {
        guard let record = validated(from, now: now) else {
            drops[EdgeDropReason.unvalidatedAddress.rawValue] += 1
            return nil
        }
        return record
    }

    /// Whether datagrams from `address` reach a transport now (it passed a check and consent holds).
    public func routes(_ address: TransportAddress, now: MonoTime) -> Bool { validated(address, now: now) != nil }

    /// The transport datagrams from `address` reach now, if any.
    public func transport(of address: TransportAddress, now: MonoTime) -> ConnectionID? { validated(address, now: now)?.id }

    private func validated(_ from: TransportAddress, now: MonoTime) -> EdgeConnection? {
        guard let record = byAddress[from], record.agent.isValidated(from, now: now) else { return nil }
        return record
    }

    /// Runs every agent's consent bookkeeping; forgets the addresses of failed connections.
    /// ICE timeouts are 10 s and 30 s: the agents are checked once a second, not at each agent's own deadline
    /// (finding the earliest of thousands on every loop of a worker cost more than the media).
    public var tickInterval = MonoTime.Interval.seconds(1)
    private var nextTick = MonoTime.zero

    public func tick(now: MonoTime) {
        nextTick = now + tickInterval
        for record in records.values {
            record.agent.tick(now: now)
            if record.agent.state == .failed {
                for a in record.agent.validatedAddresses where byAddress[a] === record { byAddress[a] = nil }
            }
        }
        for (a, record) in byAddress where !record.agent.isValidated(a, now: now) { byAddress[a] = nil }
    }

    public var nextDeadline: MonoTime { records.isEmpty ? .never : nextTick }
}
