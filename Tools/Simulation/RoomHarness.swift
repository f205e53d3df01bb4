import SFU
import SFUMedia

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
    /// Sees every plain packet a client receives, as it arrives (whether or not it is kept): for runs too long
    /// to keep everything.
    public var onReceive: ((ConnectionID, [UInt8]) -> Void)?
    /// The network between node and clients: return false to lose a datagram (it sees the encrypted bytes;
    /// the RTP header is in clear).
    public var network: ((ConnectionID, [UInt8]) -> Bool)?
    /// The network from clients to the node: sees each plain packet a client is about to send; return false
    /// to lose it.
    public var uplink: ((ConnectionID, [UInt8]) -> Bool)?
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
        /// The screen share's stream (SSRC base + 4), sent when the member joined with `publishScreen`.
        public var screen: RTPStreamWriter
        /// The publisher's transport-wide sequence number (extension id 5), when it sends one.
        public var transportSequence: UInt16?
        public let options: FeedbackOptions

        public mutating func nextTransportSequence() -> UInt16? {
            defer { transportSequence = transportSequence.map { $0 &+ 1 } }
            return transportSequence
        }
    }

    /// What a simulated client negotiates for the feedback loops (all off: REMB only, no RTX, no RED).
    public struct FeedbackOptions: Sendable {
        /// Transport-wide sequence numbers (id 5) and transport-cc feedback, both directions.
        public var transportCC = false
        /// The publisher takes NACK and REMB; video slots have RTX (payload type 99).
        public var repair = false
        /// Opus RED (payload type 63) both ways.
        public var red = false
        /// The subscribing connection's SRTP profile. Without RTX a NACK is answered only under AES-CM (under
        /// AES-GCM a resend on the media SSRC would reuse a nonce: `DropReason.resendNeedsRTX`).
        public var subscribeProfile: SRTPProfile = .aeadAES128GCM
        public init(transportCC: Bool = false, repair: Bool = false, red: Bool = false, subscribeProfile: SRTPProfile = .aeadAES128GCM) {
            self.transportCC = transportCC
            self.repair = repair
            self.red = red
            self.subscribeProfile = subscribeProfile
        }
    }

    /// Admits a participant that publishes Opus (level extension id 1 when `levelExtension`) and optionally
    /// VP8 (a camera, and a screen share with `publishScreen`), and subscribes to `audioSlots` + `videoSlots`
    /// (talkers' cameras, mids v0..) + `screenSlots` (screen shares, mids s0.., SSRCs base + 0x280 + i) slots.
    /// With `keySubscription: false` the subscribing connection has no SRTP keys yet (its DTLS handshake is
    /// still under way) until `keySubscription(of:)`. With `publishAudio: false` the participant publishes no
    /// audio (a listen-only client: never a talker candidate) and, without video either, no publisher is
    /// attached at all.
    public func join(_ id: String, role: Role = .participant, publishAudio: Bool = true, publishVideo: Bool = false,
                     publishScreen: Bool = false, levelExtension: Bool = true, audioSlots: Int = 3, videoSlots: Int = 0,
                     screenSlots: Int = 0, talkerCount: Int? = nil, options o: FeedbackOptions = .init(),
                     keySubscription: Bool = true) throws -> Member {
        try room.admit(id, role: role, talkerCount: talkerCount, now: now)
        let pub = newClient()
        let sub = newClient(profile: o.subscribeProfile)
        let base = UInt32(nextConnection) * 0x1000
        let tcc: UInt8? = o.transportCC ? 5 : nil
        var tracks = publishAudio ? [TrackDescription(codec: .opus, ssrc: base + 1, payloadType: 111,
                                                    audioLevelExtensionID: levelExtension ? 1 : nil, transportCCExtensionID: tcc,
                                                    redPayloadType: o.red ? 63 : nil)] : []
        if publishVideo {
            tracks.append(TrackDescription(codec: .vp8, ssrc: base + 2, rtxSSRC: base + 3, payloadType: 96, rtxPayloadType: 97,
                                         transportCCExtensionID: tcc, nack: o.repair, remb: o.repair))
        }
        if publishScreen {
            var screen = TrackDescription(codec: .vp8, ssrc: base + 4, payloadType: 96, transportCCExtensionID: tcc, nack: o.repair, remb: o.repair)
            screen.source = .screen
            tracks.append(screen)
        }
        if !tracks.isEmpty {
            try room.sessions.attachPublisher(id, connection: pub.connection, tracks: tracks, now: now)
            try room.sessions.setSRTP(connection: pub.connection, inbound: pub.nodeInbound, outbound: pub.nodeOutbound)
        }
        var slots: [SlotDescription] = []
        for i in 0..<audioSlots {
            slots.append(SlotDescription(codec: .opus, mid: "a\(i)", ssrc: base + 0x100 + UInt32(i), payloadType: 109, audioLevelExtensionID: 3,
                                         transportCCExtensionID: tcc, redPayloadType: o.red ? 108 : nil))
        }
        for i in 0..<videoSlots {
            slots.append(SlotDescription(codec: .vp8, mid: "v\(i)", ssrc: base + 0x200 + UInt32(i), payloadType: 98,
                                         absSendTimeExtensionID: o.transportCC ? nil : 4, transportCCExtensionID: tcc,
                                         rtxPayloadType: o.repair ? 99 : nil, rtxSSRC: o.repair ? base + 0x300 + UInt32(i) : nil))
        }
        for i in 0..<screenSlots {
            var d = SlotDescription(codec: .vp8, mid: "s\(i)", ssrc: base + 0x280 + UInt32(i), payloadType: 98,
                                    absSendTimeExtensionID: o.transportCC ? nil : 4, transportCCExtensionID: tcc)
            d.source = .screen
            slots.append(d)
        }
        try room.sessions.attachSubscriber(id, connection: sub.connection, slots: slots, now: now, into: batch)
        if keySubscription { try room.sessions.setSRTP(connection: sub.connection, inbound: sub.nodeInbound, outbound: sub.nodeOutbound) }
        flush()
        return Member(id: id, publish: pub, subscribe: sub,
                      audio: RTPStreamWriter(ssrc: base + 1, payloadType: 111, audioLevelExtensionID: levelExtension ? 1 : nil),
                      video: RTPStreamWriter(ssrc: base + 2, payloadType: 96, timestamp: 90_000),
                      screen: RTPStreamWriter(ssrc: base + 4, payloadType: 96, timestamp: 45_000),
                      transportSequence: o.transportCC ? 1 : nil, options: o)
    }

    /// Publishes again as `m`'s Opus (level extension id 1) and a VP8 simulcast video with one layer per SSRC
    /// in `layers`, lowest first (`a=ssrc-group:SIM` as the room receives it).
    public func publishSimulcast(_ m: Member, layers: [UInt32]) throws {
        var tracks = [TrackDescription(codec: .opus, ssrc: m.audio.ssrc, payloadType: 111, audioLevelExtensionID: 1)]
        for (i, s) in layers.enumerated() {
            var t = TrackDescription(codec: .vp8, ssrc: s, payloadType: 96)
            t.simulcast = SimulcastLayer(index: i)
            tracks.append(t)
        }
        try room.sessions.attachPublisher(m.id, connection: m.publish.connection, tracks: tracks, now: now)
    }

    /// A relay from this room to node `peer` (`RoomRelays.attach`), keyed: the returned client is the peer's end
    /// of the link, and what the relay sends is in `received` under its connection.
    public func relay(to peer: String) throws -> SimulatedClient {
        let c = newClient()
        try room.relays.attach(peer: peer, connection: c.connection, now: now, into: batch)
        try room.sessions.setSRTP(connection: c.connection, inbound: c.nodeInbound, outbound: c.nodeOutbound)
        flush()
        return c
    }

    /// The subscribing connection's DTLS handshake finished: the room gets its SRTP keys.
    public func keySubscription(of m: Member) throws {
        try room.sessions.setSRTP(connection: m.subscribe.connection, inbound: m.subscribe.nodeInbound, outbound: m.subscribe.nodeOutbound)
        flush()
    }

    /// The network between the node and a subscriber: datagrams to `connection` cross `link` (and arrive
    /// when it says), and the subscriber sends transport-cc feedback about them every 100 ms, as a browser
    /// does.
    public func shapeDownlink(of connection: ConnectionID, link: SimulatedLink) {
        downlinks[connection] = Downlink(link: link)
    }

    public func downlink(of connection: ConnectionID) -> SimulatedLink? { downlinks[connection]?.link }

    public func setDownlinkCapacity(of connection: ConnectionID, bitsPerSecond: Double) {
        downlinks[connection]?.link.capacityBps = bitsPerSecond
    }

    struct Downlink {
        var link: SimulatedLink
        var recorder = TransportFeedbackRecorder()
        var inFlight: [(arrival: MonoTime, datagram: [UInt8])] = []
    }

    var downlinks: [ConnectionID: Downlink] = [:]

    /// Subscribes again with `audioSlots` + `videoSlots` slots (mids a0.., v0.., slot SSRCs as at join, so
    /// the ones kept are unchanged): on the same connection (a renegotiation) or on a new one (a client that
    /// started over). Returns the member with its subscribing connection.
    public func resubscribe(_ m: Member, audioSlots: Int, videoSlots: Int, newConnection: Bool) throws -> Member {
        let base = m.audio.ssrc - 1
        var slots: [SlotDescription] = []
        for i in 0..<audioSlots { slots.append(SlotDescription(codec: .opus, mid: "a\(i)", ssrc: base + 0x100 + UInt32(i), payloadType: 109, audioLevelExtensionID: 3)) }
        for i in 0..<videoSlots { slots.append(SlotDescription(codec: .vp8, mid: "v\(i)", ssrc: base + 0x200 + UInt32(i), payloadType: 98)) }
        var next = m
        if newConnection { next = Member(id: m.id, publish: m.publish, subscribe: newClient(), audio: m.audio, video: m.video, screen: m.screen,
                                               transportSequence: m.transportSequence, options: m.options) }
        try room.sessions.attachSubscriber(m.id, connection: next.subscribe.connection, slots: slots, now: now, into: batch)
        if newConnection {
            try room.sessions.setSRTP(connection: next.subscribe.connection, inbound: next.subscribe.nodeInbound, outbound: next.subscribe.nodeOutbound)
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
                          video: RTPStreamWriter(ssrc: m.video.ssrc ^ 0x00F0_0000, payloadType: 96, timestamp: 90_000),
                          screen: RTPStreamWriter(ssrc: m.screen.ssrc ^ 0x00F0_0000, payloadType: 96, timestamp: 45_000),
                          transportSequence: m.transportSequence, options: m.options)
        }
        var tracks = [TrackDescription(codec: .opus, ssrc: next.audio.ssrc, payloadType: 111, audioLevelExtensionID: next.audio.audioLevelExtensionID)]
        if video { tracks.append(TrackDescription(codec: .vp8, ssrc: next.video.ssrc, rtxSSRC: next.video.ssrc + 1, payloadType: 96)) }
        try room.sessions.attachPublisher(m.id, connection: next.publish.connection, tracks: tracks, now: now)
        if newConnection {
            try room.sessions.setSRTP(connection: next.publish.connection, inbound: next.publish.nodeInbound, outbound: next.publish.nodeOutbound)
        }
        flush()
        return next
    }

    private func newClient(profile: SRTPProfile = .aeadAES128GCM) -> SimulatedClient {
        let c = SimulatedClient(connection: ConnectionID(UInt64(nextConnection)), profile: profile, seed: UInt64(nextConnection) * 7919,
                                nullCipher: nullCipher)
        nextConnection += 1
        clients[c.connection] = c
        return c
    }

    /// Sends a plain packet from a client: protects it and hands it to the room.
    /// A packet the client cannot protect (libsrtp refuses its header) is not sent.
    public func send(_ plain: [UInt8], from client: SimulatedClient) {
        if let uplink, !uplink(client.connection, plain) { return }
        guard let datagram = client.tryProtect(plain) else { return }
        sendRaw(datagram, from: client.connection)
    }

    /// Hands a datagram to the room as it arrived (no protection added); `arrival` is the socket's stamp.
    public func sendRaw(_ datagram: [UInt8], from connection: ConnectionID, arrival: MonoTime? = nil) {
        buffer.withUnsafeMutableBytes { buf in
            let n = min(datagram.count, buf.count - SRTPSession.maxOverhead)
            buf.copyBytes(from: datagram[0..<n])
            room.receive(buf, length: n, from: connection, now: now, arrival: arrival, into: batch)
        }
        flush()
    }

    /// Moves virtual time forward, running the room's timers on the way.
    public func advance(to t: MonoTime) {
        while true {
            let d = min(room.nextDeadline, nextDownlinkEvent)
            guard d <= t else { break }
            now = max(now, d)
            room.tick(now: now, into: batch)
            flush()
            deliverDownlinks()
        }
        now = max(now, t)
        room.tick(now: now, into: batch)
        flush()
        deliverDownlinks()
    }

    /// The earliest arrival or feedback due on a shaped downlink.
    private var nextDownlinkEvent: MonoTime {
        downlinks.values.reduce(MonoTime.never) { m, d in
            min(m, d.inFlight.first?.arrival ?? .never, d.recorder.hasPending ? d.recorder.nextFeedback : .never)
        }
    }

    /// Hands the shaped downlinks' datagrams that arrived by `now` to their clients, and sends the clients'
    /// transport-cc feedback to the room.
    private func deliverDownlinks() {
        for conn in downlinks.keys.sorted(by: { $0.raw < $1.raw }) {
            guard let c = clients[conn] else { continue }
            while let first = downlinks[conn]!.inFlight.first, first.arrival <= now {
                downlinks[conn]!.inFlight.removeFirst()
                guard let plain = c.unprotect(first.datagram) else { undecryptable += 1; continue }
                plain.withUnsafeBytes { p in
                    if !isRTCP(p), case .success(let h) = RTPHeader.parse(p), let r = h.extensions(in: p).find(5), r.count == 2 {
                        downlinks[conn]!.recorder.record(sequence: UInt16(p[r.lowerBound]) << 8 | UInt16(p[r.lowerBound + 1]), arrival: first.arrival)
                    }
                }
                onReceive?(conn, plain)
                if keepReceived { received[conn, default: []].append(plain) }
            }
            if downlinks[conn]!.recorder.isDue(now) {
                var buf = [UInt8](repeating: 0, count: 1500)
                var feedback: [[UInt8]] = []
                while let n = buf.withUnsafeMutableBytes({ downlinks[conn]!.recorder.writeFeedback(sender: 0xFEED, media: 1, now: now, into: $0) }) {
                    feedback.append(Array(buf[0..<n]))
                }
                for f in feedback { send(f, from: c) }
            }
        }
    }

    public func advance(by ms: Int64) { advance(to: now + .milliseconds(ms)) }

    /// Delivers the batch to the clients and records the events.
    public func flush() {
        for i in 0..<batch.count {
            let dest = batch.destination(at: i)
            guard let c = clients[dest] else { continue }
            let datagram = Array(batch.datagram(at: i))
            if let network, !network(dest, datagram) { continue }
            if downlinks[dest] != nil {
                if let arrival = downlinks[dest]!.link.transmit(size: datagram.count + 28, at: now) {
                    downlinks[dest]!.inFlight.append((arrival, datagram))
                }
                continue
            }
            if let plain = c.unprotect(datagram) {
                onReceive?(dest, plain)
                if keepReceived { received[dest, default: []].append(plain) }
            } else {
                undecryptable += 1
            }
        }
        batch.sent(at: now)  // as the worker does once the kernel took them
        batch.removeAll()
        for e in room.drainEvents() { events.append((now, e)) }
    }

    public func clearReceived() { received.removeAll() }
    public func clearEvents() { events.removeAll() }
    /// Keeps only the newest `count` events (a long run that reads back only the latest).
    public func trimEvents(keeping count: Int) { events.removeFirst(max(0, events.count - count)) }

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
