import SFU

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

    private var byUfrag: [String: ConnectionID] = [:]
    private var agents: [ConnectionID: ICELiteAgent] = [:]
    private var byAddress: [TransportAddress: ConnectionID] = [:]
    public private(set) var drops = [Int](repeating: 0, count: EdgeDropReason.allCases.count)

    public init() {}

    public func add(_ connection: ConnectionID, agent: ICELiteAgent) {
        agents[connection] = agent
        byUfrag[agent.local.ufrag] = connection
    }

    public func remove(_ connection: ConnectionID) {
        guard let agent = agents.removeValue(forKey: connection) else { return }
        byUfrag[agent.local.ufrag] = nil
        for a in agent.validatedAddresses where byAddress[a] == connection { byAddress[a] = nil }
        agent.close()
    }

    public func agent(_ connection: ConnectionID) -> ICELiteAgent? { agents[connection] }

    /// New credentials for an agent (ICE restart): its checks are found by the new ufrag from now on.
    public func restart(_ connection: ConnectionID, local: ICECredentials, remoteUfrag: String) {
        guard let agent = agents[connection] else { return }
        byUfrag[agent.local.ufrag] = nil
        agent.restart(local: local, remoteUfrag: remoteUfrag)
        byUfrag[local.ufrag] = connection
    }

    /// Connections routed here.
    public var count: Int { agents.count }

    public func drops(_ r: EdgeDropReason) -> Int { drops[r.rawValue] }

    private func drop(_ r: EdgeDropReason) -> Route {
        drops[r.rawValue] += 1
        return .dropped(r)
    }

    public func route(_ datagram: UnsafeRawBufferPointer, from: TransportAddress, now: MonoTime) -> Route {
        switch PacketClass(datagram) {
        case .stun:
            let m: STUNMessage
            switch STUNMessage.parse(datagram) {
            case .success(let parsed): m = parsed
            case .failure(let r): return drop(r)
            }
            let owner: ConnectionID? = {
                if let u = m.usernameString(in: datagram), let colon = u.firstIndex(of: ":") {
                    return byUfrag[String(u[..<colon])]
                }
                return byAddress[from]
            }()
            guard let conn = owner, let agent = agents[conn] else { return drop(.stunUnknownUsername) }
            switch agent.handle(m, datagram, from: from, now: now) {
            case .success(let response):
                if agent.isValidated(from, now: now) { byAddress[from] = conn }
                return .reply(response, connection: conn)
            case .failure(let r):
                return drop(r)
            }
        case .dtls, .rtp:
            guard let conn = byAddress[from], let agent = agents[conn], agent.isValidated(from, now: now) else {
                return drop(.unvalidatedAddress)
            }
            return PacketClass(datagram) == .dtls ? .dtls(conn) : .media(conn)
        case .unknown:
            return drop(.unknownPacketClass)
        }
    }

    /// Runs every agent's consent bookkeeping; forgets the addresses of failed connections.
    /// ICE timeouts are 10 s and 30 s: the agents are checked once a second, not at each agent's own deadline
    /// (finding the earliest of thousands on every loop of a worker cost more than the media).
    public var tickInterval = MonoTime.Interval.seconds(1)
    private var nextTick = MonoTime.zero

    public func tick(now: MonoTime) {
        nextTick = now + tickInterval
        for (conn, agent) in agents {
            agent.tick(now: now)
            if agent.state == .failed {
                for a in agent.validatedAddresses where byAddress[a] == conn { byAddress[a] = nil }
            }
        }
        for (a, conn) in byAddress where agents[conn]?.isValidated(a, now: now) != true { byAddress[a] = nil }
    }

    public var nextDeadline: MonoTime { agents.isEmpty ? .never : nextTick }
}
