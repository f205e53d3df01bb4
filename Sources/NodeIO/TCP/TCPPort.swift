import CNodeIO
import Glibc
import SFU
import WebRTCEdge

/// A worker's ICE-TCP port (RFC 6544 passive host candidate, RFC 4571 framing): the listening socket, the
/// connections it accepted, one epoll instance watching them, and their bounds. It is the shell's: the worker
/// thread alone calls it. What it reads goes to the worker core frame by frame as if each were a datagram from
/// the connection's remote address (`TransportAddress.isTCP`); what the core sends to such an address is
/// queued here as a frame and written once per connection per batch (one syscall for a batch's frames).
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
    private var byRemote: [TransportAddress: TCPConnection] = [:]
    private var nextToken: UInt64 = 1
    /// Connections with frames appended since the last `writePending`.
    private var dirty: [TCPConnection] = []
    private var tokens = [UInt64](repeating: 0, count: 64)
    private var bits = [UInt8](repeating: 0, count: 64)
    public private(set) var counters = TCPCounters()
    private var unauthenticated = 0

    public init(bind address: TransportAddress, limits: TCPLimits = .init()) throws(UDPSocket.Failure) {
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

    /// Whether a connection to `remote` is open (tests, metrics).
    public func isOpen(_ remote: TransportAddress) -> Bool { byRemote[remote] != nil }

    // MARK: Reading

    /// Accepts and reads what is ready, at most `budget` frames: each frame is copied into `scratch` (the
    /// media path decrypts in place) and handed to `deliver` with its length and source. `isKnown` says whether
    /// the edge now routes an address (a check passed): a connection is authenticated from then on.
    /// Returns the frames delivered.
    public func receive(budget: Int, scratch: UnsafeMutableRawBufferPointer, now: MonoTime,
                        isKnown: (TransportAddress) -> Bool,
                        deliver: (UnsafeMutableRawBufferPointer, Int, TransportAddress) -> Void) -> Int {
        let n = Int(sfu_epoll_ready(epollFD, &tokens, &bits, Int32(tokens.count), 0))
        guard n > 0 else { return 0 }
        var delivered = 0
        for k in 0..<n {
            let token = tokens[k], ready = bits[k]
            if token == 0 { accept(now: now); continue }
            guard let c = connections[token] else { continue }
            if ready & 2 != 0 { write(c, now: now) }
            guard ready & 1 != 0, connections[token] != nil else { continue }
            delivered += read(c, budget: max(1, budget - delivered), scratch: scratch, now: now, isKnown: isKnown, deliver: deliver)
        }
        return delivered
    }

    private func accept(now: MonoTime) {
        // At most a few dozen per pass: a connect storm waits in the kernel's backlog, not in this loop.
        for _ in 0..<32 {
            var peer = sfu_address()
            let fd = sfu_tcp_accept(listenFD, &peer, 0)
            guard fd >= 0 else { return }
            guard connections.count < limits.maxConnections else {
                sfu_tcp_close(fd, 1)
                counters.closed[TCPCloseReason.overCapacity.rawValue] &+= 1
                continue
            }
            if unauthenticated >= limits.maxUnauthenticated, let oldest = oldestUnauthenticated() {
                close(oldest, .unauthenticatedEvicted)
            }
            let remote = UDPSocket.transportAddress(peer).over(tcp: true)
            if let stale = byRemote[remote] { close(stale, .peerClosed) }  // the same 4-tuple again: the old one is gone
            let c = TCPConnection(fd: fd, token: nextToken, remote: remote, accepted: now, sendBufferBytes: limits.sendBufferBytes)
            nextToken &+= 1
            guard sfu_epoll_control(epollFD, 1, fd, 0, c.token) == 0 else { sfu_tcp_close(fd, 1); continue }
            connections[c.token] = c
            byRemote[remote] = c
            unauthenticated += 1
            counters.accepted &+= 1
        }
    }

    private func oldestUnauthenticated() -> TCPConnection? {
        var oldest: TCPConnection?
        for c in connections.values where !c.authenticated {
            if oldest == nil || c.accepted < oldest!.accepted { oldest = c }
        }
        return oldest
    }

    private func read(_ c: TCPConnection, budget: Int, scratch: UnsafeMutableRawBufferPointer, now: MonoTime,
                      isKnown: (TransportAddress) -> Bool,
                      deliver: (UnsafeMutableRawBufferPointer, Int, TransportAddress) -> Void) -> Int {
        var delivered = 0
        // One read per readiness when the budget is spent: level-triggered epoll reports the rest next pass.
        while delivered < budget {
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
            if !c.authenticated, isKnown(c.remote) {
                c.authenticated = true
                unauthenticated -= 1
            }
            if r < space.count { break }
        }
        return delivered
    }

    // MARK: Writing

    /// Queues one packet as a frame to the connection of `remote`; false when there is none or its buffer is
    /// full (counted).
    @discardableResult
    public func send(_ packet: UnsafeRawBufferPointer, to remote: TransportAddress, now: MonoTime) -> Bool {
        guard let c = byRemote[remote] else { counters.sendDrops &+= 1; return false }
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
    public func tick(now: MonoTime, isKnown: (TransportAddress) -> Bool) {
        var closing: [(TCPConnection, TCPCloseReason)] = []
        for c in connections.values {
            if !c.authenticated {
                if isKnown(c.remote) {
                    c.authenticated = true
                    unauthenticated -= 1
                } else if now - c.accepted >= limits.unauthenticatedTimeout {
                    closing.append((c, .unauthenticatedTimeout))
                }
            } else if !isKnown(c.remote) {
                closing.append((c, .transportGone))
            } else if let since = c.refusingSince, now - since >= limits.stallTimeout {
                closing.append((c, .stalled))
            }
        }
        for (c, reason) in closing { close(c, reason) }
    }

    /// Closes every connection (the worker stops).
    public func closeAll() {
        for c in Array(connections.values) { close(c, .shutdown) }
    }

    private func close(_ c: TCPConnection, _ reason: TCPCloseReason) {
        guard connections.removeValue(forKey: c.token) != nil else { return }
        if byRemote[c.remote] === c { byRemote[c.remote] = nil }
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
