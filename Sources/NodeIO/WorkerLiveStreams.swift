import SFU
import WebRTCEdge

/// A room's live stream on this worker (`RoomLiveStream`): the room writes its slots' packets, unprotected,
/// into this egress; each pass they are moved into the worker's batch addressed to the encoder's port for their
/// slot (RTP to its port, the slot's sender reports to the port above, as an SDP with one port per stream
/// wants: FFmpeg's does not demultiplex by SSRC).
final class LiveStreamEnd: Egress {
    let id: ConnectionID
    let room: Room
    let batch = DatagramBatch(capacity: 512)
    /// By the slot's SSRC: where its RTP and its RTCP go.
    var routes: [UInt32: (rtp: ConnectionID, rtcp: ConnectionID)] = [:]
    var destinations: [ConnectionID: TransportAddress] = [:]
    /// Datagrams of the stream that named no slot's SSRC, or found the worker's batch full.
    var dropped: UInt64 = 0

    init(id: ConnectionID, room: Room) {
        self.id = id
        self.room = room
    }
}

/// The rooms' live streams on this worker (`LiveStreamEnd`), and where each of their slots' datagrams go (one
/// connection id per slot and direction, each an address on the encoder's loopback ports). Owns the ends and
/// the routes; the stream's phase is its room's (`RoomLiveStream`), the encoder process the node's.
public final class WorkerLiveStreams {
    unowned let core: WorkerCore
    private var ends: [ConnectionID: LiveStreamEnd] = [:]
    private var routes: [ConnectionID: TransportAddress] = [:]

    init(core: WorkerCore) { self.core = core }

    var isEmpty: Bool { ends.isEmpty }

    /// Whether `id` is one of theirs: an end or a slot's route.
    func contains(_ id: ConnectionID) -> Bool { ends[id] != nil || routes[id] != nil }

    /// Starts `room`'s live stream `stream`: its slots (a video slot, then `audioSlots` audio slots) are sent to
    /// `host` at `ports` (one per slot, in that order; each slot's RTCP to its port + 1). Returns the slots'
    /// descriptions, for the encoder's SDP.
    public func open(room name: String, stream: String, host: TransportAddress, ports: [UInt16], audioSlots: Int,
                     now: MonoTime) throws -> [SlotDescription] {
        guard let room = core.room(name) else { throw NoSuchRoom(room: name) }
        guard ports.count == audioSlots + 1 else { throw RoomError(.invalidSetting, .invalid, "one port per slot") }
        let id = core.allocateConnectionID()
        let end = LiveStreamEnd(id: id, room: room)
        guard let slots = room.liveStream.started(id: stream, connection: id, egress: end, audioSlots: audioSlots, now: now, into: core.batch) else {
            throw RoomError(.invalidStreamingConfiguration, .conflict, "room \(name) is not starting live stream \(stream)")
        }
        ends[id] = end
        for (slot, port) in zip(slots, ports) {
            let rtp = core.allocateConnectionID()
            end.destinations[rtp] = TransportAddress(ip: host.ip, port: port)
            routes[rtp] = end.destinations[rtp]
            let rtcp = core.allocateConnectionID()
            end.destinations[rtcp] = TransportAddress(ip: host.ip, port: port &+ 1)
            routes[rtcp] = end.destinations[rtcp]
            end.routes[slot.ssrc] = (rtp, rtcp)
        }
        return slots
    }

    /// Stops sending a live stream (its room already let go of it, or is told to here).
    public func close(_ id: ConnectionID) {
        guard let end = ends.removeValue(forKey: id) else { return }
        for d in end.destinations.keys { routes[d] = nil }
    }

    /// Where a slot's datagrams go (its route), nil for any other id.
    func destination(of id: ConnectionID) -> TransportAddress? { routes.isEmpty ? nil : routes[id] }

    /// Moves what the live streams' rooms wrote into `batch`, each datagram to its slot's port.
    func flush(into batch: DatagramBatch) {
        // An end its room let go of by itself (a stale step abandoned) goes.
        for (id, end) in ends where end.room.liveStream.connection != id { close(id) }
        for end in ends.values where end.batch.count > 0 {
            for i in 0..<end.batch.count {
                let d = end.batch.datagram(at: i)
                guard d.count >= 8, let buf = batch.nextBuffer() else {
                    end.dropped &+= 1
                    continue
                }
                // RTP: the SSRC at bytes 8-11 (RFC 3550 section 5.1); RTCP (payload types 200-206): the sender's
                // at bytes 4-7 (section 6.4.1).
                let rtcp = (200...206).contains(d[1])
                let at = rtcp ? 4 : 8
                guard d.count >= at + 4 else { end.dropped &+= 1; continue }
                let ssrc = UInt32(d[at]) << 24 | UInt32(d[at + 1]) << 16 | UInt32(d[at + 2]) << 8 | UInt32(d[at + 3])
                guard let route = end.routes[ssrc] else { end.dropped &+= 1; continue }
                buf.copyMemory(from: d)
                batch.commit(length: d.count, to: rtcp ? route.rtcp : route.rtp)
            }
            end.batch.removeAll()
        }
    }

    /// Live streams of a destroyed room go with it.
    func closeAll(of room: Room) {
        for (id, end) in ends where end.room === room { close(id) }
    }
}
