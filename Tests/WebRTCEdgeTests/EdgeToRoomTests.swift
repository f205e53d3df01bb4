import Foundation
import SFU
import Testing
@testable import WebRTCEdge

/// A client as the node sees it on the wire: SDP offer, ICE checks as the controlling agent, DTLS client,
/// SRTP with the exported keys.
final class WireClient {
    let ice = ICECredentials.random()
    let cert = try! DTLSCertificate(commonName: "client")
    var address: TransportAddress
    var checks: ICEControllingClient?
    var dtls: DTLSEndpoint?
    var tx: SRTPSession?
    var rx: SRTPSession?
    var received: [[UInt8]] = []

    init(address: String) { self.address = TransportAddress(address)! }

    func offer(publish: Bool, ssrc: UInt32 = 0) -> String {
        var lines = ["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=group:BUNDLE 0",
                     "a=fingerprint:\(cert.fingerprint)", "a=ice-ufrag:\(ice.ufrag)", "a=ice-pwd:\(ice.password)",
                     "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:0",
                     publish ? "a=sendonly" : "a=recvonly", "a=rtcp-mux", "a=setup:actpass",
                     "a=rtpmap:111 opus/48000/2", "a=extmap:1 \(OfferAnswer.audioLevelURI)"]
        if publish { lines.append("a=ssrc:\(ssrc) cname:c") }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// Reads the node's answer: its ICE credentials and fingerprint.
    func accept(answer text: String) throws {
        let a = try SessionDescription.parse(text)
        let m = try #require(a.media.first)
        checks = ICEControllingClient(local: ice, remote: ICECredentials(ufrag: m.attribute("ice-ufrag")!, password: m.attribute("ice-pwd")!))
        dtls = try DTLSEndpoint(role: .client, certificate: cert, remoteFingerprint: DTLSFingerprint(sdp: m.attribute("fingerprint")!),
                                initialRetransmitTimeout: .milliseconds(20))
    }
}

@Suite(.serialized, .timeLimit(.minutes(1))) struct EdgeToRoomTests {
    let edge = WorkerEdge(certificate: try! DTLSCertificate(), candidates: [TransportAddress("127.0.0.1:10000")!])
    let room = try! Room(name: "r", now: .zero)
    let batch = DatagramBatch()
    var clients: [ConnectionID: WireClient] = [:]

    static func now() -> MonoTime {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonoTime(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }

    /// Delivers the edge's outputs: datagrams to the client at that address, keys into the room.
    mutating func handle(_ outputs: [WorkerEdge.Output], now: MonoTime) throws {
        for o in outputs {
            switch o {
            case .send(let d, let to):
                guard let (_, c) = clients.first(where: { $0.value.address == to }) else { continue }
                if PacketClass(firstByte: d[0]) == .dtls, let dtls = c.dtls {
                    for reply in d.withUnsafeBytes({ dtls.receive($0, now: now) }) { try deliverToNode(reply, from: c, now: now) }
                } else {
                    c.received.append(d)
                }
            case .keys(let conn, let k):
                try room.sessions.setSRTP(connection: conn, inbound: k.inbound, outbound: k.outbound)
            default:
                break
            }
        }
    }

    mutating func deliverToNode(_ d: [UInt8], from c: WireClient, now: MonoTime) throws {
        var buf = d + [UInt8](repeating: 0, count: 256)
        let outputs = buf.withUnsafeBytes { edge.receive(UnsafeRawBufferPointer(rebasing: $0[0..<d.count]), from: c.address, now: now) }
        for o in outputs {
            if case .media(let conn) = o {
                buf.withUnsafeMutableBytes { room.receive($0, length: d.count, from: conn, now: now, into: batch) }
                try flushRoom()
            }
        }
        try handle(outputs, now: now)
    }

    /// Sends the room's datagrams to where each connection's client nominated.
    func flushRoom() throws {
        for i in 0..<batch.count {
            let conn = batch.destination(at: i)
            guard let to = edge.destination(of: conn), let c = clients.values.first(where: { $0.address == to }) else { continue }
            c.received.append(Array(batch.datagram(at: i)))
        }
        batch.removeAll()
    }

    /// SDP, ICE check with nomination, DTLS handshake, keys into the room.
    mutating func connect(_ c: WireClient, conn: ConnectionID, id: String, publish: Bool) throws {
        let now = Self.now()
        clients[conn] = c
        let local = edge.prepare(conn)
        if publish {
            let r = try OfferAnswer.answerPublish(c.offer(publish: true, ssrc: 0xA0D10), local: local)
            try edge.attach(conn, remote: r.remote)
            try room.admit(id, now: now)
            try room.sessions.attachPublisher(id, connection: conn, tracks: r.tracks, now: now)
            try c.accept(answer: r.answer.text)
        } else {
            let r = try OfferAnswer.answerSubscribe(c.offer(publish: false), local: local) { _, _, i in 0x5100 + UInt32(i) }
            try edge.attach(conn, remote: r.remote)
            try room.admit(id, now: now)
            try room.sessions.attachSubscriber(id, connection: conn, slots: r.slots, now: now, into: batch)
            try c.accept(answer: r.answer.text)
        }
        let tid = ICEControllingClient.randomTransactionID()
        try deliverToNode(c.checks!.bindingRequest(nominate: true, transactionID: tid), from: c, now: now)
        #expect(c.checks!.check(response: try #require(c.received.last), transactionID: tid) == .success(mapped: c.address))
        for d in c.dtls!.start(now: now) { try deliverToNode(d, from: c, now: now) }
        let keys = try #require(c.dtls!.keys)
        c.tx = try SRTPSession(keys: keys.outbound, direction: .outbound)
        c.rx = try SRTPSession(keys: keys.inbound, direction: .inbound)
        c.received.removeAll()
    }

    func audioPacket(_ c: WireClient, seq: UInt16) -> [UInt8] {
        var plain: [UInt8] = [0x90, 111, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0x0A, 0x0D, 0x10,
                              0xBE, 0xDE, 0, 1, 0x10, 20, 0, 0, 0x78, 0x80] + [UInt8](repeating: UInt8(seq & 0xFF), count: 40)
        plain += [UInt8](repeating: 0, count: SRTPSession.maxOverhead)
        let n = plain.withUnsafeMutableBytes { try! c.tx!.protectRTP($0, length: 62).get() }
        return Array(plain[0..<n])
    }

    @Test mutating func mediaFlowsFromPublisherToSubscriberThroughICEAndDTLS() throws {
        let a = WireClient(address: "10.0.0.1:5000"), b = WireClient(address: "10.0.0.2:6000")
        try connect(a, conn: ConnectionID(1), id: "A", publish: true)
        try connect(b, conn: ConnectionID(2), id: "B", publish: false)
        for seq in 1...20 { try deliverToNode(audioPacket(a, seq: UInt16(seq)), from: a, now: Self.now()) }
        let plain = b.received.compactMap { d -> [UInt8]? in
            var buf = d
            guard case .success(let n) = buf.withUnsafeMutableBytes({ b.rx!.unprotectRTP($0, length: d.count) }) else { return nil }
            return Array(buf[0..<n])
        }
        #expect(plain.count == 20, "every packet reached B, decrypted with B's DTLS keys")
        #expect(plain.allSatisfy { $0[8...11] == [0, 0, 0x51, 0x00] }, "on B's slot SSRC")
    }

    @Test mutating func aRoamingPublisherKeepsItsSessionAndAnUnvalidatedAddressIsIgnored() throws {
        let a = WireClient(address: "10.0.0.1:5000"), b = WireClient(address: "10.0.0.2:6000")
        try connect(a, conn: ConnectionID(1), id: "A", publish: true)
        try connect(b, conn: ConnectionID(2), id: "B", publish: false)
        try deliverToNode(audioPacket(a, seq: 1), from: a, now: Self.now())
        // A moves to 4G: media from the new address is ignored until a check passes there.
        a.address = TransportAddress("172.20.0.9:7000")!
        try deliverToNode(audioPacket(a, seq: 2), from: a, now: Self.now())
        #expect(edge.router.drops(.unvalidatedAddress) == 1)
        try deliverToNode(a.checks!.bindingRequest(nominate: true), from: a, now: Self.now())
        #expect(edge.destination(of: ConnectionID(1)) == a.address)
        try deliverToNode(audioPacket(a, seq: 3), from: a, now: Self.now())
        #expect(b.received.count == 2, "packets 1 and 3 reached B; the same SRTP session continued")
    }

    @Test mutating func consentExpiryIsReported() throws {
        let a = WireClient(address: "10.0.0.1:5000")
        try connect(a, conn: ConnectionID(1), id: "A", publish: true)
        let states = edge.tick(now: Self.now() + .seconds(31))
        #expect(states.contains(.state(ConnectionID(1), .failed)))
        try deliverToNode(audioPacket(a, seq: 9), from: a, now: Self.now() + .seconds(31))
        #expect(edge.router.drops(.unvalidatedAddress) == 1)
    }
}
