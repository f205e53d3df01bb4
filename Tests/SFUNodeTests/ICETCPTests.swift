import Foundation
import LoadGen
import NodeIO
import SFU
import SFUMedia
import SFUNode
import Testing
import WebRTCEdge

/// ICE over TCP on a real node (RFC 6544 passive candidates, RFC 4571 framing): clients that reach the node
/// only by TCP join, publish and subscribe, beside clients on UDP, and a slow or vanished TCP client costs
/// the others nothing.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ICETCPTests {
    static func node(_ configure: (inout NodeConfiguration) -> Void = { _ in }) throws -> Node {
        var c = NodeConfiguration()
        c.workers = 1
        c.mediaListen = TransportAddress("127.0.0.1:0")!
        c.apiListen = TransportAddress("127.0.0.1:0")!
        configure(&c)
        let n = try Node(configuration: c)
        n.start()
        return n
    }

    static func room(_ node: Node, _ name: String = "r") async throws {
        var c = RoomConfiguration()
        c.levelSource = .extension
        c.maxActiveTalkers = 2
        try await node.createRoom(name, configuration: c)
    }

    static func client(_ node: Node, _ who: String, publish: Bool, tcp: Bool, ipv6: Bool = false, room: String = "r") async throws -> LoadClient {
        try await node.withRoom(room) { r, _, now in try r.admit(who, name: who, role: .participant, talkerCount: nil, now: now) }
        var profile: LoadClient.Profile = publish ? .publisher(audio: true) : .subscriber(audio: 2)
        profile.overTCP = tcp
        profile.ipv6 = ipv6
        let client = try LoadClient(certificate: DTLSCertificate(commonName: who), profile: profile)
        let answer = publish ? try await node.publish(room: room, participant: who, offer: client.offer())
                             : try await node.subscribe(room: room, participant: who, offer: client.offer())
        try client.start(answer: answer.sdp, now: MonoClock.now())
        return client
    }

    /// Polls the clients every 5 ms, publishers sending speech each 20 ms, until `done` or 10 s.
    static func run(_ clients: [LoadClient], until done: () async throws -> Bool) async throws {
        let speech = OpusFrameEncoder().encodeAll(TestSignal.sine(frequency: 220, dbfs: -18, seconds: 1))
        var frame = 0
        var nextFrame = MonoClock.now()
        let end = MonoClock.now() + .seconds(10)
        while MonoClock.now() < end {
            let now = MonoClock.now()
            for c in clients { c.poll(now: now) }
            if now >= nextFrame {
                nextFrame = nextFrame + .milliseconds(20)
                for c in clients where c.publishes && c.state == .connected { c.sendAudio(speech[frame % speech.count], level: 18) }
                frame += 1
                if try await done() { return }
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func theAnswerOffersAPassiveTCPCandidateThatUDPOutranks() async throws {
        let node = try Self.node()
        defer { node.stop() }
        try await Self.room(node)
        let alice = try await Self.client(node, "alice", publish: true, tcp: false)
        let answer = try await node.publish(room: "r", participant: "alice", offer: alice.offer())
        let lines = try SessionDescription.parse(answer.sdp).media[0].values("candidate")
        let udpPort = node.workers[0].socket.local.port
        let tcp = try #require(node.workers[0].tcp)
        #expect(lines.count == 2)
        #expect(lines[0].contains(" udp ") && lines[0].hasSuffix("127.0.0.1 \(udpPort) typ host"))
        #expect(lines[1].contains(" tcp ") && lines[1].hasSuffix("127.0.0.1 \(tcp.local.port) typ host tcptype passive"))
        #expect(tcp.local.port == udpPort, "the TCP port has the UDP port's number when it is free")
        let priority = { (line: String) in Int(line.split(separator: " ")[3])! }
        #expect(priority(lines[0]) > priority(lines[1]))

        let without = try Self.node { $0.mediaTCP = false }
        defer { without.stop() }
        try await Self.room(without)
        let bob = try await Self.client(without, "bob", publish: true, tcp: false)
        let plain = try await without.publish(room: "r", participant: "bob", offer: bob.offer())
        #expect(!plain.sdp.contains(" tcp "), "media.tcp = false offers UDP alone")
        #expect(without.workers[0].tcp == nil)
    }

    @Test func clientsOverTCPPublishAndSubscribeBesideClientsOverUDP() async throws {
        let node = try Self.node()
        defer { node.stop() }
        try await Self.room(node)
        let alice = try await Self.client(node, "alice", publish: true, tcp: true)
        let bob = try await Self.client(node, "bob", publish: false, tcp: true)
        let carol = try await Self.client(node, "carol", publish: false, tcp: false)
        let dave = try await Self.client(node, "dave", publish: true, tcp: false)
        let clients = [alice, bob, carol, dave]
        try await Self.run(clients) { clients.allSatisfy { $0.state == .connected } && bob.mediaPacketsReceived > 100 && carol.mediaPacketsReceived > 100 }
        #expect(clients.allSatisfy { $0.state == .connected })
        #expect(bob.mediaPacketsReceived > 100, "a TCP subscriber hears both publishers: \(bob.mediaPacketsReceived)")
        #expect(carol.mediaPacketsReceived > 100, "a UDP subscriber hears the TCP publisher too: \(carol.mediaPacketsReceived)")
        #expect(alice.stream != nil && carol.stream == nil)
        let m = try await node.workers[0].metrics()
        let tcp = try #require(m.tcp)
        #expect(tcp.open == 2 && tcp.unauthenticated == 0)
        #expect(tcp.framesIn > 40 && tcp.framesOut > 100, "\(tcp.framesIn) in, \(tcp.framesOut) out")
        #expect(tcp.badFrames == 0 && tcp.sendDrops == 0)
        // Each participant's path, in the room's stats and /metrics.
        let stats = try await node.withRoom("r") { r, _, _ in r.stats() }
        let path = { (who: String) in stats.first { $0.participant == who } }
        #expect(path("alice")?.publishPath == TransportPath(carrier: .tcp, family: .ipv4))
        #expect(path("bob")?.subscribePath == TransportPath(carrier: .tcp, family: .ipv4))
        #expect(path("carol")?.subscribePath == TransportPath(carrier: .udp, family: .ipv4))
        #expect(path("carol")?.publishPath == nil)
        #expect(m.paths[TransportPath(carrier: .tcp, family: .ipv4)] == 2 && m.paths[TransportPath(carrier: .udp, family: .ipv4)] == 2)
    }

    @Test func aNewConnectionFromAResetSubscribersAddressGetsNoMediaWithoutACheck() async throws {
        // RFC 6544: each TCP connection is a candidate pair of its own. After a subscriber's checked connection is
        // reset, another connection from its IP and port is not its path, whatever the address says.
        let node = try Self.node()
        defer { node.stop() }
        try await Self.room(node)
        let alice = try await Self.client(node, "alice", publish: true, tcp: false)
        let bob = try await Self.client(node, "bob", publish: false, tcp: true)
        try await Self.run([alice, bob]) { bob.state == .connected && bob.mediaPacketsReceived > 50 }
        let old = try #require(bob.stream)
        old.reset()
        let adopter = try TCPStream(connect: old.remote.over(tcp: false), from: old.local.over(tcp: false))
        let rx = ReceiveBatch(capacity: 64)
        var frames = 0
        let end = MonoClock.now() + .seconds(1)
        try await Self.run([alice]) {
            frames += adopter.receive(into: rx)
            return MonoClock.now() >= end
        }
        #expect(frames == 0, "alice's audio for bob reached a connection that never checked: \(frames) frames")
        let tcp = try #require(try await node.workers[0].metrics().tcp)
        #expect(tcp.open == 1 && tcp.unauthenticated == 1, "the new connection waits for a check of its own")
    }

    @Test func anOfferWithARelayCandidateIsReportedRelayedWhenItsChecksComeFromTheRelay() throws {
        let offer = try SessionDescription.parse("""
            v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n\
            m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=sendonly\r\na=rtcp-mux\r\n\
            a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwxyz\r\n\
            a=fingerprint:sha-256 \((0..<32).map { _ in "AB" }.joined(separator: ":"))\r\na=setup:actpass\r\n\
            a=rtpmap:111 opus/48000/2\r\n\
            a=candidate:1 1 udp 2122260223 10.0.0.2 50000 typ host\r\n\
            a=candidate:2 1 udp 41885439 198.51.100.7 61000 typ relay raddr 10.0.0.2 rport 50000\r\n\
            a=candidate:3 1 udp 41885438 2001:db8::7 61001 typ relay raddr :: rport 0\r\n
            """)
        let remote = try OfferAnswer.remoteTransport(offer)
        #expect(remote.relayCandidates == [TransportAddress("198.51.100.7:61000")!, TransportAddress("[2001:db8::7]:61001")!])
        #expect(remote.path(from: TransportAddress("198.51.100.7:61000")!) == TransportPath(carrier: .udp, family: .ipv4, relayed: true))
        #expect(remote.path(from: TransportAddress("[2001:db8::7]:61001")!) == TransportPath(carrier: .udp, family: .ipv6, relayed: true))
        #expect(remote.path(from: TransportAddress("10.0.0.2:50000")!) == TransportPath(carrier: .udp, family: .ipv4))
        #expect(remote.path(from: TransportAddress("10.0.0.2:50000")!.over(tcp: true)) == TransportPath(carrier: .tcp, family: .ipv4))
    }

    @Test func aDualStackNodeTakesClientsOfBothFamiliesOverUDPAndTCP() async throws {
        let node = try Self.node { $0.mediaListenAlso = [TransportAddress("[::1]:0")!] }
        defer { node.stop() }
        try await Self.room(node)
        let alice = try await Self.client(node, "alice", publish: true, tcp: false)
        let answer = try await node.publish(room: "r", participant: "alice", offer: alice.offer())
        let lines = try SessionDescription.parse(answer.sdp).media[0].values("candidate")
        let w = node.workers[0]
        #expect(w.sockets.count == 2 && w.tcpPorts.count == 2)
        #expect(lines.count == 4, "\(lines)")
        #expect(lines[0].contains(" udp ") && lines[0].contains(" 127.0.0.1 \(w.sockets[0].local.port) "))
        #expect(lines[1].contains(" udp ") && lines[1].contains(" ::1 \(w.sockets[1].local.port) "))
        #expect(lines[2].contains(" tcp ") && lines[2].contains(" 127.0.0.1 ") && lines[3].contains(" tcp ") && lines[3].contains(" ::1 "))
        let bob = try await Self.client(node, "bob", publish: false, tcp: false, ipv6: true)
        let carol = try await Self.client(node, "carol", publish: false, tcp: true, ipv6: true)
        let dave = try await Self.client(node, "dave", publish: true, tcp: false, ipv6: true)
        let erin = try await Self.client(node, "erin", publish: false, tcp: false)
        let clients = [alice, bob, carol, dave, erin]
        try await Self.run(clients) { clients.allSatisfy { $0.state == .connected } && [bob, carol, erin].allSatisfy { $0.mediaPacketsReceived > 100 } }
        #expect(clients.allSatisfy { $0.state == .connected })
        for c in [bob, carol, erin] { #expect(c.mediaPacketsReceived > 100, "each subscriber hears both families' publishers: \(c.mediaPacketsReceived)") }
        #expect(bob.nodeAddress?.isIPv6 == true && carol.nodeAddress?.isIPv6 == true && carol.nodeAddress?.isTCP == true)
        let stats = try await node.withRoom("r") { r, _, _ in r.stats() }
        let of = { (who: String) in stats.first { $0.participant == who } }
        #expect(of("bob")?.subscribePath == TransportPath(carrier: .udp, family: .ipv6))
        #expect(of("carol")?.subscribePath == TransportPath(carrier: .tcp, family: .ipv6))
        #expect(of("dave")?.publishPath == TransportPath(carrier: .udp, family: .ipv6))
        #expect(of("erin")?.subscribePath == TransportPath(carrier: .udp, family: .ipv4))
        let m = try await w.metrics()
        #expect(m.sendErrors == 0 && m.sendDrops == 0, "each family's datagrams leave from its own socket")
    }

    @Test func mediaListenTakesOneAddressOrOnePerFamily() throws {
        let c = try NodeConfiguration.load(file: nil, environment: [:], flags: ["media.listen=[\"127.0.0.1:7000\", \"[::1]:7000\"]"])
        #expect(c.mediaListen == TransportAddress("127.0.0.1:7000")! && c.mediaListenAlso == [TransportAddress("[::1]:7000")!])
        let one = try NodeConfiguration.load(file: nil, environment: [:], flags: ["media.listen=127.0.0.1:7000"])
        #expect(one.mediaListenAlso.isEmpty)
        #expect(throws: ConfigError.self) { try NodeConfiguration.load(file: nil, environment: [:], flags: ["media.listen=[\"127.0.0.1:7000\", \"10.0.0.1:7000\"]"]) }
        #expect(throws: ConfigError.self) { try NodeConfiguration.load(file: nil, environment: [:], flags: ["api.listen=[]"]) }
    }

    @Test func subscribersOverTCPHostedByAnotherWorkerHearTheRoom() async throws {
        // Past rooms.spread_after, a subscriber's transport lives on another worker (its TCP port too): the
        // room's worker hands it the rewritten packets and the host frames them onto the connection.
        let node = try Self.node {
            $0.workers = 2
            $0.workerLimits.spreadRoomAfter = 1
        }
        defer { node.stop() }
        try await Self.room(node)
        let alice = try await Self.client(node, "alice", publish: true, tcp: true)
        let subs = [try await Self.client(node, "bob", publish: false, tcp: true), try await Self.client(node, "carol", publish: false, tcp: true),
                    try await Self.client(node, "dave", publish: false, tcp: false)]
        let clients = [alice] + subs
        try await Self.run(clients) { clients.allSatisfy { $0.state == .connected } && subs.allSatisfy { $0.mediaPacketsReceived > 100 } }
        for s in subs { #expect(s.state == .connected && s.mediaPacketsReceived > 100, "\(s.mediaPacketsReceived) packets") }
        var hostFramesOut: UInt64 = 0
        for w in node.workers {
            let hosts = try await w.perform { core, _ in core.hostedCount }
            if hosts > 0 { hostFramesOut += try await w.metrics().tcp?.framesOut ?? 0 }
        }
        #expect(hostFramesOut > 100, "the host worker framed the handed-over packets: \(hostFramesOut)")
    }
}
