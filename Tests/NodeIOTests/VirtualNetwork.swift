import Foundation
import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import Testing
import WebRTCEdge

/// A client on a simulated network: its own ICE credentials and DTLS certificate (kept across offers, as a
/// browser's RTCPeerConnection keeps them), an SDP offer, ICE checks, DTLS client, SRTP. Datagrams travel
/// through `VirtualNetwork`, never a socket.
final class VirtualClient: VirtualTransportClient {
    var cert = try! DTLSCertificate(commonName: "client")
    /// Decrypted RTP and RTCP the node sent this client.
    var rtp: [[UInt8]] = []
    var rtcp: [[UInt8]] = []
    let ssrc = UInt32.random(in: 1...0x0FFF_FFFF)
    var writer: RTPStreamWriter

    init(_ address: String) {
        writer = RTPStreamWriter(ssrc: ssrc, payloadType: 111, audioLevelExtensionID: 1)
        super.init(address: TransportAddress(address)!, ice: .random())
    }

    override func received(rtp plain: UnsafeRawBufferPointer) { rtp.append(Array(plain)) }
    override func received(rtcp plain: UnsafeRawBufferPointer) { rtcp.append(Array(plain)) }

    /// A publish offer (one Opus track) or a subscribe offer with `slots` audio slots (mids 0...).
    func offer(publish: Bool, slots: Int = 1) -> String {
        let count = publish ? 1 : slots
        var l = ["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0 0",
                 "a=group:BUNDLE " + (0..<count).map(String.init).joined(separator: " ")]
        for i in 0..<count {
            l += ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:\(i)", publish ? "a=sendonly" : "a=recvonly",
                  "a=rtcp-mux", "a=setup:actpass", "a=rtpmap:111 opus/48000/2", "a=extmap:1 \(OfferAnswer.audioLevelURI)",
                  "a=fingerprint:\(cert.fingerprint)", "a=ice-ufrag:\(ice.ufrag)", "a=ice-pwd:\(ice.password)"]
            if publish { l.append("a=ssrc:\(ssrc) cname:c") }
        }
        return l.joined(separator: "\r\n") + "\r\n"
    }

    /// Where the node's answer told the client to send (its first candidate).
    var server: TransportAddress?

    /// Reads the node's answer: its ICE credentials for the checks, its candidate and, the first time, its
    /// fingerprint.
    func accept(_ answer: String) throws {
        let m = try #require(try SessionDescription.parse(answer).media.first { $0.port != 0 })
        if let c = m.attribute("candidate")?.split(separator: " "), c.count > 5 { server = TransportAddress("\(c[4]):\(c[5])") }
        checks = ICEControllingClient(local: ice, remote: ICECredentials(ufrag: m.attribute("ice-ufrag")!, password: m.attribute("ice-pwd")!))
        if dtls == nil || dtls?.state == .closed {
            dtls = try DTLSEndpoint(role: .client, certificate: cert, remoteFingerprint: DTLSFingerprint(sdp: m.attribute("fingerprint")!))
            tx = nil
            rx = nil
        }
    }

    /// A new identity, as a new RTCPeerConnection has: new certificate and ICE credentials.
    func startOver() {
        cert = try! DTLSCertificate(commonName: "client")
        ice = .random()
        dtls = nil
    }

    func check(nominate: Bool = true) -> [UInt8] { bindingRequest(nominate: nominate)! }

    /// One Opus packet of speech level, protected.
    func audioPacket() -> [UInt8] {
        let plain = writer.packet([0x78, 0x80, 0x11, 0x22, 0x33, 0x44], level: 20)
        writer.timestamp &+= 960
        return protect(plain)!
    }
}

/// The network between worker cores and their virtual clients: delivers each core's control datagrams and
/// media to the client at each destination, the clients' datagrams to the core whose address their answer
/// gave (its candidate), and what cores hand each other (`Handoff` batches, `PeerMessage`s) as the workers'
/// shells would, on virtual time. One core unless `workers` says more; the room lives on core 0.
final class VirtualNetwork {
    let cores: [WorkerCore]
    var core: WorkerCore { cores[0] }
    var now = MonoTime.seconds(100)
    var clients: [VirtualClient] = []
    var events: [(room: String, event: RoomEvent)] = []
    /// Datagrams a core sent to an address no client has.
    var strays = 0
    /// Datagrams a client got from a core other than the one its answer named: a socket it never checked.
    var fromWrongWorker = 0
    /// Datagrams each core's socket sent, by core.
    var sentBy: [Int]
    private var buffer = [UInt8](repeating: 0, count: 2048)

    init(limits: WorkerLimits = .init(), consent: MonoTime.Interval = .seconds(30), workers: Int = 1) {
        let certificate = try! DTLSCertificate()
        var cores: [WorkerCore] = []
        for i in 0..<workers {
            let edge = WorkerEdge(certificate: certificate, candidates: [TransportAddress("10.0.0.1:\(10000 + i)")!])
            edge.consentTimeout = consent
            cores.append(WorkerCore(edge: edge, index: i, limits: limits))
        }
        if workers > 1 { for c in cores { c.peerCandidates = cores.map(\.edge.candidates) } }
        self.cores = cores
        sentBy = [Int](repeating: 0, count: workers)
        cores[0].addRoom(try! Room(name: "r", now: now))
    }

    var room: Room { core.room("r")! }

    func join(_ client: VirtualClient) { if !clients.contains(where: { $0 === client }) { clients.append(client) } }

    /// The core a client's answer pointed it at (core 0 before any answer).
    func worker(of c: VirtualClient) -> Int { c.server.flatMap { s in cores.firstIndex { $0.edge.candidates.contains(s) } } ?? 0 }

    /// A datagram from a client (or from `address`, to replay one) into the core; then everything delivered.
    func send(_ d: [UInt8], from address: TransportAddress) {
        let c = clients.first { $0.address == address }
        inject(d, from: address, into: cores[c.map(worker(of:)) ?? 0])
        deliver()
    }

    func send(_ d: [UInt8], from c: VirtualClient) { send(d, from: c.address) }

    private func inject(_ d: [UInt8], from address: TransportAddress, into core: WorkerCore) {
        buffer.replaceSubrange(0..<d.count, with: d)
        buffer.withUnsafeMutableBytes { core.receive($0, length: d.count, from: address, now: now, arrival: now) }
    }

    /// A datagram core `w` sends from its socket to `to`.
    private func transmit(_ bytes: [UInt8], from w: Int, to: TransportAddress, replies: inout [([UInt8], VirtualClient)]) {
        guard let c = clients.first(where: { $0.address == to }) else { strays += 1; return }
        sentBy[w] += 1
        if worker(of: c) != w { fromWrongWorker += 1 }
        for r in c.receive(bytes, now: now) { replies.append((r, c)) }
    }

    /// Hands the cores' output to the clients and to each other until nothing more comes back.
    func deliver() {
        var rounds = 0
        while rounds < 50 {
            rounds += 1
            var replies: [([UInt8], VirtualClient)] = []
            var handedOver = false
            for (w, core) in cores.enumerated() {
                // In the order the core hands them out (`WorkerOutput`).
                let o = core.pollAll()
                for i in 0..<core.batch.count {
                    guard let to = core.destination(of: core.batch.destination(at: i)) else { strays += 1; continue }
                    transmit(Array(core.batch.datagram(at: i)), from: w, to: to, replies: &replies)
                }
                core.batch.sent(at: now)
                core.batch.removeAll()
                for h in o.handoffs {
                    handedOver = true
                    let peer = cores[h.worker]
                    switch h.kind {
                    case .send:
                        h.batch.sent(at: now)
                        peer.protectHandedOver(h.batch)
                        for i in 0..<h.batch.count {
                            guard let to = peer.destination(of: h.batch.destination(at: i)) else { strays += 1; continue }
                            transmit(Array(h.batch.datagram(at: i)), from: h.worker, to: to, replies: &replies)
                        }
                    case .receive:
                        peer.receiveRelayed(h.batch, from: w, now: now)
                    }
                    h.batch.removeAll()
                }
                for (to, m) in o.peers {
                    handedOver = true
                    cores[to].receive(peer: m, from: w, now: now)
                }
                for (bytes, to) in o.control { transmit(bytes, from: w, to: to, replies: &replies) }
                for (room, es) in o.events { events += es.map { (room, $0) } }
            }
            if replies.isEmpty && !handedOver { return }
            for (r, c) in replies { inject(r, from: c.address, into: cores[worker(of: c)]) }
        }
    }

    /// Sends an offer through the core's session API and hands the answer to the client.
    @discardableResult
    func offer(_ c: VirtualClient, participant: String, publish: Bool, slots: Int = 1) throws -> SessionAnswer {
        join(c)
        let text = c.offer(publish: publish, slots: slots)
        let a = publish ? try core.publish(room: "r", participant: participant, offer: text, now: now)
            : try core.subscribe(room: "r", participant: participant, offer: text, now: now)
        try c.accept(a.sdp)
        deliver()
        return a
    }

    /// ICE check with nomination, then the DTLS handshake if the client has none yet.
    func connect(_ c: VirtualClient) {
        send(c.check(), from: c)
        if let dtls = c.dtls, dtls.state == .new {
            for d in dtls.start(now: now) { send(d, from: c) }
        }
    }

    /// Moves time on, running the core's timers as they fall due.
    func advance(by ms: Int64, every step: Int64 = 20, _ each: (() -> Void)? = nil) {
        let end = now + .milliseconds(ms)
        while now < end {
            now = min(end, now + .milliseconds(step))
            for core in cores where core.nextDeadline <= now { core.tick(now: now) }
            each?()
            deliver()
        }
    }

    func states(of participant: String) -> [(ParticipantState, String?)] {
        events.compactMap { if case .participantState(participant, let s, let r, _) = $0.event { (s, r) } else { nil } }
    }
}
