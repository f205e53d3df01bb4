import CNodeIO
import Glibc
import SFU
import WebRTCEdge

/// A worker's ICE-TCP port (RFC 6544 passive host candidate, RFC 4571 framing): the listening socket, the
/// connections it accepted, one epoll instance watching them, and their bounds. It is the shell's: the worker
/// thread alone calls it. What it reads goes to the worker core frame by frame as if each were a datagram from
/// the connection's address - its remote end with `isTCP` and the connection's own number
/// (`TransportAddress.connection`); what the core sends to such an address is queued here as a frame and
/// written once per connection per batch (one syscall for a batch's frames).
///
/// Each connection is a candidate pair of its own (RFC 6544): it is authenticated by a check that came on it,
/// never by its IP and port, and what it proved ends with it - a connection that closes is reported
/// (`takeClosed`) so the edge forgets its address, and a new connection from the same IP and port, after a
/// reset, has another number and must pass a check of its own before anything is sent to it.
///
/// Nothing a client does here can cost the others more than its share: connections and silent ones are
/// capped, a silent one is closed after seconds, a slow reader's frames are dropped past its buffer and the
/// connection closed when it stays stuck, a connection whose transport is gone is closed.
public final class TCPPort {
    public let local: TransportAddress
    public let limits: TCPLimits
    let listenFD: Int32
    let epollFD: Int32
    private var connections: [UInt64: TCPConnection] = [:]
    /// The open connection of each remote IP and port (one at a time: a 4-tuple is unique while it lives).
    private var byPeer: [TransportAddress: TCPConnection] = [:]
    /// Addresses of connections closed since `takeClosed`: what they proved must be forgotten.
    private var closedAddresses: [TransportAddress] = []
    private var nextToken: UInt64 = 1
    /// Connections with frames appended since the last `writePending`.
    private var dirty: [TCPConnection] = []
    private var tokens = [UInt64](repeating: 0, count: 64)
    private var bits = [UInt8](repeating: 0, count: 64)
    public private(set) var counters = TCPCounters()
    private var unauthenticated = 0
    /// The listener is out of the epoll set after the node ran out of descriptors (it would be readable on
    /// every pass while connections wait in its backlog); `tick` puts it back.
    private var listenerResting = false

    /// Raises the process's descriptor limit to its hard limit, once: every ICE-TCP connection is a
    /// descriptor (Debian's default soft limit is 1,024). Returns the limit in force.
    public static let descriptorLimit: Int = Int(sfu_raise_descriptor_limit())

    public init(bind address: TransportAddress, limits: TCPLimits = .init()) throws(UDPSocket.Failure) {
        _ = Self.descriptorLimit
        var requested = UDPSocket.cAddress(address)
        var bound = sfu_address()
        let fd = sfu_tcp_listen(&requested, &bound, 1024)
        guard fd >= 0 else { throw UDPSocket.Failure(operation: "listen tcp \(address)", errno: -fd) }
        let ep = sfu_epoll_open()
        guard ep >= 0 else { Glibc.close(fd); throw UDPSocket.Failure(operation: "epoll_create1", errno: -ep) }
        guard sfu_epoll_control(ep, 1, fd, 0, 0) == 0 else {
            Glibc.close(fd); Glibc.close(ep)
            throw UDPSocket.Failure(operation: "epoll_ctl", errno: errno)
        }
        listenFD = fd
        epollFD = ep
        local = UDPSocket.transportAddress(bound).over(tcp: true)
        self.limits = limits
    }

    deinit {
        for c in connections.values { sfu_tcp_close(c.fd, 1) }
        Glibc.close(listenFD)
        Glibc.close(epollFD)
    }

    /// The descriptor the worker's wait watches: readable when a connection or the listener is ready.
    public var descriptor: Int32 { epollFD }

    public var connectionCount: Int { connections.count }

    /// Whether a connection from `remote` (its IP and port, any connection number) is open (tests, metrics).
    public func isOpen(_ remote: TransportAddress) -> Bool { byPeer[remote.on(connection: 0)] != nil }

    /// The address of the open connection from `remote` (its IP and port): what the edge knows it by (tests).
    public func address(of remote: TransportAddress) -> TransportAddress? { byPeer[remote.on(connection: 0)]?.remote }

    /// The addresses of the connections closed since the last call, each once: the worker tells the edge, whose
    /// checks on them are void from now on (a closed connection's path is gone, its number never comes back).
    public func takeClosed() -> [TransportAddress] {
        guard !closedAddresses.isEmpty else { return [] }
        defer { closedAddresses.removeAll(keepingCapacity: true) }
        return closedAddresses
    }

    // MARK: Reading

    /// Accepts and reads what is ready, within `budget` (frames delivered, plus one per read, so bad frames and
    /// empty reads count too): each frame is copied into `scratch` (the media path decrypts in place) and handed
    /// to `deliver` with its length and source. `transportOf` says which transport the edge now routes an address
    /// to (a check passed): a connection is authenticated from then on. Returns the work done.
    public func receive(budget: Int, scratch: UnsafeMutableRawBufferPointer, now: MonoTime,
                        transportOf: (TransportAddress) -> ConnectionID?,
                        deliver: (UnsafeMutableRawBufferPointer, Int, TransportAddress) -> Void) -> Int {
        let n = Int(sfu_epoll_ready(epollFD, &tokens, &bits, Int32(tokens.count), 0))
        guard n > 0 else { return 0 }
        var work = 0
        for k in 0..<n {
            let token = tokens[k], ready = bits[k]
            if token == 0 {
                // A new connection's first check is usually there already: read it at once, so it is known
                // before the next connect storm could evict it as silent.
                for c in accept(now: now) where work < budget {
                    work += read(c, budget: budget - work, scratch: scratch, now: now, transportOf: transportOf, deliver: deliver)
                }
                continue
            }
            guard let c = connections[token] else { continue }
            if ready & 2 != 0 { write(c, now: now) }
            guard ready & 1 != 0, connections[token] != nil, work < budget else { continue }
            work += read(c, budget: budget - work, scratch: scratch, now: now, transportOf: transportOf, deliver: deliver)
        }
        return work
    }

    private func accept(now: MonoTime) -> [TCPConnection] {
        var accepted: [TCPConnection] = []
        // At most a few dozen per pass: a connect storm waits in the kernel's backlog, not in this loop.
        for _ in 0..<32 {
            var peer = sfu_address()
            let fd = sfu_tcp_accept(listenFD, &peer, 0)
            guard fd >= 0 else {
                if fd == -EMFILE || fd == -ENFILE {
                    // Out of descriptors: the waiting connection stays in the backlog and the listener readable,
                    // which would spin the worker. It rests until the next tick.
                    counters.closed[TCPCloseReason.noDescriptors.rawValue] &+= 1
                    if sfu_epoll_control(epollFD, 3, listenFD, 0, 0) == 0 { listenerResting = true }
                }
                return accepted
            }
            if connections.count >= limits.maxConnections {
                // Full: a connection still waiting for its check makes room, else the new one is refused.
                guard let oldest = oldestUnauthenticated() else {
                    sfu_tcp_close(fd, 1)
                    counters.closed[TCPCloseReason.overCapacity.rawValue] &+= 1
                    continue
                }
                close(oldest, .unauthenticatedEvicted)
            } else if unauthenticated >= limits.maxUnauthenticated, let oldest = oldestUnauthenticated() {
                close(oldest, .unauthenticatedEvicted)
            }
            let peerAddress = UDPSocket.transportAddress(peer).over(tcp: true)
            if let stale = byPeer[peerAddress] { close(stale, .peerClosed) }  // the same 4-tuple again: the old one is gone
            let token = nextToken
            nextToken &+= 1
            let c = TCPConnection(fd: fd, token: token, remote: peerAddress.on(connection: token), accepted: now,
                                  sendBufferBytes: limits.sendBufferBytes)
            guard sfu_epoll_control(epollFD, 1, fd, 0, c.token) == 0 else { sfu_tcp_close(fd, 1); continue }
            connections[c.token] = c
            byPeer[peerAddress] = c
            unauthenticated += 1
            counters.accepted &+= 1
            accepted.append(c)
        }
        return accepted
    }

    /// `c` passed a check for transport `t`. A transport keeps `limits.perTransport` connections: past it (a
    /// client opening many with the same credentials) the oldest of them is closed.
    private func authenticate(_ c: TCPConnection, _ t: ConnectionID) {
        c.authenticated = true
        c.transport = t
        unauthenticated -= 1
        var same: [TCPConnection] = []
        for o in connections.values where o.transport == t { same.append(o) }
        guard same.count > limits.perTransport else { return }
        same.sort { $0.accepted < $1.accepted || ($0.accepted == $1.accepted && $0.token < $1.token) }
        for o in same.prefix(same.count - limits.perTransport) { close(o, .transportExcess) }
    }

    private func oldestUnauthenticated() -> TCPConnection? {
        var oldest: TCPConnection?
        for c in connections.values where !c.authenticated {
            if oldest == nil || c.accepted < oldest!.accepted { oldest = c }
        }
        return oldest
    }

    private func read(_ c: TCPConnection, budget: Int, scratch: UnsafeMutableRawBufferPointer, now: MonoTime,
                      transportOf: (TransportAddress) -> ConnectionID?,
                      deliver: (UnsafeMutableRawBufferPointer, Int, TransportAddress) -> Void) -> Int {
        var delivered = 0
        // Each read costs one beside its frames; the budget spent, level-triggered epoll reports the rest next
        // pass. Every whole frame of a read is taken before the next read (a frame left buffered could leave
        // `space` nothing to read into).
        while delivered < budget {
            delivered += 1
            let space = c.reader.space()
            let r = Int(sfu_tcp_read(c.fd, space.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(space.count)))
            if r == -Int(EAGAIN) || r == -Int(EWOULDBLOCK) || r == -Int(EINTR) { break }
            if r <= 0 { close(c, .peerClosed); return delivered }
            counters.bytesIn &+= UInt64(r)
            c.reader.received(r)
            let badBefore = c.reader.oversizedFrames &+ c.reader.emptyFrames
            while let frame = c.reader.next() {
                let n = min(frame.count, scratch.count)
                scratch.baseAddress!.copyMemory(from: frame.baseAddress!, byteCount: n)
                deliver(scratch, n, c.remote)
                delivered += 1
                counters.framesIn &+= 1
                // The connection may have been closed by what the frame did (never today; cheap to check).
                if connections[c.token] == nil { return delivered }
            }
            counters.badFrames &+= (c.reader.oversizedFrames &+ c.reader.emptyFrames) &- badBefore
            if !c.authenticated, let t = transportOf(c.remote) { authenticate(c, t) }
            if connections[c.token] == nil { return delivered }
            if r < space.count { break }
        }
        return delivered
    }

    // MARK: Writing

    /// Queues one packet as a frame to the connection `remote` names (its number, and its IP and port); false
    /// when that connection is closed or its buffer is full (counted). Another connection from the same IP and
    /// port is not it.
    @discardableResult
    public func send(_ packet: UnsafeRawBufferPointer, to remote: TransportAddress, now: MonoTime) -> Bool {
        guard let c = connections[remote.connection], c.remote == remote else { counters.sendDrops &+= 1; return false }
        guard c.writer.append(packet) else {
            counters.sendDrops &+= 1
            if c.refusingSince == nil { c.refusingSince = now }
            return false
        }
        counters.framesOut &+= 1
        if !c.dirty {
            c.dirty = true
            dirty.append(c)
        }
        return true
    }

    /// Writes what the connections queued since the last call: one write per connection.
    public func writePending(now: MonoTime) {
        guard !dirty.isEmpty else { return }
        for c in dirty {
            c.dirty = false
            if connections[c.token] != nil { write(c, now: now) }
        }
        dirty.removeAll(keepingCapacity: true)
    }

    private func write(_ c: TCPConnection, now: MonoTime) {
        while !c.writer.isEmpty {
            let p = c.writer.pending
            let r = Int(sfu_tcp_write(c.fd, p.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(p.count)))
            if r > 0 {
                counters.bytesOut &+= UInt64(r)
                c.writer.consumed(r)
                continue
            }
            if r == -Int(EAGAIN) || r == -Int(EWOULDBLOCK) || r == -Int(EINTR) { break }
            close(c, .peerClosed)
            return
        }
        if c.writer.isEmpty { c.refusingSince = nil }
        // Writability is watched only while frames wait: otherwise every pass would wake for every connection.
        let want = !c.writer.isEmpty
        if want != c.watchingWrites, sfu_epoll_control(epollFD, 2, c.fd, want ? 1 : 0, c.token) == 0 {
            c.watchingWrites = want
        }
    }

    // MARK: Time

    /// Closes silent connections past their time, slow readers stuck past theirs, and connections whose
    /// address no transport uses any more. Call about once a second.
    public func tick(now: MonoTime, transportOf: (TransportAddress) -> ConnectionID?) {
        if listenerResting, sfu_epoll_control(epollFD, 1, listenFD, 0, 0) == 0 { listenerResting = false }
        var closing: [(TCPConnection, TCPCloseReason)] = []
        var authenticating: [(TCPConnection, ConnectionID)] = []
        for c in connections.values {
            if !c.authenticated {
                if let t = transportOf(c.remote) {
                    authenticating.append((c, t))
                } else if now - c.accepted >= limits.unauthenticatedTimeout {
                    closing.append((c, .unauthenticatedTimeout))
                }
            } else if transportOf(c.remote) == nil {
                closing.append((c, .transportGone))
            } else if let since = c.refusingSince, now - since >= limits.stallTimeout {
                closing.append((c, .stalled))
            }
        }
        for (c, reason) in closing { close(c, reason) }
        for (c, t) in authenticating where connections[c.token] != nil && !c.authenticated { authenticate(c, t) }
    }

    /// Closes every connection (the worker stops).
    public func closeAll() {
        for c in Array(connections.values) { close(c, .shutdown) }
    }

    private func close(_ c: TCPConnection, _ reason: TCPCloseReason) {
        guard connections.removeValue(forKey: c.token) != nil else { return }
        let peerAddress = c.remote.on(connection: 0)
        if byPeer[peerAddress] === c { byPeer[peerAddress] = nil }
        closedAddresses.append(c.remote)
        if !c.authenticated { unauthenticated -= 1 }
        _ = sfu_epoll_control(epollFD, 3, c.fd, 0, c.token)
        // A peer that closed gets a normal close; one the node gives up on gets a reset (no lingering state).
        sfu_tcp_close(c.fd, reason == .peerClosed || reason == .shutdown ? 0 : 1)
        counters.closed[reason.rawValue] &+= 1
    }

    /// The counters with the current gauges.
    public var snapshot: TCPCounters {
        var s = counters
        s.open = connections.count
        s.unauthenticated = unauthenticated
        return s
    }
}
