import SFU

/// Drives a `Room` on virtual time with simulated clients: what a scenario test, the demo and the
/// benchmarks share. Every datagram the room emits is decrypted by its destination client and kept.
public final class RoomHarness {
    public let room: Room
    public let batch = DatagramBatch(capacity: 4096)
    public private(set) var now: MonoTime = .milliseconds(1_000)
    public private(set) var events: [(MonoTime, RoomEvent)] = []
    public private(set) var clients: [ConnectionID: SimulatedClient] = [:]
    /// Plain packets each connection received, in order.
    public private(set) var received: [ConnectionID: [[UInt8]]] = [:]
    public private(set) var undecryptable = 0
    private var nextConnection: UInt32 = 1
    public var keepReceived = true
    /// The network between node and clients: return false to lose a datagram (it sees the encrypted bytes;
    /// the RTP header is in clear).
    public var network: ((ConnectionID, [UInt8]) -> Bool)?
    /// Which simulated participants sent each Opus payload (to attribute what subscribers receive).
    public var payloadSenders: [[UInt8]: Set<String>] = [:]
    private var buffer = [UInt8](repeating: 0, count: 2048)

    /// Measurement only: every connection uses libsrtp's null cipher (see `SRTPKeyingMaterial.nullCipher`).
    public var nullCipher = false

    public init(configuration: RoomConfiguration = .init(), name: String = "room") throws {
        room = try Room(name: name, configuration: configuration, now: .milliseconds(1_000))
    }

    /// A participant's two connections.
    public struct Member {
        public let id: String
        public let publish: SimulatedClient
        public let subscribe: SimulatedClient
        public var audio: RTPStreamWriter
        public var video: RTPStreamWriter
    }

    /// Admits a participant that publishes Opus (level extension id 1 when `levelExtension`) and optionally
    /// VP8, and subscribes to `audioSlots` + `videoSlots` slots.
    public func join(_ id: String, role: Role = .participant, publishVideo: Bool = false, levelExtension: Bool = true,
                     audioSlots: Int = 3, videoSlots: Int = 0, talkerCount: Int? = nil) throws -> Member {
        try room.admit(id, role: role, talkerCount: talkerCount, now: now)
        let pub = newClient()
        let sub = newClient()
        let base = UInt32(nextConnection) * 0x1000
        var tracks = [PublishedTrack(codec: .opus, ssrc: base + 1, payloadType: 111,
                                     audioLevelExtensionID: levelExtension ? 1 : nil)]
        if publishVideo { tracks.append(PublishedTrack(codec: .vp8, ssrc: base + 2, rtxSSRC: base + 3, payloadType: 96)) }
        try room.attachPublisher(id, connection: pub.connection, tracks: tracks, now: now)
        try room.setSRTP(connection: pub.connection, inbound: pub.nodeInbound, outbound: pub.nodeOutbound)
        var slots: [SlotDescription] = []
        for i in 0..<audioSlots { slots.append(SlotDescription(codec: .opus, mid: "a\(i)", ssrc: base + 0x100 + UInt32(i), payloadType: 109, audioLevelExtensionID: 3)) }
        for i in 0..<videoSlots { slots.append(SlotDescription(codec: .vp8, mid: "v\(i)", ssrc: base + 0x200 + UInt32(i), payloadType: 98)) }
        try room.attachSubscriber(id, connection: sub.connection, slots: slots, now: now, into: batch)
        try room.setSRTP(connection: sub.connection, inbound: sub.nodeInbound, outbound: sub.nodeOutbound)
        flush()
        return Member(id: id, publish: pub, subscribe: sub,
                      audio: RTPStreamWriter(ssrc: base + 1, payloadType: 111, audioLevelExtensionID: levelExtension ? 1 : nil),
                      video: RTPStreamWriter(ssrc: base + 2, payloadType: 96, timestamp: 90_000))
    }

    /// Subscribes again with `audioSlots` + `videoSlots` slots (mids a0.., v0.., slot SSRCs as at join, so
    /// the ones kept are unchanged): on the same connection (a renegotiation) or on a new one (a client that
    /// started over). Returns the member with its subscribing connection.
    public func resubscribe(_ m: Member, audioSlots: Int, videoSlots: Int, newConnection: Bool) throws -> Member {
        let base = m.audio.ssrc - 1
        var slots: [SlotDescription] = []
        for i in 0..<audioSlots { slots.append(SlotDescription(codec: .opus, mid: "a\(i)", ssrc: base + 0x100 + UInt32(i), payloadType: 109, audioLevelExtensionID: 3)) }
        for i in 0..<videoSlots { slots.append(SlotDescription(codec: .vp8, mid: "v\(i)", ssrc: base + 0x200 + UInt32(i), payloadType: 98)) }
        var next = m
        if newConnection { next = Member(id: m.id, publish: m.publish, subscribe: newClient(), audio: m.audio, video: m.video) }
        try room.attachSubscriber(m.id, connection: next.subscribe.connection, slots: slots, now: now, into: batch)
        if newConnection {
            try room.setSRTP(connection: next.subscribe.connection, inbound: next.subscribe.nodeInbound, outbound: next.subscribe.nodeOutbound)
        }
        flush()
        return next
    }

    /// Publishes again: the same tracks on the same connection (a renegotiation that changes nothing), or on
    /// a new connection with new SSRCs (a client that started over).
    public func republish(_ m: Member, video: Bool, newConnection: Bool) throws -> Member {
        var next = m
        if newConnection {
            next = Member(id: m.id, publish: newClient(), subscribe: m.subscribe,
                          audio: RTPStreamWriter(ssrc: m.audio.ssrc ^ 0x00F0_0000, payloadType: 111, audioLevelExtensionID: m.audio.audioLevelExtensionID),
                          video: RTPStreamWriter(ssrc: m.video.ssrc ^ 0x00F0_0000, payloadType: 96, timestamp: 90_000))
        }
        var tracks = [PublishedTrack(codec: .opus, ssrc: next.audio.ssrc, payloadType: 111, audioLevelExtensionID: next.audio.audioLevelExtensionID)]
        if video { tracks.append(PublishedTrack(codec: .vp8, ssrc: next.video.ssrc, rtxSSRC: next.video.ssrc + 1, payloadType: 96)) }
        try room.attachPublisher(m.id, connection: next.publish.connection, tracks: tracks, now: now)
        if newConnection {
            try room.setSRTP(connection: next.publish.connection, inbound: next.publish.nodeInbound, outbound: next.publish.nodeOutbound)
        }
        flush()
        return next
    }

    private func newClient() -> SimulatedClient {
        let c = SimulatedClient(connection: ConnectionID(nextConnection), seed: UInt64(nextConnection) * 7919, nullCipher: nullCipher)
        nextConnection += 1
        clients[c.connection] = c
        return c
    }

    /// Sends a plain packet from a client: protects it and hands it to the room.
    /// A packet the client cannot protect (libsrtp refuses its header) is not sent.
    public func send(_ plain: [UInt8], from client: SimulatedClient) {
        guard let datagram = client.tryProtect(plain) else { return }
        sendRaw(datagram, from: client.connection)
    }

    /// Hands a datagram to the room as it arrived (no protection added).
    public func sendRaw(_ datagram: [UInt8], from connection: ConnectionID) {
        buffer.withUnsafeMutableBytes { buf in
            let n = min(datagram.count, buf.count - SRTPSession.maxOverhead)
            buf.copyBytes(from: datagram[0..<n])
            room.receive(buf, length: n, from: connection, now: now, into: batch)
        }
        flush()
    }

    /// Moves virtual time forward, running the room's timers on the way.
    public func advance(to t: MonoTime) {
        while true {
            let d = room.nextDeadline
            guard d <= t else { break }
            now = max(now, d)
            room.tick(now: now, into: batch)
            flush()
        }
        now = max(now, t)
        room.tick(now: now, into: batch)
        flush()
    }

    public func advance(by ms: Int64) { advance(to: now + .milliseconds(ms)) }

    /// Delivers the batch to the clients and records the events.
    public func flush() {
        for i in 0..<batch.count {
            let dest = batch.destination(at: i)
            guard let c = clients[dest] else { continue }
            let datagram = Array(batch.datagram(at: i))
            if let network, !network(dest, datagram) { continue }
            if let plain = c.unprotect(datagram) {
                if keepReceived { received[dest, default: []].append(plain) }
            } else {
                undecryptable += 1
            }
        }
        batch.removeAll()
        for e in room.drainEvents() { events.append((now, e)) }
    }

    public func clearReceived() { received.removeAll() }
    public func clearEvents() { events.removeAll() }

    /// RTP packets (not RTCP) a connection received, with their parsed headers.
    public func rtp(to connection: ConnectionID) -> [(header: RTPHeader, packet: [UInt8])] {
        (received[connection] ?? []).compactMap { p in
            p.withUnsafeBytes { raw in
                guard !isRTCP(raw), case .success(let h) = RTPHeader.parse(raw) else { return nil }
                return (h, p)
            }
        }
    }

    /// RTCP packets a connection received.
    public func rtcp(to connection: ConnectionID) -> [[UInt8]] {
        (received[connection] ?? []).filter { $0.withUnsafeBytes { isRTCP($0) } }
    }
}
