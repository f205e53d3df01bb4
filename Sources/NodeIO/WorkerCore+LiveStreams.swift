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

extension WorkerCore {
    /// Starts `room`'s live stream `stream`: its slots (a video slot, then `audioSlots` audio slots) are sent to
    /// `host` at `ports` (one per slot, in that order; each slot's RTCP to its port + 1). Returns the slots'
    /// descriptions, for the encoder's SDP.
    public func openLiveStream(room name: String, stream: String, host: TransportAddress, ports: [UInt16], audioSlots: Int,
                               now: MonoTime) throws -> [SlotDescription] {
        guard let room = room(name) else { throw NoSuchRoom(room: name) }
        guard ports.count == audioSlots + 1 else { throw RoomError(.invalidSetting, .invalid, "one port per slot") }
        let id = connectionIDs.allocate { [transports, relayEnds, liveStreams] in transports[$0] != nil || relayEnds[$0] != nil || liveStreams[$0] != nil }
        let end = LiveStreamEnd(id: id, room: room)
        guard let slots = room.liveStream.started(id: stream, connection: id, egress: end, audioSlots: audioSlots, now: now, into: batch) else {
            throw RoomError(.invalidStreamingConfiguration, .conflict, "room \(name) is not starting live stream \(stream)")
        }
        for (slot, port) in zip(slots, ports) {
            let ids = (0..<2).map { _ in
                connectionIDs.allocate { [transports, relayEnds, liveStreams, liveStreamRoutes] in
                    transports[$0] != nil || relayEnds[$0] != nil || liveStreams[$0] != nil || liveStreamRoutes[$0] != nil
                }
            }
            end.routes[slot.ssrc] = (ids[0], ids[1])
            end.destinations[ids[0]] = TransportAddress(ip: host.ip, port: port)
            end.destinations[ids[1]] = TransportAddress(ip: host.ip, port: port &+ 1)
            liveStreamRoutes[ids[0]] = end.destinations[ids[0]]
            liveStreamRoutes[ids[1]] = end.destinations[ids[1]]
        }
        liveStreams[id] = end
        return slots
    }

    /// Stops sending a live stream (its room already let go of it, or is told to here).
    public func closeLiveStream(_ id: ConnectionID) {
        guard let end = liveStreams.removeValue(forKey: id) else { return }
        for d in end.destinations.keys { liveStreamRoutes[d] = nil }
    }

    /// Moves what the live streams' rooms wrote into the worker's batch, each datagram to its slot's port.
    func flushLiveStreams() {
        // An end its room let go of by itself (a stale step abandoned) goes.
        for (id, end) in liveStreams where end.room.liveStream.connection != id { closeLiveStream(id) }
        for end in liveStreams.values where end.batch.count > 0 {
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
    func closeLiveStreams(of room: Room) {
        for (id, end) in liveStreams where end.room === room { closeLiveStream(id) }
    }
}
