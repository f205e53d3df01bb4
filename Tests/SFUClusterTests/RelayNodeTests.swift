import ClusterLab
@testable import ExampleSignaling
import Foundation
import Hummingbird
import HummingbirdWSClient
import LoadGen
import Logging
import NodeIO
import SFU
import SFUCluster
import SFUClient
import SFUMedia
@testable import SFUNode
import Testing
import WebRTCEdge

/// Rooms that span two live nodes (issue 25): two nodes of one registry in this process, each with its control
/// API on a loopback port (the relay's control channel is a WebSocket between them) and its workers' UDP
/// sockets, and WebRTC clients on real UDP (`LoadClient`: ICE, DTLS, SRTP). What one node's publisher says
/// reaches the other node's subscriber through the relay, and what the home decides holds on the other node.
@Suite(.serialized, .timeLimit(.minutes(2))) struct RelayNodeTests {
    struct Cluster {
        var nodes: [Node] = []
        var members: [ClusterMembership] = []
        var tasks: [Task<Void, Never>] = []

        func stop() {
            for t in tasks { t.cancel() }
            for n in nodes { n.stop() }
        }
    }

    /// A free TCP port on loopback, for a control API the other node must be told of before it listens.
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &a) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw RelayMessageError("no free port") }
        return UInt16(bigEndian: a.sin_port)
    }

    /// Two nodes, "a" and "b", registered and serving their control APIs on loopback.
    static func twoNodes(capacity: Int = 1000) async throws -> Cluster {
        let url = try PostgresServer.shared.get().database()
        var c = Cluster()
        for id in ["a", "b"] {
            let port = try freePort()
            var config = NodeConfiguration()
            config.workers = 1
            config.mediaListen = TransportAddress("127.0.0.1:0")!
            config.apiListen = TransportAddress("127.0.0.1:\(port)")!
            config.clusterRegistry = url
            config.clusterNodeID = id
            config.clusterControlURL = "http://127.0.0.1:\(port)"
            config.clusterHeartbeatTimeoutSeconds = 4
            config.clusterCapacity = capacity
            let node = try Node(configuration: config)
            node.start()
            let member = try ClusterMembership(node: node, logger: Logger(label: "test-\(id)"))
            let app = ControlAPI.application(node: node, cluster: member, logger: Logger(label: "api-\(id)"))
            c.nodes.append(node)
            c.members.append(member)
            c.tasks.append(Task { await member.runUntilCancelled() })
            c.tasks.append(Task { try? await app.run() })
        }
        // Alive in the registry and serving by their own account (`ClusterNodeTests.twoNodes`).
        let members = c.members
        try await ClusterNodeTests.eventually {
            try await members[0].registry.nodes().filter(\.alive).count == 2 && members.allSatisfy { !$0.isFenced }
        }
        return c
    }

    static func room(_ node: Node, _ name: String) async throws {
        var c = RoomConfiguration()
        c.levelSource = .extension
        c.maxActiveTalkers = 2
        try await node.createRoom(name, configuration: c)
    }

    static func publisher(_ node: Node, room: String, _ who: String) async throws -> LoadClient {
        try await node.withRoom(room) { r, _, now in try r.admit(who, name: who, role: .participant, talkerCount: nil, now: now) }
        let client = try LoadClient(certificate: DTLSCertificate(commonName: who), profile: .publisher(audio: true))
        let answer = try await node.publish(room: room, participant: who, offer: client.offer())
        try client.start(answer: answer.sdp, now: MonoClock.now())
        return client
    }

    static func subscriber(_ node: Node, room: String, _ who: String) async throws -> LoadClient {
        try await node.withRoom(room) { r, _, now in try r.admit(who, name: who, role: .participant, talkerCount: nil, now: now) }
        let client = try LoadClient(certificate: DTLSCertificate(commonName: who), profile: .subscriber(audio: 2))
        let answer = try await node.subscribe(room: room, participant: who, offer: client.offer())
        try client.start(answer: answer.sdp, now: MonoClock.now())
        return client
    }

    /// Polls the clients every 5 ms (publishers sending a 20 ms frame of speech each 20 ms) until `done` or 15 s.
    static func run(_ clients: [LoadClient], talking: Set<ObjectIdentifier> = [], until done: () async throws -> Bool) async throws {
        let speech = OpusFrameEncoder().encodeAll(TestSignal.sine(frequency: 220, dbfs: -18, seconds: 1))
        var frame = 0
        var nextFrame = MonoClock.now()
        let end = MonoClock.now() + .seconds(15)
        while MonoClock.now() < end {
            let now = MonoClock.now()
            for c in clients { c.poll(now: now) }
            if now >= nextFrame {
                nextFrame = nextFrame + .milliseconds(20)
                for c in clients where c.publishes && c.state == .connected {
                    c.sendAudio(speech[frame % speech.count], level: talking.contains(ObjectIdentifier(c)) ? 18 : 127)
                }
                frame += 1
                if try await done() { return }
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// A room placed with its home on `home` and held on both nodes, Alice publishing on a and Bob subscribed on
    /// b, the relay between them open and keyed both ways, Alice heard by Bob.
    static func sharedRoom(_ cluster: Cluster, home: String) async throws -> (room: String, alice: LoadClient, bob: LoadClient) {
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        // Placement chooses the home: rooms are placed until one lands on `home`.
        var room = ""
        for n in 0..<40 {
            let placed = try await ClusterNodeTests.call(a, cluster.members[0], .post, "/v1/placements", ["room": "r\(n)"])
            if placed.json["node"] as? String == home { room = "r\(n)"; break }
        }
        try #require(!room.isEmpty, "no room placed on \(home)")
        try await Self.room(a, room)
        try await Self.room(b, room)
        let alice = try await Self.publisher(a, room: room, "alice")
        let bob = try await Self.subscriber(b, room: room, "bob")
        // Both nodes see the room shared once their heartbeats reported it; the relay opens and is keyed.
        let mesh = cluster.members[0].relays, other = cluster.members[1].relays
        try await Self.run([alice, bob]) {
            let ends = await mesh.openEnds, others = await other.openEnds
            return ends.count == 1 && ends[0].keyed && others.count == 1 && others[0].keyed
        }
        let (peersOfA, peersOfB) = (await mesh.openEnds.map(\.peer), await other.openEnds.map(\.peer))
        #expect(peersOfA == ["b"] && peersOfB == ["a"])
        // Alice is quiet on a for half a second (the detectors learn her noise floor on both nodes), then talks;
        // Bob, on b, receives her through the relay.
        try await Self.run([alice, bob]) { bob.mediaPacketsReceived >= 25 }
        let quiet = bob.mediaPacketsReceived
        try await Self.run([alice, bob], talking: [ObjectIdentifier(alice)]) { bob.mediaPacketsReceived >= quiet + 100 }
        #expect(quiet >= 25 && bob.mediaPacketsReceived >= quiet + 100, "Bob received \(quiet) quiet and \(bob.mediaPacketsReceived - quiet) loud packets")
        return (room, alice, bob)
    }

    /// With the home on the talker's node (a follows nothing, b follows a's ranking) and on the listener's (b
    /// elects from the levels relayed from a).
    @Test(arguments: ["a", "b"]) func aTalkerOnOneNodeIsHeardByAListenerOnTheOther(home: String) async throws {
        let cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        let (room, _, _) = try await Self.sharedRoom(cluster, home: home)
        // On b, Alice is a participant of the room (a remote one) and speaks, whichever node ranks the room; a,
        // which follows b's ranking when b is the home, shows the same.
        let onB = try await b.withRoom(room) { r, _, _ in (r.contains(participant: "alice"), r.snapshot().activeTalkers) }
        let origins = try await b.withRoom(room) { r, _, _ in Dictionary(uniqueKeysWithValues: r.snapshot().participants.map { ($0.id, $0.origin ?? "") }) }
        #expect(origins == ["alice": "a", "bob": ""], "the room state says who is relayed from where: \(origins)")
        // b's load (heartbeat, placement, metrics) counts its own participants, not those relayed to it.
        #expect(try await b.withRoom(room) { r, _, _ in r.participantCount } == 1)
        let onA = try await a.withRoom(room) { r, _, _ in r.snapshot().activeTalkers }
        #expect(onB.0 && onB.1 == ["alice"] && onA == ["alice"], "b: \(onB), a: \(onA)")
        let refused = (await cluster.members[0].relays.refusedMessages, await cluster.members[1].relays.refusedMessages)
        #expect(refused == (0, 0))
    }

    /// A moderator on the home (b) hard-mutes Alice, who publishes on a: the home's moderation reaches a, which
    /// stops her packets at its own ingress - none of them crosses the relay after that.
    @Test func aHardMuteOnTheHomeStopsATalkerAtHerOwnNode() async throws {
        let cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        let (room, alice, bob) = try await Self.sharedRoom(cluster, home: "b")
        try await b.withRoom(room) { r, core, now in
            try r.admit("mod", name: "mod", role: .moderator, talkerCount: nil, now: now)
            try r.moderation.hardMute(by: "mod", target: "alice", audio: true, video: nil, now: now, into: core.batch)
        }
        let mutedOnA = { try await a.withRoom(room) { r, _, _ in
            (r.snapshot().participants.first { $0.id == "alice" }?.hardMutedAudio ?? false,
             r.stats().first { $0.participant == "alice" }?.drops[.hardMuted] ?? 0)
        } }
        try await Self.run([alice, bob], talking: [ObjectIdentifier(alice)]) { try await mutedOnA().0 }
        let before = try await mutedOnA()
        #expect(before.0, "a applied the home's hard mute")
        // From then on a drops what Alice sends, and nothing of hers reaches b.
        let relayedBefore = try await b.withRoom(room) { r, _, _ in r.stats().first { $0.participant == "alice" }?.packetsReceived ?? 0 }
        try await Self.run([alice, bob], talking: [ObjectIdentifier(alice)]) { try await mutedOnA().1 >= before.1 + 50 }
        let relayedAfter = try await b.withRoom(room) { r, _, _ in r.stats().first { $0.participant == "alice" }?.packetsReceived ?? 0 }
        #expect(try await mutedOnA().1 >= before.1 + 50)
        #expect(relayedAfter - relayedBefore <= 2, "\(relayedAfter - relayedBefore) packets of Alice's crossed after the mute applied on a")
    }

    /// A moderator on a node that is not the room's home (b; the home is a, where Alice talks) moderates the
    /// whole room: b hands each command to the home, which decides it (its rules, its codes) and answers with
    /// the room's moderation, which b applies before it answers. Neither the moderator nor Dan ever publishes,
    /// so the home knows them only because every node tells the others who is in the room.
    @Test func aModeratorOnANodeThatIsNotTheHomeModeratesTheWholeRoom() async throws {
        let cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        let (room, alice, bob) = try await Self.sharedRoom(cluster, home: "a")
        try await b.withRoom(room) { r, _, now in
            try r.admit("mod", name: "Mod", role: .moderator, talkerCount: nil, now: now)
            try r.admit("dan", name: "Dan", role: .participant, talkerCount: nil, now: now)
        }
        let roles = { (node: Node) in try await node.withRoom(room) { r, _, _ in
            Dictionary(uniqueKeysWithValues: r.snapshot().participants.map { ($0.id, "\($0.role.rawValue)\($0.origin.map { "@" + $0 } ?? "")") })
        } }
        try await Self.run([alice, bob]) { try await roles(a)["dan"] != nil }
        #expect(try await roles(a) == ["alice": "participant", "bob": "participant@b", "mod": "moderator@b", "dan": "participant@b"])
        let call = { (path: String, body: [String: Any]) in
            try await ClusterNodeTests.call(b, cluster.members[1], .post, "/v1/rooms/\(room)\(path)", body)
        }
        // A hard mute of Alice, issued on b: the home applies it (Alice stops at a) and b knows it on answering.
        let muted = try await call("/participants/alice/hard-mute", ["by": "mod", "audio": true])
        #expect(muted.status == 200, "\(muted)")
        let mutedOn = { (node: Node) in try await node.withRoom(room) { r, _, _ in r.snapshot().participants.first { $0.id == "alice" }?.hardMutedAudio } }
        let (mutedOnB, mutedOnA) = (try await mutedOn(b), try await mutedOn(a))
        #expect(mutedOnB == true && mutedOnA == true)
        // Dan, silent on b and never relayed, pinned from b: the home pins him, every node shows him pinned.
        let pinned = try await call("/pins", ["by": "mod", "add": ["dan"]])
        #expect(pinned.status == 200 && pinned.json["pinned"] as? [String] == ["dan"], "\(pinned)")
        #expect(try await a.withRoom(room) { r, _, _ in r.pinned } == ["dan"])
        // The home's rules and codes: Dan may not lock the room.
        let refused = try await call("/lock", ["by": "dan", "locked": true])
        #expect(refused.status == 403 && refused.json["result"] as? Int == 5115, "\(refused)")
        #expect(try await a.withRoom(room) { r, _, _ in r.locked } == false)
        // A role handed over on b: the home makes Dan moderator and Mod a participant, and b follows.
        #expect(try await call("/participants/dan/role", ["by": "mod", "role": "moderator"]).status == 200)
        #expect(try await roles(b) == ["alice": "participant@a", "bob": "participant", "mod": "participant", "dan": "moderator"])
        #expect(try await roles(a) == ["alice": "participant", "bob": "participant@b", "mod": "participant@b", "dan": "moderator@b"])
        // b's own clients are told what the home did, as the home's are: b's event stream has it.
        let wanted: [[String: String]] = [["type": "hard_mute", "participant": "alice", "by": "mod"],
                                          ["type": "role", "participant": "dan", "role": "moderator", "by": "mod"],
                                          ["type": "role", "participant": "mod", "role": "participant", "by": "mod"]]
        let told = await Self.events(of: b, room: room, until: wanted)
        for w in wanted { #expect(told.contains { e in w.allSatisfy { e[$0.key] as? String == $0.value } }, "b told no \(w)") }
        #expect(told.contains { $0["type"] as? String == "pins" && $0["pinned"] as? [String] == ["dan"] }, "b told no pins")
        // Dropping a participant of the other node: its own node removes it (and closes its connections), and
        // it leaves every node's room - b's copy of Alice does not stay, nor come back with a's next `streams`.
        let notYet = try await ClusterNodeTests.call(b, cluster.members[1], .delete, "/v1/rooms/\(room)/participants/alice", ["by": "mod"])
        #expect(notYet.status == 403 && notYet.json["result"] as? Int == 5116, "Mod is no moderator any more: \(notYet)")
        let dropped = try await ClusterNodeTests.call(b, cluster.members[1], .delete, "/v1/rooms/\(room)/participants/alice", ["by": "dan"])
        #expect(dropped.status == 200 && dropped.json["closed_connections"] as? Int == 1, "\(dropped)")
        #expect(try await a.withRoom(room) { r, _, _ in r.contains(participant: "alice") } == false)
        try await Self.run([bob]) { try await b.withRoom(room) { r, _, _ in !r.contains(participant: "alice") } }
        try await Task.sleep(for: .seconds(2.5))  // a's whole description again (every 2 s) does not bring her back
        #expect(try await b.withRoom(room) { r, _, _ in r.contains(participant: "alice") } == false)
    }

    /// The events `node` numbered for `room` so far (from its history), read until each of `wanted` (fields that
    /// must match) is among them or 5 s passed.
    static func events(of node: Node, room: String, until wanted: [[String: String]]) async -> [[String: Any]] {
        let subscription = node.events.subscribe(room: room, since: 0)
        let reader = Task {
            var seen: [String] = []
            for await m in subscription.messages {
                seen.append(m.text)
                let events = seen.map(Self.parse)
                if wanted.allSatisfy({ w in events.contains { e in w.allSatisfy { e[$0.key] as? String == $0.value } } }) { break }
            }
            return seen
        }
        let timeout = Task {
            try? await Task.sleep(for: .seconds(5))
            reader.cancel()
        }
        defer { timeout.cancel() }
        return await reader.value.map(Self.parse)
    }

    static func parse(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// `sfu bench --nodes`: the load generator places every participant through the cluster (`ClusterServer`)
    /// and signals it to the node it was given; a room larger than a node takes spills to the other, whose
    /// relay carries its talkers, and the report counts both nodes and says what each did.
    @Test func theBenchPlacesItsParticipantsThroughTheClusterAndARoomSpansBothNodes() async throws {
        let cluster = try await Self.twoNodes(capacity: 5)
        defer { cluster.stop() }
        var plan = BenchPlan()
        plan.rooms = 1
        plan.publishers = 3
        plan.speakers = 2
        plan.subscribers = 5
        plan.seconds = 3
        plan.rampSeconds = 1
        plan.observe = false
        let server = ClusterServer(nodes: zip(["a", "b"], cluster.nodes).map {
            .init(id: $0, api: ControlClient(base: URL(string: "http://\($1.configuration.apiListen)")!, key: nil), pid: nil)
        })
        var bench = try Bench(plan: plan, server: server, media: MediaLibrary(videoKbps: 300, fps: 15, videoSeconds: 0.5))
        let report = try await bench.run { _ in }
        #expect(report.lossFraction < 0.01 && report.packetsOutPerSecond > 100, "\(report.text)")
        // 8 participants, 5 a node: the room spans both, and one node receives the other's talkers over its relay.
        #expect(server.participantsByNode.values.sorted() == [3, 5], "\(server.participantsByNode)")
        // Counted over the window, not a rate: one node got the other's talkers' packets over its relay.
        let relayed = server.windows.map(\.relayDatagramsIn)
        #expect(relayed.count == 2 && relayed.max()! >= 25, "\(server.perNode)")
    }

    /// A node that stops (its relay channel and relay ends close): the other node's room loses its remote
    /// participants at once, and its own go on.
    @Test func aNodeThatStopsTakesItsRemoteParticipantsOutOfTheOtherNodesRoom() async throws {
        var cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let b = cluster.nodes[1]
        let (room, _, bob) = try await Self.sharedRoom(cluster, home: "b")
        cluster.tasks[0].cancel()
        cluster.tasks[1].cancel()
        cluster.nodes[0].stop()
        cluster.nodes.removeFirst()
        try await Self.run([bob]) { try await b.withRoom(room) { r, _, _ in !r.contains(participant: "alice") } }
        let left = try await b.withRoom(room) { r, _, _ in (r.contains(participant: "alice"), r.contains(participant: "bob")) }
        #expect(!left.0 && left.1)
        let ends = await cluster.members[1].relays.openEnds
        #expect(ends.isEmpty)
    }

    /// A node stopped as SIGTERM stops it (`NodeService`: leave the cluster, then stop): its own event stream says
    /// `node_lost` (`node_stopped`) of the room before it ends, the registry no longer counts it alive, and the
    /// other node's room loses its remote participants at once through the relay's `bye`.
    @Test func aNodeThatLeavesSaysNodeLostOfItsRoomsAndTheOtherNodeLetsItsParticipantsGo() async throws {
        var cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        let (room, _, bob) = try await Self.sharedRoom(cluster, home: "b")
        let events = a.events.subscribe(room: room, since: nil)
        await cluster.members[0].leave()
        await a.stopped()
        cluster.tasks[0].cancel()
        cluster.tasks[1].cancel()
        cluster.nodes.removeFirst()
        var said: [[String: Any]] = []
        for await m in events.messages { said.append(Self.parse(m.text)) }
        let lost = said.first { $0["type"] as? String == "node_lost" }
        #expect(lost?["node"] as? String == "a" && lost?["reason"] as? String == "node_stopped" && lost?["home"] as? Bool == false
                && lost?["participants"] as? Int == 1, "\(said)")
        #expect(said.firstIndex { $0["type"] as? String == "node_lost" } ?? .max < said.firstIndex { $0["type"] as? String == "room_destroyed" } ?? -1,
                "node_lost comes before the room ends")
        #expect(try await cluster.members[1].registry.nodes().first { $0.id == "a" }?.alive == false)
        try await Self.run([bob]) { try await b.withRoom(room) { r, _, _ in !r.contains(participant: "alice") } }
        #expect(await cluster.members[1].relays.openEnds.isEmpty)
    }

    /// Alice leaves the room on a: b's room lets her remote participant go too, while the relay goes on.
    @Test func aParticipantWhoLeavesHerNodeLeavesTheOtherNodesRoom() async throws {
        let cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        let (room, _, bob) = try await Self.sharedRoom(cluster, home: "a")
        _ = try await a.removeParticipant(room: room, participant: "alice", by: nil)
        try await Self.run([bob]) { try await b.withRoom(room) { r, _, _ in !r.contains(participant: "alice") } }
        let left = try await b.withRoom(room) { r, _, _ in (r.contains(participant: "alice"), r.contains(participant: "bob")) }
        #expect(!left.0 && left.1)
        let ends = (await cluster.members[0].relays.openEnds.count, await cluster.members[1].relays.openEnds.count)
        #expect(ends == (1, 1), "the relay stays")
    }

    /// Datagrams from a stranger on a relay's socket - not RTP, RTP under Alice's relayed SSRC that fails
    /// authentication, RTCP junk - are counted drops; Bob goes on hearing Alice.
    @Test func garbageOnARelaySocketIsCountedAndTheRelayGoesOn() async throws {
        let cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let b = cluster.nodes[1]
        let (room, alice, bob) = try await Self.sharedRoom(cluster, home: "a")
        let target = try #require(await cluster.members[1].relays.openEnds.first?.address)
        let relayedSSRC = try #require(try await cluster.nodes[0].withRoom(room) { r, _, _ in r.relays.carried(to: "b")?.first?.ssrc })
        let stranger = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        var junk: [[UInt8]] = [[0x17, 0xFE, 0xFD] + [UInt8](repeating: 1, count: 40), [0x00, 0x01, 0x00, 0x00], []]
        var rtp: [UInt8] = [0x80, 111, 0x12, 0x34, 0, 0, 0, 1] + withUnsafeBytes(of: relayedSSRC.bigEndian, Array.init)
        rtp += [UInt8](repeating: 0xAB, count: 60)
        junk.append(rtp)
        junk.append([0x81, 201, 0, 7] + withUnsafeBytes(of: UInt32(1).bigEndian, Array.init) + [UInt8](repeating: 0, count: 24))
        let before = bob.mediaPacketsReceived
        try await Self.run([alice, bob], talking: [ObjectIdentifier(alice)]) {
            for j in junk { _ = stranger.send(j, to: target) }
            return bob.mediaPacketsReceived >= before + 100
        }
        #expect(bob.mediaPacketsReceived >= before + 100, "Bob went on hearing Alice")
        let m = try await b.workers[0].metrics()
        #expect(m.relayDrops > 0, "what is not RTP or RTCP is counted: \(m.relayDrops)")
        #expect(m.room.drops[.srtpAuthFailed] > 0, "forged media fails authentication: \(m.room.drops.nonZero)")
        #expect(m.relayEnds == 1 && m.relayDatagramsIn > 0)
    }

    /// The control channel takes only a node of the registry that says hello first.
    @Test func aRelayChannelFromAStrangerIsRefused() async throws {
        let cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let url = cluster.nodes[1].configuration.clusterControlURL.replacingOccurrences(of: "http://", with: "ws://") + "/v1/relay"
        for first in [#"{"type":"hello","node":"mallory","version":1}"#, "not json", #"{"type":"bye","room":"r","relay":1}"#,
                      #"{"type":"hello","node":"a","version":99}"#] {
            let closed = try await WebSocketClient.connect(url: url, logger: Logger(label: "mallory")) { inbound, outbound, _ in
                try await outbound.write(.text(first))
                for try await _ in inbound {}
            }
            #expect(closed?.closeCode == .policyViolation, "\(first): \(String(describing: closed))")
        }
        let ends = await cluster.members[1].relays.openEnds
        #expect(ends.isEmpty)
    }

    /// The example signaling server places each participant: with room for one participant per node, Ann and
    /// Ben of one room land on different nodes, each admitted on its own, and each browser's roster lists both.
    @Test func theExampleSignalingServerPlacesEachParticipantSoARoomSpansNodes() async throws {
        let cluster = try await Self.twoNodes(capacity: 1)
        defer { cluster.stop() }
        var configuration = SignalingServer.Configuration()
        configuration.node = try #require(URL(string: cluster.nodes[0].configuration.clusterControlURL))
        let server = SignalingServer(configuration: configuration)
        defer { Task { await server.stopFollowing() } }
        var streams: [AsyncStream<String>] = []
        var ids: [String] = []
        for name in ["Ann", "Ben"] {
            let (stream, outbox) = AsyncStream.makeStream(of: String.self)
            streams.append(stream)
            let id = await server.handle(#"{"type":"join","room":"span","name":"\#(name)"}"#, from: nil, outbox: outbox)
            ids.append(try #require(id, "\(name) joined"))
        }
        let placed = await server.browsers.values.map(\.nodeID).sorted()
        #expect(placed == ["a", "b"], "one participant on each node: \(placed)")
        for id in ids {
            let node = cluster.nodes[await server.browsers[id]?.nodeID == "a" ? 0 : 1]
            #expect(try await node.withRoom("span") { r, _, _ in r.contains(participant: id) }, "\(id) is admitted on its node")
        }
        // Each browser's last roster lists both, wherever they are.
        await server.sendRoster("span")
        for stream in streams {
            var last: [String: Any]?
            var it = stream.makeAsyncIterator()
            while let text = await it.next() {
                let o = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                if o?["type"] as? String == "roster" { last = o }
                let names = ((last?["room"] as? [String: Any])?["participants"] as? [[String: Any]])?.compactMap { $0["participant"] as? String }
                if Set(names ?? []) == Set(ids) { break }
            }
            let names = ((last?["room"] as? [String: Any])?["participants"] as? [[String: Any]])?.compactMap { $0["participant"] as? String }
            #expect(Set(names ?? []) == Set(ids))
        }
    }

    /// The room ends on b and is made again there: the relay closes (its remote participants go) and opens
    /// anew under a new number and new keys, and a new listener on b hears Alice again.
    @Test func aRelayClosedWhenTheRoomEndsOnOneNodeOpensAgainWhenItComesBack() async throws {
        let cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let b = cluster.nodes[1]
        let (room, alice, _) = try await Self.sharedRoom(cluster, home: "a")
        try await b.destroyRoom(room)
        try await Self.run([alice]) { await cluster.members[0].relays.openEnds.isEmpty }
        #expect(await cluster.members[0].relays.openEnds.isEmpty, "a closed its end when b's room ended")
        try await Self.room(b, room)
        let carol = try await Self.subscriber(b, room: room, "carol")
        try await Self.run([alice, carol], talking: [ObjectIdentifier(alice)]) { carol.mediaPacketsReceived >= 100 }
        #expect(carol.mediaPacketsReceived >= 100, "Carol, on b's new room, received \(carol.mediaPacketsReceived) packets of Alice's")
        let drops = try await b.withRoom(room) { r, _, _ in r.stats().first { $0.participant == "alice" }?.drops ?? [:] }
        #expect(drops[.srtpAuthFailed] == nil, "the new relay's keys are both ends' new ones: \(drops)")
    }
}
