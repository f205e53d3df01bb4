import Foundation
import Logging
import NodeIO
import SFU
import SFUClient
import SFUMedia
import WebRTCEdge

/// What one run of `RelayBench` holds: the two node processes (either can be restarted under its id), the
/// clients, and the loop that drives them (polling every client, 20 ms of Opus from each talker).
final class RelayBenchSession: @unchecked Sendable {
    let registry: String
    let heartbeatTimeout: Int?
    let placement: RelayBench.Placement
    let key: String?
    let ids = ["a", "b"]
    var nodes: [NodeProcess] = []
    /// Each node's events since it started (the stream is followed from its start).
    private let events = EventLog()
    /// The task following each node's events, by node index.
    private var followers: [Int: Task<Void, Never>] = [:]
    let certificate: DTLSCertificate
    let speech: [[UInt8]]
    var talkers: [(client: LoadClient, id: UInt16)] = []
    var listeners: [RelayBench.Listener] = []
    var sent = 0
    private var frame = 0
    private var nextFrame = MonoClock.now()

    init(registry: String, heartbeatTimeout: Int?, placement: RelayBench.Placement) throws {
        self.registry = registry
        self.heartbeatTimeout = heartbeatTimeout
        self.placement = placement
        key = placement.nodeHosts.allSatisfy { $0.hasPrefix("127.") } ? nil : "relay-bench-\(UInt64.random(in: 0...UInt64.max))"
        certificate = try DTLSCertificate(commonName: "relay-bench")
        speech = OpusFrameEncoder().encodeAll(TestSignal.sine(frequency: 220, dbfs: -18, seconds: 1))
    }

    /// Starts node `i` (again, after it stopped) under its id, and follows its events.
    func start(_ i: Int) async throws {
        let host = placement.nodeHosts[i]
        var extra = ["--set", "cluster.registry=\(registry)", "--set", "cluster.node_id=\(ids[i])"]
        if let heartbeatTimeout { extra += ["--set", "cluster.heartbeat_timeout_seconds=\(heartbeatTimeout)"] }
        let n = try await NodeProcess(workers: 1, extra: extra, extraForPort: { ["--set", "cluster.control_url=http://\(host):\($0)"] },
                                      host: host, netns: placement.namespaces[i], key: key)
        n.nodeID = ids[i]
        if i < nodes.count { nodes[i] = n } else { nodes.append(n) }
        let log = events, id = ids[i], key = key
        followers[i]?.cancel()
        followers[i] = Task {
            // Its reconnection attempts after the node stopped or was killed are no news here.
            var logger = Logger(label: "relay-bench.events")
            logger.logLevel = .error
            await EventStream(api: n.api.base, key: key, pingInterval: .seconds(2), logger: logger).run { e in await log.add(node: id, e) }
        }
    }

    func api(_ i: Int) -> ControlClient { nodes[i].api }

    /// The first `type` event node `node` sent about `room` matching `where`, waiting up to `seconds` while the
    /// clients go on.
    func awaitEvent(from node: String, room: String, type: String, seconds: Double,
                    where match: @escaping @Sendable (NodeEvent) -> Bool = { _ in true }) async throws -> NodeEvent? {
        let start = MonoClock.now()
        while MonoClock.now() - start < .seconds(seconds) {
            if let e = await events.first(node: node, room: room, type: type, match) { return e }
            try await pump(for: 0.02)
        }
        return nil
    }

    /// A participant of `room` at node `i`'s API, publishing audio or subscribing to two audio slots.
    func join(_ i: Int, room: String, _ who: String, publish: Bool) async throws -> LoadClient {
        let api = api(i)
        try await api.require("POST", "v1/rooms/\(room)/participants", ["participant": who])
        let socket = try UDPSocket(bind: TransportAddress("\(placement.clientHost):0")!)
        if !publish { try? socket.enableReceiveTimestamps() }
        let c = try LoadClient(certificate: certificate, profile: publish ? .publisher(audio: true) : .subscriber(audio: 2), socket: socket)
        let r = try await api.require("POST", "v1/rooms/\(room)/participants/\(who)/\(publish ? "publish" : "subscribe")", ["sdp": c.offer()])
        try c.start(answer: r.json["sdp"] as? String ?? "", now: MonoClock.now())
        return c
    }

    /// Creates `room` on node `i` unless it is there (a room that spans nodes is created on each).
    func create(_ i: Int, room: String) async throws {
        let r = try await api(i).call("POST", "v1/rooms", ["room": room, "max_active_talkers": 2, "level_source": "extension"])
        guard (200..<300).contains(r.status) || r.status == 409 else { throw LoadError("creating \(room) on \(ids[i]): \(r.status) \(r.json)") }
    }

    /// Where a signaling server would put `who` of `room` now (the node's index), asked of node `i`.
    func place(room: String, _ who: String, asking i: Int) async throws -> (node: Int, reason: String) {
        let p = try await api(i).place(room: room, participant: who)
        guard let n = ids.firstIndex(of: p.node) else { throw LoadError("placed on \(p.node), not a node of the bench") }
        return (n, p.reason)
    }

    /// Drives every client for `duration` seconds (or until `done`): polls them, sends 20 ms of Opus from each
    /// connected talker (loud as `loud` says, else from `loudAfter` seconds on), calls `every` on its period.
    func pump(for duration: Double, loudAfter: Double = 0, loud: ((UInt16, Double) -> Bool)? = nil, every: (Double, () async -> Void)? = nil,
              until done: () -> Bool = { false }) async throws {
        let start = MonoClock.now()
        var nextCall = 0.0
        while MonoClock.now() - start < .seconds(duration), !done() {
            let now = MonoClock.now()
            for c in listeners.map(\.client) + talkers.map(\.client) { c.poll(now: now) }
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
                    if id == 1 { sent += 1 }
                }
                frame += 1
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Node `i` is gone (stopped or killed): its events are no longer followed.
    func gone(_ i: Int) { followers.removeValue(forKey: i)?.cancel() }

    func finish() {
        for f in followers.values { f.cancel() }
        for n in nodes where n.process.isRunning { kill(n.pid, SIGKILL) }
    }

    /// Events by node, as they came.
    private actor EventLog {
        var events: [(node: String, event: NodeEvent)] = []
        func add(node: String, _ e: NodeEvent) { events.append((node, e)) }
        func first(node: String, room: String, type: String, _ match: (NodeEvent) -> Bool) -> NodeEvent? {
            events.first { $0.node == node && $0.event.room == room && $0.event.type == type && match($0.event) }?.event
        }
    }
}
