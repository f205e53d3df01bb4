import CNodeIO
import Foundation
import SFU
import WebRTCEdge

/// The worker's relay ends (issue 25; `WorkerRelays`): each has a UDP socket of its own that only
/// receives (what the peer relays, and its feedback on what this node relays); everything the end sends
/// leaves from the worker's media socket with the rest of the batch. Sockets are opened and closed on the
/// worker thread, by commands.
extension Worker {
    /// Opens `room`'s relay end with `peer` on this worker, its socket bound to `bind` (port 0: any free port).
    /// Returns the end's connection id and the socket's address, for the peer.
    public func openRelay(room: String, peer: String, bind: TransportAddress) async throws -> (id: ConnectionID, address: TransportAddress) {
        try await perform { [self] core, now in
            let socket = try UDPSocket(bind: bind)
            let id = try core.relays.open(room: room, peer: peer, now: now)
            closeRelaySockets(core)  // the end it replaced, if any
            relaySockets.append((id, socket))
            return (id, socket.local)
        }
    }

    /// The peer's end is open: where to send, and the keys both ways.
    public func keyRelay(_ id: ConnectionID, destination: TransportAddress, inbound: SRTPKeyingMaterial,
                         outbound: SRTPKeyingMaterial) async throws {
        try await perform { core, _ in try core.relays.key(id, destination: destination, inbound: inbound, outbound: outbound) }
    }

    /// Closes the end and its socket.
    public func closeRelay(_ id: ConnectionID, reason: String) async throws {
        try await perform { [self] core, now in
            core.relays.close(id, reason: reason, now: now)
            closeRelaySockets(core)
        }
    }

    /// What `room`'s relay to `peer` carries now (`Room.relays.carried(to:)`); nil when there is none.
    public func relayed(room: String, to peer: String) async throws -> [RelayedStream]? {
        try await perform { core, _ in core.rooms[room]?.relays.carried(to: peer) }
    }

    /// Sockets of ends the core closed (a room destroyed, an end closed) are closed too.
    func closeRelaySockets(_ core: WorkerCore) {
        relaySockets.removeAll { !core.relays.contains($0.id) }
    }

    /// Reads what waits on the relay sockets the last wait found readable, each up to its share of `budget`
    /// (a flooded socket cannot starve the others; the first read rotates). Returns how many were read.
    func receiveRelays(_ core: WorkerCore, _ rx: ReceiveBatch, budget: Int) -> Int {
        guard !relayReady.isEmpty else { return 0 }
        let count = relaySockets.count
        let share = max(rx.capacity, budget / max(1, relayReady.count))
        relayRotation = (relayRotation + 1) % max(1, count)
        var taken = 0
        for k in 0..<count {
            let (id, socket) = relaySockets[(relayRotation + k) % count]
            guard relayReady.contains(id) else { continue }
            var fromThis = 0
            while fromThis < share, let n = try? socket.receive(into: rx), n > 0 {
                let now = MonoClock.now()
                for i in 0..<n {
                    if rx.isTruncated(i) { oversizedDrops &+= 1; continue }
                    core.relays.receive(rx.buffer(i), length: rx.length(i), on: id, now: now, arrival: rx.arrival(i))
                    if needsFlush(core) { flush(core) }  // a relayed packet fans out to the room's subscribers
                }
                flush(core)
                fromThis += n
                relayDatagramsReceived &+= UInt64(n)
                if n < rx.capacity { break }
            }
            taken += fromThis
        }
        relayReady.removeAll(keepingCapacity: true)
        return taken
    }

    /// Waits for the media socket, the TCP port, the relay sockets or the wake descriptor: bit 1 a socket is
    /// readable, bit 2 the wake descriptor, bit 4 the TCP port (a connection or the listener is ready).
    func waitWithRelays(_ milliseconds: Int32) -> Int32 {
        relayPoll.removeAll(keepingCapacity: true)
        // The media sockets (two on a dual-stack worker; -1, which poll skips, for a missing second), the wake
        // descriptor, the TCP ports' epolls, then the relay sockets.
        relayPoll.append(pollfd(fd: sockets[0].descriptor, events: Int16(POLLIN), revents: 0))
        relayPoll.append(pollfd(fd: sockets.count > 1 ? sockets[1].descriptor : -1, events: Int16(POLLIN), revents: 0))
        relayPoll.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
        relayPoll.append(pollfd(fd: tcpPorts.first?.descriptor ?? -1, events: Int16(POLLIN), revents: 0))
        relayPoll.append(pollfd(fd: tcpPorts.count > 1 ? tcpPorts[1].descriptor : -1, events: Int16(POLLIN), revents: 0))
        for (_, s) in relaySockets { relayPoll.append(pollfd(fd: s.descriptor, events: Int16(POLLIN), revents: 0)) }
        guard poll(&relayPoll, nfds_t(relayPoll.count), milliseconds) > 0 else { return 0 }
        let readable = { [self] (i: Int) in relayPoll[i].revents & Int16(POLLIN) != 0 }
        var ready: Int32 = (readable(0) || readable(1) ? 1 : 0) | (readable(2) ? 2 : 0)
        if readable(3) || readable(4) { ready |= 4 }
        for (i, (id, _)) in relaySockets.enumerated() where relayPoll[i + 5].revents & Int16(POLLIN) != 0 {
            relayReady.insert(id)
            ready |= 1
        }
        return ready
    }
}
