import Foundation
import NodeIO
import SFUClient
import Synchronization

/// Several nodes of one cluster as the server a benchmark loads (issue 25): each participant is placed as a
/// signaling server would place it (`POST /v1/placements` on any node) and signalled to the node it was given,
/// which creates the room when it first gets one of its participants. A room whose home fills spills to other
/// nodes, which relay its talkers to each other. Counters are the nodes' sums; `perNode` says what each node
/// did over the measured window, its relays included.
public final class ClusterServer: BenchServer {
    public struct Node: Sendable {
        public var id: String
        public var api: ControlClient
        public var pid: Int32?
        public init(id: String, api: ControlClient, pid: Int32?) {
            self.id = id
            self.api = api
            self.pid = pid
        }
    }

    public let name = "sfu cluster"
    public let nodes: [Node]
    public let roomPrefix: String
    public var pid: Int32? { nodes.first?.pid }
    public var pids: [Int32] { nodes.compactMap(\.pid) }

    /// Where each participant went, and which node has which room.
    private let placed = Mutex<[String: Int]>([:])
    private let hosting = Mutex<Set<String>>([])
    /// Each node's counters and CPU at each `counters()` call (the bench calls it at the window's start and end).
    private let samples = Mutex<[(at: Double, nodes: [NodeSample])]>([])

    struct NodeSample {
        var packetsIn = 0.0
        var packetsOut = 0.0
        var relayDatagramsIn = 0.0
        var participants = 0.0
        var cpu: Double?
    }

    public init(nodes: [Node], roomPrefix: String = "bench-") {
        self.nodes = nodes
        self.roomPrefix = roomPrefix
    }

    func room(_ r: Int) -> String { "\(roomPrefix)\(r)" }

    public func prepare(plan: BenchPlan, rooms: Int) async throws {
        planBox.withLock { $0 = plan }
        for n in nodes {
            for r in 0..<rooms { _ = try? await n.api.call("DELETE", "v1/rooms/\(room(r))") }
        }
        hosting.withLock { $0.removeAll() }
        placed.withLock { $0.removeAll() }
    }

    private let planBox = Mutex<BenchPlan?>(nil)

    public func join(_ client: LoadClient, id: String, room r: Int) async throws {
        let where_ = try await nodes[0].api.place(room: room(r), participant: id)
        guard let i = nodes.firstIndex(where: { $0.id == where_.node }) else {
            throw LoadError("placement named node \(where_.node), which this bench did not start")
        }
        let api = nodes[i].api
        let plan = planBox.withLock { $0 }
        if !hosting.withLock({ $0.contains("\(i)/\(r)") }) {
            let made = try await api.call("POST", "v1/rooms", [
                "room": room(r), "max_active_talkers": plan?.maxActiveTalkers ?? 4, "level_source": (plan?.levelExtension ?? true) ? "extension" : "decode",
            ])
            guard made.status == 201 || made.result == 6009 else { throw LoadError("node \(nodes[i].id) did not create \(room(r)): \(made.json)") }
            hosting.withLock { _ = $0.insert("\(i)/\(r)") }
        }
        placed.withLock { $0["\(r)/\(id)"] = i }
        let path = "v1/rooms/\(room(r))/participants"
        try await api.require("POST", path, ["participant": id])
        let answer = try await api.require("POST", "\(path)/\(id)/\(client.publishes ? "publish" : "subscribe")", ["sdp": client.offer()])
        try client.start(answer: answer.json["sdp"] as? String ?? "", now: MonoClock.now())
    }

    public func leave(_ client: LoadClient, id: String, room r: Int) async {
        guard let i = placed.withLock({ $0.removeValue(forKey: "\(r)/\(id)") }) else { return }
        _ = try? await nodes[i].api.call("DELETE", "v1/rooms/\(room(r))/participants/\(id)")
    }

    public func counters() async throws -> ServerCounters? {
        var total = ServerCounters(packetsIn: 0, packetsOut: 0, bytesOut: 0, drops: [:])
        var each: [NodeSample] = []
        for n in nodes {
            let m = try await n.api.metrics()
            let c = NodeServer.counters(fromMetrics: m)
            total.packetsIn += c.packetsIn
            total.packetsOut += c.packetsOut
            total.bytesOut += c.bytesOut
            total.datagramsOut += c.datagramsOut
            total.rtcpIn += c.rtcpIn
            total.drops.merge(c.drops, uniquingKeysWith: +)
            (total.srtpBackend, total.srtpVersion) = (c.srtpBackend, c.srtpVersion)
            each.append(NodeSample(packetsIn: c.packetsIn, packetsOut: c.packetsOut,
                                   relayDatagramsIn: MetricsText.sum(m, "sfu_relay_datagrams_received_total"),
                                   participants: MetricsText.sum(m, "sfu_participants"),
                                   cpu: n.pid.flatMap(ProcessProbe.cpuSeconds(pid:))))  // exited threads' time included
        }
        let at = Double(MonoClock.now().nanoseconds) / 1e9
        samples.withLock { $0.append((at, each)) }
        return total
    }

    /// How many of the bench's participants each node was given, by node id.
    public var participantsByNode: [String: Int] {
        placed.withLock { p in Dictionary(p.values.map { (nodes[$0].id, 1) }, uniquingKeysWith: +) }
    }

    /// What one node did over the measured window (the first and last `counters()`).
    public struct NodeWindow: Sendable {
        public var id: String
        public var seconds: Double
        public var packetsIn: Double
        public var packetsOut: Double
        /// Datagrams its relays received from the other nodes.
        public var relayDatagramsIn: Double
        /// Its own participants at the end.
        public var participants: Double
        public var cores: Double?
    }

    public var windows: [NodeWindow] {
        let s = samples.withLock { $0 }
        guard s.count >= 2, let first = s.first, let last = s.last, last.at > first.at else { return [] }
        let seconds = last.at - first.at
        return nodes.indices.map { i in
            let (a, b) = (first.nodes[i], last.nodes[i])
            return NodeWindow(id: nodes[i].id, seconds: seconds, packetsIn: b.packetsIn - a.packetsIn, packetsOut: b.packetsOut - a.packetsOut,
                              relayDatagramsIn: b.relayDatagramsIn - a.relayDatagramsIn, participants: b.participants,
                              cores: a.cpu.flatMap { x in b.cpu.map { ($0 - x) / seconds } })
        }
    }

    /// Each node over the measured window, per second: RTP packets in and out, relay datagrams received, its
    /// participants at the end, and the cores it used.
    public var perNode: String {
        let w = windows
        guard let seconds = w.first?.seconds else { return "" }
        return (["per node over the window (\(String(format: "%.1f", seconds)) s):"] + w.map { n in
            String(format: "  %@: %.0f packets in/s, %.0f out/s, %.0f relay datagrams in/s, %.0f participants, %@ cores", n.id,
                   n.packetsIn / seconds, n.packetsOut / seconds, n.relayDatagramsIn / seconds, n.participants,
                   n.cores.map { String(format: "%.2f", $0) } ?? "-")
        }).joined(separator: "\n")
    }

    public func subscriberStats(rooms: Int) async -> [String: SubscriberSample]? {
        let where_ = placed.withLock { $0 }
        var out: [String: SubscriberSample] = [:]
        for (i, n) in nodes.enumerated() {
            for r in 0..<rooms {
                guard let reply = try? await n.api.call("GET", "v1/rooms/\(room(r))/stats"), reply.status == 200 else { continue }
                // Each subscriber as its own node reports it (the others hold a copy without an estimate).
                for (key, sample) in NodeServer.subscriberSamples(reply.json, room: room(r)) where where_["\(r)/\(key.split(separator: "/").last ?? "")"] == i {
                    out[key] = sample
                }
            }
        }
        return out
    }

    public func watchDominantSpeaker(_ record: @escaping @Sendable (Int, String, Int64) -> Void) async {
        let prefix = roomPrefix
        await withTaskGroup(of: Void.self) { group in
            for n in nodes {
                group.addTask {
                    await EventStream(api: n.api.base, key: n.api.key).run { e in
                        guard e.type == "dominant_speaker", let room = e.room, room.hasPrefix(prefix), let r = Int(room.dropFirst(prefix.count)),
                              let p = e["participant"] as? String, let ms = (e["time"] as? NSNumber)?.int64Value else { return }
                        record(r, p, ms)
                    }
                }
            }
        }
    }

    public func finish(rooms: Int) async {
        for n in nodes {
            for r in 0..<rooms { _ = try? await n.api.call("DELETE", "v1/rooms/\(room(r))") }
        }
    }
}
