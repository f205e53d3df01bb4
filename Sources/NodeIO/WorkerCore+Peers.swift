import SFU
import WebRTCEdge

/// Rooms across cores (see `WorkerCore`): placing a subscriber's transport on another worker, and what the
/// two cores exchange about it. The shell moves `handoffs` and `drainPeerMessages()` between workers; tests
/// do the same between cores on virtual time.
extension WorkerCore {
    /// Receive-side handoffs carry a client's RTCP and the odd stray packet: far fewer than a fan-out.
    static let receiveHandoffCapacity = 1024
    /// A send-side handoff takes one packet's whole fan-out to one host (the room writes it in one call), so
    /// at 2,048 a room of ~4,000 listeners across two workers fits; each batch is ~3 MB of address space,
    /// touched only as far as it is filled, and made only for pairs of workers that share a room.
    static let sendHandoffCapacity = 2048

    /// Where a new subscriber's transport goes: nil (here) until the room has `limits.spreadRoomAfter`
    /// subscribers, then the worker with the fewest of them, this one first on a tie.
    func placeSubscriber(in room: Room) -> Int? {
        guard peerCandidates.count > 1, limits.spreadRoomAfter > 0 else { return nil }
        var counts = [Int](repeating: 0, count: peerCandidates.count)
        for t in transports.values {
            guard let s = t.session, s.room === room, s.direction == .subscribe else { continue }
            counts[t.host ?? index] += 1
        }
        guard counts.reduce(0, +) >= limits.spreadRoomAfter else { return nil }
        let best = counts.indices.min { (counts[$0], $0 == index ? 0 : 1, $0) < (counts[$1], $1 == index ? 0 : 1, $1) }!
        return best == index ? nil : best
    }

    /// Handshakes this worker's sessions have under way (what `limits.pendingHandshakes` caps): those of its
    /// own edge and those of its transports hosted elsewhere, not those it hosts for other workers (their
    /// homes count them), so one spread room's stalled clients cannot make another worker refuse offers.
    public var pendingHandshakes: Int {
        var n = edge.pendingHandshakes
        for id in handshaking where transports[id]?.host != nil { n += 1 }
        for t in transports.values where t.home != nil && edge.isHandshaking(t.id) { n -= 1 }
        return n
    }

    /// The handoff of `kind` to `worker`, made on first use.
    func handoff(_ kind: Handoff.Kind, to worker: Int) -> Handoff {
        if let h = handoffs.first(where: { $0.worker == worker && $0.kind == kind }) { return h }
        let h = Handoff(worker: worker, kind: kind,
                        batch: DatagramBatch(capacity: kind == .send ? Self.sendHandoffCapacity : Self.receiveHandoffCapacity))
        handoffs.append(h)
        return h
    }

    /// The home worker of the transport an edge output is about, when this worker only hosts it. Keys are
    /// kept here too: the host protects what it sends.
    func home(of o: WorkerEdge.Output) -> Int? {
        switch o {
        case .keys(let c, let keys):
            guard let t = transports[c], let home = t.home else { return nil }
            t.hostedOutbound = try? SRTPSession(keys: keys.outbound, direction: .outbound)
            return home
        case .media(let c), .state(let c, _), .selected(let c, _), .failed(let c, _), .closed(let c), .pathClosed(let c):
            return transports[c]?.home
        case .send:
            return nil
        }
    }

    /// Protects in place the plain packets a home worker handed over for this worker's hosted transports
    /// (RFC 3711 section 3.3 / 3.4 with the transport's own context), before the shell sends them. One whose
    /// transport is gone or unkeyed here is discarded, counted.
    public func protectHandedOver(_ handed: DatagramBatch) {
        var lastID = ConnectionID.none
        var srtp: SRTPSession?
        for i in 0..<handed.count {
            let id = handed.destination(at: i)
            if id != lastID {
                lastID = id
                srtp = transports[id]?.hostedOutbound
            }
            let (buffer, length) = handed.buffer(at: i)
            let packet = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
            guard let srtp else { handed.discard(at: i); hostedDiscards &+= 1; continue }
            switch isRTCP(packet) ? srtp.protectRTCP(buffer, length: length) : srtp.protectRTP(buffer, length: length) {
            case .success(let n): handed.setLength(n, at: i)
            case .failure: handed.discard(at: i); hostedDiscards &+= 1
            }
        }
    }

    /// A datagram a hosted transport received, copied into the handoff to its room's worker (still
    /// encrypted: the room holds the keys). A full handoff drops it, counted.
    func hand(_ datagram: UnsafeRawBufferPointer, of connection: ConnectionID, arrival: MonoTime, to relay: Handoff) {
        guard datagram.count <= relay.batch.bufferSize, let buf = relay.batch.nextBuffer() else {
            handoffDrops &+= 1
            return
        }
        buf.copyMemory(from: datagram)
        relay.batch.commit(length: datagram.count, to: connection, arrival: arrival)
    }

    /// A message from another worker's core.
    public func receive(peer message: PeerMessage, from worker: Int, now: MonoTime) {
        switch message {
        case .host(let id, let local, let remote):
            _ = edge.prepare(id, local: local)
            do {
                try edge.attach(id, remote: remote)
            } catch {
                post(.transport(.failed(id, "\(error)")), to: worker)
                return
            }
            transports[id] = ClientTransport(id: id, hostedFor: worker, relay: handoff(.receive, to: worker), createdAt: now)
            hostedUnchecked.insert(id)
        case .restartICE(let id, let local, let remote):
            guard transports[id]?.home != nil else { return }
            edge.restartICE(id, local: local, remote: remote)
        case .release(let id, let notify):
            guard let t = transports[id], t.home != nil else { return }
            transports[id] = nil
            hostedUnchecked.remove(id)
            _ = t.lifecycle.handle(.released)
            for o in edge.remove(id, notify: notify) { if case .send(let bytes, let to) = o { outbox.control.append((bytes, to)) } }
        case .transport(let o):
            handle([o], now: now)
        case .checked(let id):
            if let t = transports[id] { advance(t, .checked, now: now) }
        }
    }

    /// Datagrams another worker's hosted transports received for this worker's rooms: each goes to its room
    /// as if it had come from this worker's socket, with the host's arrival stamp.
    public func receiveRelayed(_ relayed: DatagramBatch, from worker: Int, now: MonoTime) {
        for i in 0..<relayed.count {
            let id = relayed.destination(at: i)
            guard let t = transports[id], t.host == worker, let c = t.media, let room = t.session?.room else {
                ingressDrops &+= 1
                continue
            }
            let (buffer, length) = relayed.buffer(at: i)
            schedule.touch(room)
            room.receive(buffer, length: length, from: c, now: now, arrival: relayed.arrival(at: i), into: batch)
        }
    }

    /// Tells home workers which hosted transports had their first check (run once a second).
    func reportHostedChecks() {
        guard !hostedUnchecked.isEmpty else { return }
        for id in hostedUnchecked where edge.wasChecked(id) {
            hostedUnchecked.remove(id)
            if let home = transports[id]?.home { post(.checked(id), to: home) }
        }
    }
}
