import SFU
import WebRTCEdge

/// One end of a relay on this worker (issue 25; docs/cluster.md, Relays): a room of this worker joined to the
/// room of the same name on another node. Its media half is the room's relay connection (`RoomRelays.attach`):
/// what this node relays goes out through it, what the peer relays comes in on it. What arrives for it comes on
/// a UDP socket of its own (the worker's `Worker.relaySockets`, one per end), so no address or SSRC has to
/// tell two rooms' relays apart; what it sends leaves from the worker's media socket to the peer's socket for
/// the same relay (`destination`, learnt with the peer's key).
final class RelayEnd {
    let id: ConnectionID
    let room: Room
    let peer: String
    /// The peer's socket for this relay, once it said where (its `open` message); nothing is sent before.
    var destination: TransportAddress?

    init(id: ConnectionID, room: Room, peer: String) {
        self.id = id
        self.room = room
        self.peer = peer
    }
}

/// An operation on a relay end that does not exist (closed meanwhile, or never opened).
public struct NoSuchRelay: Error, CustomStringConvertible, Sendable {
    public var connection: ConnectionID
    public var description: String { "no relay end \(connection)" }
}

/// This worker's relay ends (`RelayEnd`), by connection id: opening one joins its room to a peer node's room of
/// the same name, keying it starts the media, a datagram on its socket goes to its room, closing it lets the
/// peer's participants leave. Owns the ends and the count of what arrived for none.
public final class WorkerRelays {
    unowned let core: WorkerCore
    private var ends: [ConnectionID: RelayEnd] = [:]
    /// Datagrams on a relay socket that were not RTP or RTCP, or whose end had closed.
    public internal(set) var drops: UInt64 = 0

    init(core: WorkerCore) { self.core = core }

    /// Opens this node's end of `room`'s relay with node `peer`: the room relays its local top K there from now
    /// on (once keyed) and takes what the peer relays. Returns the end's connection id.
    public func open(room name: String, peer: String, now: MonoTime) throws -> ConnectionID {
        guard let room = core.room(name) else { throw NoSuchRoom(room: name) }
        // An end of the same relay left behind (its close never reached this worker) is replaced.
        for old in ends.values where old.room === room && old.peer == peer { close(old.id, reason: "replaced", now: now) }
        let id = core.allocateConnectionID()
        try room.relays.attach(peer: peer, connection: id, now: now, into: core.batch)
        ends[id] = RelayEnd(id: id, room: room, peer: peer)
        return id
    }

    /// The peer opened its end: its socket for this relay, and the keys both ways (`outbound`, drawn for this
    /// end; `inbound`, the peer's). Media flows from now on.
    public func key(_ id: ConnectionID, destination: TransportAddress, inbound: SRTPKeyingMaterial, outbound: SRTPKeyingMaterial) throws {
        guard let end = ends[id] else { throw NoSuchRelay(connection: id) }
        core.schedule.touch(end.room)
        try end.room.sessions.setSRTP(connection: id, inbound: inbound, outbound: outbound)
        end.destination = destination
    }

    /// Closes a relay end: the remote participants whose media came over it leave the room.
    public func close(_ id: ConnectionID, reason: String, now: MonoTime) {
        guard let end = ends.removeValue(forKey: id) else { return }
        core.schedule.touch(end.room)
        end.room.sessions.detach(id, reason: reason, now: now, into: core.batch)
    }

    /// Whether the end is open (a room destroyed closes its ends).
    public func contains(_ id: ConnectionID) -> Bool { ends[id] != nil }

    /// The relay ends this worker holds: connection id, room and peer.
    public var endpoints: [(id: ConnectionID, room: String, peer: String)] {
        ends.values.map { ($0.id, $0.room.name, $0.peer) }
    }

    /// One datagram from a relay end's socket: RTP or RTCP of that relay only (a relay runs no ICE or DTLS);
    /// anything else, or a datagram for an end closed meanwhile, is a counted drop.
    public func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, on id: ConnectionID, now: MonoTime, arrival: MonoTime? = nil) {
        guard let end = ends[id], length > 0, PacketClass(firstByte: buffer[0]) == .rtp else { drops &+= 1; return }
        core.schedule.touch(end.room)
        end.room.receive(buffer, length: length, from: id, now: now, arrival: arrival, into: core.batch)
    }

    /// Where a relay end's media goes: the peer's socket, once keyed.
    func destination(of id: ConnectionID) -> TransportAddress? { ends.isEmpty ? nil : ends[id]?.destination }

    /// Ends of a destroyed room go with it.
    func closeAll(of room: Room) {
        for (id, end) in ends where end.room === room { ends[id] = nil }
    }
}
