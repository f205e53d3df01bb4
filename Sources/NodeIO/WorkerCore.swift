import SFU
import WebRTCEdge

/// Everything one worker does, sans-IO: its edge (ICE, DTLS), its rooms and one table of client transports
/// (`ClientTransport`). The shell (`Worker`) feeds it datagrams, time and commands, and drains what it
/// produces through `poll()`, one ordered output at a time, until it says when to come back. It never reads
/// a clock or touches a socket, so tests drive the real dispatch on virtual time.
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
/// packets and the host hands the home what the client sends (`Handoff`s: batches written in place and
/// swapped whole), and transport events go both ways as `PeerMessage`s. A hosted listener costs its room's
/// worker the rewrite (~0.3 us) and its host the SRTP protect and the syscall (the rest, ~2 us): so a
/// 1,000-listener lecture uses every core.
public final class WorkerCore {
    public let edge: WorkerEdge
    public let index: Int
    public let limits: WorkerLimits
    public private(set) var rooms: [String: Room] = [:]
    /// Every client transport this worker holds: its sessions' (wherever their ICE and DTLS run) and those it
    /// hosts for other workers' rooms.
    var transports: [ConnectionID: ClientTransport] = [:]
    /// This worker's ends of relays to other nodes (`WorkerRelays`).
    public private(set) lazy var relays = WorkerRelays(core: self)
    /// Rooms' live streams on this worker, and where each of their slots' datagrams go (`WorkerLiveStreams`).
    public private(set) lazy var liveStreams = WorkerLiveStreams(core: self)
    var sessions: [SessionKey: ConnectionID] = [:]
    /// Transports still handshaking: what the handshake deadline watches.
    var handshaking: Set<ConnectionID> = []
    /// Media the rooms produced, each to a connection.
    public let batch: DatagramBatch
    public internal(set) var transportCounters = TransportCounters()
    /// Media datagrams whose connection has no room any more.
    public internal(set) var ingressDrops: UInt64 = 0
    /// Datagrams of hosted transports that the handoff to their room's worker had no room for.
    public internal(set) var handoffDrops: UInt64 = 0
    /// Packets a home handed over for a transport this worker no longer hosts (released while they were on
    /// their way) or could not protect: not sent.
    public internal(set) var hostedDiscards: UInt64 = 0
    /// Counters of rooms destroyed here, so totals never go back.
    public private(set) var retired = RoomCounters()
    /// What `poll` has still to hand out: control datagrams, peer messages, destroyed rooms' last events.
    var outbox = WorkerOutbox()
    /// Where this worker's connection ids come from (unique across workers, never reused while live).
    var connectionIDs: ConnectionIDs
    var nextLivenessCheck = MonoTime.zero
    /// Each worker's host candidates, by worker index (this one's too): what the answer for a transport placed
    /// on that worker carries. Fewer than two: every transport stays here.
    public var peerCandidates: [[TransportAddress]] = []
    /// Batches for other workers, created on first use: one per worker and kind.
    public internal(set) var handoffs: [Handoff] = []
    /// Hosted transports whose first check the home has not been told of.
    var hostedUnchecked: Set<ConnectionID> = []
    /// The rooms' deadlines and which rooms may have events: every path that reaches a room touches it here.
    var schedule = RoomSchedule()
    /// Rooms due in this tick (kept to reuse its storage).
    private var dueRooms: [Room] = []

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
            // The source address finds the transport's edge row; its id finds the transport's media half here.
            guard let record = edge.mediaRecord(from: source, now: now) else { return }  // counted by the edge
            guard let t = transports[record.id] else { ingressDrops &+= 1; return }
            if let media = t.media, let room = t.session?.room {
                schedule.touch(room)
                room.receive(buffer, length: length, from: media, now: now, arrival: arrival, into: batch)
            } else if let relay = t.relay {
                hand(datagram, of: record.id, arrival: arrival ?? now, to: relay)
            } else {
                ingressDrops &+= 1
            }
            return
        }
        handle(edge.receive(datagram, kind, from: source, now: now), now: now)
    }

    /// The shell closed a path's connection (an ICE-TCP connection: reset, timed out, over a bound): what its
    /// checks proved goes with it (`WorkerEdge.pathClosed`).
    public func pathClosed(_ address: TransportAddress, now: MonoTime) {
        handle(edge.pathClosed(address), now: now)
    }

    /// Runs what is due: room timers, ICE consent and DTLS retransmissions, handshake deadlines.
    public func tick(now: MonoTime) {
        schedule.due(at: now, into: &dueRooms)
        for room in dueRooms { room.tick(now: now, into: batch) }
        dueRooms.removeAll(keepingCapacity: true)
        if edge.nextDeadline <= now { handle(edge.tick(now: now), now: now) }
        if nextLivenessCheck <= now {
            nextLivenessCheck = now + .seconds(1)
            closeStalledHandshakes(now: now)
            reportHostedChecks()
        }
    }

    /// When `tick` has something to do; `.never` for an idle worker.
    /// The worker asks after every wakeup, so this costs what the pass touched: the rooms reached since
    /// (`RoomSchedule`), never every room or transport (those still handshaking are kept in `handshaking`).
    public var nextDeadline: MonoTime {
        var t = min(edge.nextDeadline, schedule.next())
        #if DEBUG
        var scanned = MonoTime.never
        for room in rooms.values { scanned = min(scanned, room.nextDeadline) }
        assert(scanned == schedule.next(), "a room was reached without touching the schedule: \(scanned) vs \(schedule.next())")
        #endif
        if !handshaking.isEmpty || !hostedUnchecked.isEmpty { t = min(t, nextLivenessCheck) }
        return t
    }

    /// Where media for a connection goes: the address its client nominated, while consent holds.
    public func destination(of connection: ConnectionID) -> TransportAddress? {
        // Clients' datagrams, nearly all of them, find theirs in one lookup; a relay end's after the edge's miss.
        if let d = edge.destination(of: connection) { return d }
        return liveStreams.destination(of: connection) ?? relays.destination(of: connection)
    }

    /// A connection id no client transport, relay end or live stream route holds (`ConnectionIDs`).
    func allocateConnectionID() -> ConnectionID {
        var ids = connectionIDs
        defer { connectionIDs = ids }
        return ids.allocate { transports[$0] != nil || relays.contains($0) || liveStreams.contains($0) }
    }

    // MARK: Rooms

    /// The room, for a command: it may change the room, so the room's deadline and events are looked at again.
    public func room(_ name: String) -> Room? {
        guard let room = rooms[name] else { return nil }
        schedule.touch(room)
        return room
    }

    public func addRoom(_ room: Room) {
        if let old = rooms[room.name] { schedule.remove(old) }
        rooms[room.name] = room
        schedule.add(room)
    }

    /// Destroys a room: its participants are told they left, its transports are closed (DTLS close_notify);
    /// `reason` is what its recording and live stream are told (`Room.destroy`).
    public func destroyRoom(_ name: String, now: MonoTime, reason: String = "room destroyed") {
        guard let room = rooms.removeValue(forKey: name) else { return }
        schedule.remove(room)
        room.destroy(now: now, reason: reason)
        outbox.retiredEvents.append((name, room.drainEvents()))
        retired.add(room.counters)
        relays.closeAll(of: room)
        liveStreams.closeAll(of: room)
        for t in transports.values where t.session?.room === room { forget(t, notify: true) }
    }

    /// Destroys every room (the worker stops: `reason` "node stopped").
    public func destroyAllRooms(now: MonoTime, reason: String = "node stopped") {
        for name in Array(rooms.keys) { destroyRoom(name, now: now, reason: reason) }
    }

    /// Transports of this worker's sessions (what `/metrics` calls connections).
    public var connectionCount: Int { transports.values.count { $0.session != nil } }

    /// Transports hosted here for rooms on other workers.
    public var hostedCount: Int { transports.values.count { $0.home != nil } }

    /// Turns away participants awaited in a knock-enabled room (`RoomModeration.deny`) and closes their transports:
    /// who went, and how many transports closed.
    public func denyAwaited(room name: String, by: String, _ ids: [String]?, now: MonoTime) throws -> (denied: [String], closed: Int) {
        guard let room = room(name) else { throw NoSuchRoom(room: name) }
        let waiting = ids ?? room.awaitedParticipants.map(\.id)
        let conns = waiting.flatMap { room.sessions.connections(of: $0) }
        let denied = try room.moderation.deny(by: by, ids, now: now, into: batch)
        for c in conns { if let t = transports[c] { forget(t, notify: true) } }
        return (denied, conns.count)
    }

    /// Removes a participant and closes its transports; returns how many were closed.
    public func removeParticipant(room name: String, _ id: String, by: String?, now: MonoTime) throws -> Int {
        guard let room = room(name) else { throw NoSuchRoom(room: name) }
        let conns = room.sessions.connections(of: id)
        try room.remove(id, by: by, now: now, into: batch)
        for c in conns { if let t = transports[c] { forget(t, notify: true) } }
        return conns.count
    }
}
