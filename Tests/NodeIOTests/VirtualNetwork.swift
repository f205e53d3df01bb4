import Foundation
import NodeIO
import SFU
import SFUTestSupport
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

    /// Reads the node's answer: its ICE credentials for the checks and, the first time, its fingerprint.
    func accept(_ answer: String) throws {
        let m = try #require(try SessionDescription.parse(answer).media.first { $0.port != 0 })
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

/// The network between a `WorkerCore` and its virtual clients: delivers the core's control datagrams and
/// media to the client at each destination, and the clients' datagrams to the core, on virtual time.
final class VirtualNetwork {
    let core: WorkerCore
    var now = MonoTime.seconds(100)
    var clients: [VirtualClient] = []
    var events: [(room: String, event: RoomEvent)] = []
    /// Datagrams the core sent to an address no client has.
    var strays = 0
    private var buffer = [UInt8](repeating: 0, count: 2048)

    init(limits: WorkerLimits = .init(), consent: MonoTime.Interval = .seconds(30)) {
        let edge = WorkerEdge(certificate: try! DTLSCertificate(), candidates: [TransportAddress("10.0.0.1:10000")!])
        edge.consentTimeout = consent
        core = WorkerCore(edge: edge, index: 0, limits: limits)
        core.addRoom(try! Room(name: "r", now: now))
    }

    var room: Room { core.room("r")! }

    func join(_ client: VirtualClient) { if !clients.contains(where: { $0 === client }) { clients.append(client) } }

    /// A datagram from a client (or from `address`, to replay one) into the core; then everything delivered.
    func send(_ d: [UInt8], from address: TransportAddress) {
        buffer.replaceSubrange(0..<d.count, with: d)
        buffer.withUnsafeMutableBytes { core.receive($0, length: d.count, from: address, now: now) }
        deliver()
    }

    func send(_ d: [UInt8], from c: VirtualClient) { send(d, from: c.address) }

    /// Hands the core's output to the clients until nothing more comes back.
    func deliver() {
        var rounds = 0
        while rounds < 50 {
            rounds += 1
            var replies: [([UInt8], VirtualClient)] = []
            for (bytes, to) in core.drainControl() {
                guard let c = clients.first(where: { $0.address == to }) else { strays += 1; continue }
                for r in c.receive(bytes, now: now) { replies.append((r, c)) }
            }
            for i in 0..<core.batch.count {
                guard let to = core.destination(of: core.batch.destination(at: i)),
                      let c = clients.first(where: { $0.address == to }) else { strays += 1; continue }
                _ = c.receive(Array(core.batch.datagram(at: i)), now: now)
            }
            core.batch.sent(at: now)
            core.batch.removeAll()
            for (room, es) in core.drainEvents() { events += es.map { (room, $0) } }
            if replies.isEmpty { return }
            for (r, c) in replies {
                buffer.replaceSubrange(0..<r.count, with: r)
                buffer.withUnsafeMutableBytes { core.receive($0, length: r.count, from: c.address, now: now) }
            }
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
            if core.nextDeadline <= now { core.tick(now: now) }
            each?()
            deliver()
        }
    }

    func states(of participant: String) -> [(ParticipantState, String?)] {
        events.compactMap { if case .participantState(participant, let s, let r) = $0.event { (s, r) } else { nil } }
    }
}
