import Foundation
import NodeIO
import SFU
import SFUClient
import SFUMedia
import WebRTCEdge

/// Two nodes of one registry as processes (`sfu serve`) on loopback, a room spanning them, and WebRTC clients
/// on real UDP: the latency a relay hop adds (a listener on the talker's node against one on the other node,
/// measured side by side on the same packets' send stamps), then `kill -9` of the talker's node (the room's
/// home) and how long until the registry names a new home and until the talker, rejoining on the survivor as a
/// signaling server would have it do, is heard there again. Between the two, talkers on both nodes take turns:
/// whether the nodes show the same talkers (the room state of each, sampled every 50 ms) and how long each
/// node takes to list a new talker among the active talkers, on the talker's own node and on the other.
public enum RelayBench {
    public struct Result: CustomStringConvertible, Sendable {
        public var localMilliseconds: [Double] = []
        public var remoteMilliseconds: [Double] = []
        public var localReceived = 0
        public var remoteReceived = 0
        public var sent = 0
        /// From the kill to the survivor's placement answering `home_taken_over`.
        public var takeOverSeconds: Double?
        /// From the kill to the first packet of the rejoined talker at the listener on the survivor.
        public var mediaBackSeconds: Double?
        /// The heartbeat timeout the nodes ran with.
        public var heartbeatTimeout = 0
        /// Talkers on both nodes taking turns: samples of both nodes' room state, and how many of them agreed
        /// (the same active talkers in the same order, and the same dominant speaker).
        public var rankingSamples = 0
        public var rankingAgreed = 0
        /// From a new talker's first loud packet to its node (local) and the other node (remote) listing it
        /// among the room's active talkers (what every subscriber's slots follow), per turn.
        public var switchLocalSeconds: [Double] = []
        public var switchRemoteSeconds: [Double] = []
        public var turns = 0

        static func p(_ v: [Double], _ q: Double) -> Double {
            guard !v.isEmpty else { return .nan }
            let s = v.sorted()
            return s[min(s.count - 1, Int(Double(s.count - 1) * q + 0.5))]
        }

        public var description: String {
            let p = Self.p
            func ms(_ v: [Double]) -> String {
                String(format: "p50 %.2f ms, p90 %.2f ms, p99 %.2f ms (%d samples)", p(v, 0.5), p(v, 0.9), p(v, 0.99), v.count)
            }
            var lines = [
                "sent \(sent) audio packets; received \(localReceived) on the talker's node, \(remoteReceived) across the relay",
                "  listener on the talker's node:  \(ms(localMilliseconds))",
                "  listener on the other node:     \(ms(remoteMilliseconds))",
                String(format: "  the relay hop adds:             p50 %.2f ms, p99 %.2f ms", p(remoteMilliseconds, 0.5) - p(localMilliseconds, 0.5),
                       p(remoteMilliseconds, 0.99) - p(localMilliseconds, 0.99)),
            ]
            if turns > 0 {
                func s(_ v: [Double]) -> String {
                    String(format: "p50 %.2f s, max %.2f s (%d of %d turns)", p(v, 0.5), v.max() ?? .nan, v.count, turns)
                }
                lines.append(String(format: "talkers on both nodes taking turns: the nodes agree on the talkers in %.1f %% of %d samples",
                                    100 * Double(rankingAgreed) / Double(max(rankingSamples, 1)), rankingSamples))
                lines.append("  a new talker listed as talking on its own node:  \(s(switchLocalSeconds)) (sampled every 0.05 s)")
                lines.append("  a new talker listed as talking on the other node: \(s(switchRemoteSeconds))")
            }
            lines.append("kill -9 of the talker's node (the room's home), heartbeat timeout \(heartbeatTimeout) s:")
            lines.append("  home taken over after " + (takeOverSeconds.map { String(format: "%.2f s", $0) } ?? "(never)"))
            lines.append("  talker heard again on the survivor after " + (mediaBackSeconds.map { String(format: "%.2f s", $0) } ?? "(never)"))
            return lines.joined(separator: "\n")
        }
    }

    final class Listener: @unchecked Sendable {
        let client: LoadClient
        var latencies: [Double] = []
        var received = 0
        var firstFrom: [UInt16: MonoTime] = [:]

        init(_ client: LoadClient) {
            self.client = client
            client.onMedia = { [unowned self] buffer, length, now in
                guard let n = client.decrypt(buffer, length: length) else { return }
                let plain = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                guard case .success(let h) = RTPHeader.parse(plain),
                      let stamp = BenchStamp.read(UnsafeRawBufferPointer(rebasing: buffer[h.payloadRange])) else { return }
                received += 1
                if firstFrom[stamp.publisher] == nil { firstFrom[stamp.publisher] = now }
                latencies.append(Double(UInt64(now.nanoseconds) &- stamp.sentAt) / 1e6)
            }
        }
    }

    /// Where the nodes and clients run: by default all on loopback in this namespace; scripts/cluster-test.sh
    /// puts each node in a network namespace of its own on a bridge, and this process (the clients) in a third.
    public struct Placement: Sendable {
        public var nodeHosts = ["127.0.0.1", "127.0.0.1"]
        public var namespaces: [String?] = [nil, nil]
        public var clientHost = "127.0.0.1"
        public init() {}
    }

    /// `registry`: a PostgreSQL URL the nodes share; `seconds`: how long the talker talks before the kill.
    public static func run(registry: String, seconds: Double, heartbeatTimeout: Int = 2, placement: Placement = .init()) async throws -> Result {
        var result = Result()
        result.heartbeatTimeout = heartbeatTimeout
        var nodes: [NodeProcess] = []
        let key = placement.nodeHosts.allSatisfy { $0.hasPrefix("127.") } ? nil : "relay-bench-\(UInt64.random(in: 0...UInt64.max))"
        for (i, id) in ["a", "b"].enumerated() {
            let host = placement.nodeHosts[i]
            nodes.append(try await NodeProcess(workers: 1, extra: [
                "--set", "cluster.registry=\(registry)", "--set", "cluster.node_id=\(id)",
                "--set", "cluster.heartbeat_timeout_seconds=\(heartbeatTimeout)",
            ], extraForPort: { ["--set", "cluster.control_url=http://\(host):\($0)"] }, host: host, netns: placement.namespaces[i], key: key))
        }
        defer { for n in nodes where n.process.isRunning { kill(n.pid, SIGKILL) } }
        let (a, b) = (nodes[0].api, nodes[1].api)
        // Both registered; a room whose home is a (rooms are placed until one lands there).
        for _ in 0..<100 {
            if case let (x?, y?) = (try? await a.call("GET", "healthz"), try? await b.call("GET", "healthz")),
               x.json["node"] as? String == "a", y.json["node"] as? String == "b", (try? await a.place(room: "probe"))?.node != nil { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        var room = ""
        for n in 0..<40 where room.isEmpty {
            if try await a.place(room: "bench\(n)").node == "a" { room = "bench\(n)" }
        }
        guard !room.isEmpty else { throw LoadError("no room was placed on node a") }
        for api in [a, b] {
            try await api.require("POST", "v1/rooms", ["room": room, "max_active_talkers": 2, "level_source": "extension"])
        }
        let certificate = try DTLSCertificate(commonName: "relay-bench")
        func join(_ api: ControlClient, _ who: String, publish: Bool) async throws -> LoadClient {
            try await api.require("POST", "v1/rooms/\(room)/participants", ["participant": who])
            let socket = try UDPSocket(bind: TransportAddress("\(placement.clientHost):0")!)
            if !publish { try? socket.enableReceiveTimestamps() }
            let c = try LoadClient(certificate: certificate, profile: publish ? .publisher(audio: true) : .subscriber(audio: 2), socket: socket)
            let r = try await api.require("POST", "v1/rooms/\(room)/participants/\(who)/\(publish ? "publish" : "subscribe")", ["sdp": c.offer()])
            try c.start(answer: r.json["sdp"] as? String ?? "", now: MonoClock.now())
            return c
        }
        let alice = try await join(a, "alice", publish: true)
        let local = Listener(try await join(a, "local", publish: false))
        let remote = Listener(try await join(b, "remote", publish: false))
        let speech = OpusFrameEncoder().encodeAll(TestSignal.sine(frequency: 220, dbfs: -18, seconds: 1))
        var talkers: [(LoadClient, UInt16)] = [(alice, 1)]
        var frame = 0
        var nextFrame = MonoClock.now()
        func pump(for duration: Double, loudAfter: Double = 0, loud: ((UInt16, Double) -> Bool)? = nil, every: (Double, () async -> Void)? = nil,
                  until done: () -> Bool = { false }) async throws {
            let start = MonoClock.now()
            var nextCall = 0.0
            while MonoClock.now() - start < .seconds(duration), !done() {
                let now = MonoClock.now()
                for c in [local.client, remote.client] + talkers.map(\.0) { c.poll(now: now) }
                if let (period, call) = every, (now - start).seconds >= nextCall {
                    nextCall += period
                    await call()
                }
                if now >= nextFrame {
                    nextFrame = nextFrame + .milliseconds(20)
                    let t = (now - start).seconds
                    for (c, id) in talkers where c.state == .connected {
                        let isLoud = loud.map { $0(id, t) } ?? (t >= loudAfter)
                        c.sendAudio(BenchStamp.opus(speech[frame % speech.count], sentAt: UInt64(MonoClock.now().nanoseconds), publisher: id),
                                    level: isLoud ? 18 : 127)
                        if id == 1 { result.sent += 1 }
                    }
                    frame += 1
                }
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        // Connect and let the relay open (both nodes see the room shared at their next heartbeats), quiet for
        // a second, then talk: what both listeners receive from then on is measured.
        try await pump(for: 10, until: { remote.received >= 25 })
        guard remote.received >= 25 else { throw LoadError("nothing crossed the relay within 10 s") }
        local.latencies.removeAll()
        remote.latencies.removeAll()
        (local.received, remote.received, result.sent) = (0, 0, 0)
        try await pump(for: seconds, loudAfter: 0)
        (result.localMilliseconds, result.remoteMilliseconds) = (local.latencies, remote.latencies)
        (result.localReceived, result.remoteReceived) = (local.received, remote.received)
        let sentWhileMeasured = result.sent

        // Turns: Alice (node a, the home) and Carol (node b) talk 3 s each in turn, four times each; both nodes'
        // room state is sampled every 50 ms.
        let carol = try await join(b, "carol", publish: true)
        talkers = [(alice, 1), (carol, 3)]
        try await pump(for: 3, loud: { _, _ in false })  // Carol connects; everyone quiet
        let turn = 3.0
        result.turns = 8
        var firstDominant: [Int: (a: Double?, b: Double?)] = [:]
        let turnsStart = MonoClock.now()
        func speaker(_ t: Double) -> UInt16 { Int(t / turn) % 2 == 0 ? 1 : 3 }
        try await pump(for: turn * Double(result.turns), loud: { id, t in id == speaker(t) }, every: (0.05, {
            let t = (MonoClock.now() - turnsStart).seconds
            guard let x = try? await a.call("GET", "v1/rooms/\(room)"), let y = try? await b.call("GET", "v1/rooms/\(room)") else { return }
            let talkersA = x.json["active_talkers"] as? [String] ?? [], talkersB = y.json["active_talkers"] as? [String] ?? []
            let (domA, domB) = (x.json["dominant_speaker"] as? String, y.json["dominant_speaker"] as? String)
            result.rankingSamples += 1
            if talkersA == talkersB && domA == domB { result.rankingAgreed += 1 }
            let i = Int(t / turn), name = speaker(t) == 1 ? "alice" : "carol", into = t - Double(i) * turn
            var seen = firstDominant[i] ?? (nil, nil)
            if seen.a == nil, talkersA.contains(name) { seen.a = into }
            if seen.b == nil, talkersB.contains(name) { seen.b = into }
            firstDominant[i] = seen
        }))
        // The first turn is Alice's from silence: a switch is a turn that takes over from the other talker.
        for i in 1..<result.turns {
            guard let seen = firstDominant[i] else { continue }
            let (own, other) = i % 2 == 0 ? (seen.a, seen.b) : (seen.b, seen.a)
            if let own { result.switchLocalSeconds.append(own) }
            if let other { result.switchRemoteSeconds.append(other) }
        }
        result.turns -= 1
        result.sent = sentWhileMeasured
        talkers = [(alice, 1)]

        // kill -9 of a, the talker's node and the room's home.
        let killed = MonoClock.now()
        kill(nodes[0].pid, SIGKILL)
        talkers = []
        while MonoClock.now() - killed < .seconds(Double(heartbeatTimeout) + 15) {
            if let placed = try? await b.place(room: room, participant: "alice-2"), placed.reason == "home_taken_over" || placed.node == "b" {
                result.takeOverSeconds = (MonoClock.now() - killed).seconds
                break
            }
            try await pump(for: 0.05)
        }
        guard result.takeOverSeconds != nil else { return result }
        // The talker rejoins on the survivor (a signaling server told of node_lost would have it do so).
        let again = try await join(b, "alice-2", publish: true)
        talkers = [(again, 2)]
        try await pump(for: 10, until: { remote.firstFrom[2] != nil })
        if let t = remote.firstFrom[2] { result.mediaBackSeconds = (t - killed).seconds }
        _ = await nodes[1].stop()
        return result
    }
}
