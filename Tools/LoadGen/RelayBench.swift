import Foundation
import NodeIO
import SFU
import SFUClient
import SFUMedia
import WebRTCEdge

/// Two nodes of one registry as processes (`sfu serve`) on loopback, a room spanning them, and WebRTC clients
/// on real UDP, in stages:
/// 1. the latency a relay hop adds (a listener on the talker's node against one on the other node, measured
///    side by side on the same packets' send stamps);
/// 2. talkers on both nodes take turns: whether the nodes show the same talkers (the room state of each, sampled
///    every 50 ms) and how long each node takes to list a new talker, on the talker's own node and on the other;
/// 3. SIGTERM of node b (the relay channel's answerer) while it relays the room, as an operator's rolling restart
///    does it: it must exit cleanly (status 0) within `NodeProcess`'s limit, say `node_lost` (`node_stopped`) of
///    the room on its own event stream first, and come back under its id; its listener rejoins through a
///    placement, as a signaling server told of that event would have it do;
/// 4. `kill -9` of node a (the talker's node and the room's home) with the defaults (unless a heartbeat timeout
///    is given): the survivor reports it (`node_lost`, `heartbeat_timeout`), and the talker rejoins through a
///    placement when that event comes, as a signaling server would do it - heard again on the survivor, which
///    already hosts the room; and a second room that only node a hosted, whose talker and listener rejoin on the
///    survivor, new to that room.
public enum RelayBench {
    public struct Result: CustomStringConvertible, Sendable {
        public var localMilliseconds: [Double] = []
        public var remoteMilliseconds: [Double] = []
        public var localReceived = 0
        public var remoteReceived = 0
        public var sent = 0
        /// SIGTERM of node b while it relays the room: how long until it exited, and what went wrong (nil: it
        /// exited with status 0).
        public var stopSeconds: Double?
        public var stopProblem: String?
        /// Whether node b said `node_lost` (`node_stopped`) of the room before its event stream ended.
        public var stopSaidNodeLost = false
        /// From the SIGTERM to the first packet of the talker at b's listener, rejoined through a placement.
        public var rejoinAfterStopSeconds: Double?
        /// From the kill to the survivor's `node_lost` of the room, and to its placement answering `home_taken_over`.
        public var nodeLostSeconds: Double?
        public var takeOverSeconds: Double?
        /// From the kill to the first packet of the rejoined talker at the listener on the survivor (which hosted
        /// the room), the talker rejoining when `node_lost` came.
        public var mediaBackSeconds: Double?
        /// The same for a room the survivor did not host: its talker and listener both rejoin there.
        public var mediaBackNewNodeSeconds: Double?
        /// The heartbeat timeout the nodes ran with (nil: the node's default).
        public var heartbeatTimeout: Int?
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
            func secs(_ v: Double?) -> String { v.map { String(format: "%.2f s", $0) } ?? "(never)" }
            lines.append("SIGTERM of node b (the relay channel's answerer) while it relays the room:")
            lines.append("  exited after \(secs(stopSeconds)), " + (stopProblem ?? "status 0") + "; node_lost (node_stopped) of the room: "
                         + (stopSaidNodeLost ? "sent" : "NOT sent"))
            lines.append("  b's listener, rejoined through a placement, hears the talker again after \(secs(rejoinAfterStopSeconds)) (from the SIGTERM)")
            lines.append("kill -9 of the talker's node (the room's home), heartbeat timeout " + (heartbeatTimeout.map { "\($0) s" } ?? "the default") + ":")
            lines.append("  the survivor's node_lost after \(secs(nodeLostSeconds)); home taken over after \(secs(takeOverSeconds))")
            lines.append("  the talker, rejoining on node_lost, heard again on the survivor (which hosted the room) after \(secs(mediaBackSeconds))")
            lines.append("  a room only the dead node hosted: its talker heard by its listener, both rejoined on the survivor, after "
                         + secs(mediaBackNewNodeSeconds))
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

    /// `registry`: a PostgreSQL URL the nodes share; `seconds`: how long the talker talks in the latency stage;
    /// `heartbeatTimeout`: the nodes' `cluster.heartbeat_timeout_seconds` (nil: their default).
    public static func run(registry: String, seconds: Double, heartbeatTimeout: Int? = nil, placement: Placement = .init()) async throws -> Result {
        var result = Result()
        result.heartbeatTimeout = heartbeatTimeout
        let bench = try RelayBenchSession(registry: registry, heartbeatTimeout: heartbeatTimeout, placement: placement)
        defer { bench.finish() }
        for i in 0..<2 { try await bench.start(i) }
        let (a, b) = (bench.api(0), bench.api(1))
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
        for i in 0..<2 { try await bench.create(i, room: room) }
        let alice = try await bench.join(0, room: room, "alice", publish: true)
        let local = Listener(try await bench.join(0, room: room, "local", publish: false))
        let remote = Listener(try await bench.join(1, room: room, "remote", publish: false))
        bench.talkers = [(alice, 1)]
        bench.listeners = [local, remote]
        // Connect and let the relay open (both nodes see the room shared at their next heartbeats), quiet for
        // a second, then talk: what both listeners receive from then on is measured.
        try await bench.pump(for: 10, until: { remote.received >= 25 })
        guard remote.received >= 25 else { throw LoadError("nothing crossed the relay within 10 s") }
        local.latencies.removeAll()
        remote.latencies.removeAll()
        (local.received, remote.received, bench.sent) = (0, 0, 0)
        try await bench.pump(for: seconds, loudAfter: 0)
        (result.localMilliseconds, result.remoteMilliseconds) = (local.latencies, remote.latencies)
        (result.localReceived, result.remoteReceived, result.sent) = (local.received, remote.received, bench.sent)

        try await takeTurns(bench, room: room, result: &result)
        bench.talkers = [(alice, 1)]
        try await stopAndRestart(bench, room: room, result: &result)
        try await killHome(bench, room: room, result: &result)
        _ = await bench.nodes[1].stop()
        return result
    }
}
