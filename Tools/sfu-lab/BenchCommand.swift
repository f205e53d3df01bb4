import ArgumentParser
import ClusterLab
import Foundation
import LoadGen
import SFUClient

/// The load generator: simulated participants against a node, a report in human form and as JSON, sweeps
/// with a chart, and the host's raw UDP capacity for comparison.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Load a node with simulated WebRTC participants and report throughput, CPU, latency and loss.",
        discussion: """
            Without --target, starts `sfu serve` itself (pinned with --cores). The plan comes from --scenario FILE \
            (key = value lines) then --set key=value; keys: \(BenchPlan.keys.map(\.key).joined(separator: ", ")). \
            A preset or any meeting key makes the publishers play a simulated meeting (the one `sfu tune` plays; \
            docs/conversation-model.md) and the report say what the subscribers missed of it. \
            --sweep key=v1,v2,... runs once per value (a fresh node each time) and writes a table and an SVG chart; \
            with --against, each value runs through both servers and the table compares them. \
            --nodes N starts N nodes of one cluster (sharing --registry, or a private PostgreSQL server this \
            command starts), places each participant through the cluster as a signaling server does (rooms spill \
            to other nodes past --node-capacity and relay their talkers) and reports each node and its relays. \
            --room-prefix names the rooms, so several generator processes can load the same node(s) at once.
            """
    )

    @Option(help: "Control API of a running node instead of starting one.") var target: String?
    @Option(help: "PID of the node at --target (for its CPU and memory).") var pid: Int32?
    @Option(help: "API key of the node at --target.") var key: String?
    @Option(help: "Workers of the node this command starts.") var workers = 1
    @Option(help: "Cores to pin the started node to (taskset list, e.g. 1).") var cores: String?
    @Option(help: "A scenario file: key = value lines.") var scenario: String?
    @Option(name: .customLong("set"), help: "One plan key, e.g. --set subscribers=20 (repeatable).") var overrides: [String] = []
    @Option(help: "key=v1,v2,... : one run per value.") var sweep: String?
    @Option(help: "Write the report(s) as JSON here.") var json: String?
    @Option(help: "Write the sweep chart (SVG) here.") var chart: String?
    @Option(help: "Seconds of raw UDP baseline after each run (0: none).") var baselineSeconds = 2.0
    @Option(name: .customLong("node-set"), help: "One setting of the node(s) this command starts, e.g. --node-set talkers.onset_replay_ms=0 (repeatable).")
    var nodeSettings: [String] = []
    @Option(help: "Nodes of one cluster to start (2 or more: participants are placed through the cluster).") var nodes = 1
    @Option(help: "The cluster's registry (postgres://...) with --nodes; default: a private server this command starts.") var registry: String?
    @Option(help: "Each started node's cluster.capacity (participants) with --nodes: a room spills to another node past it.") var nodeCapacity = 1000
    @Option(help: "Rooms are named this and their number.") var roomPrefix = "bench-"
    @Flag(name: .customLong("cluster"), help: "--target is a node of a cluster: place each participant through it on the cluster's live nodes.") var cluster_ = false
    @Option(help: "Generator processes (each its share of the rooms): more load than one generator thread sends.") var generators = 1
    @Option(help: "Also run the plan against this peer SFU on the same cores and compare: janus (Debian's janus, VideoRoom; needs root for a private network namespace).")
    var against: String?

    func run() async throws {
        if against != nil, target != nil { throw ValidationError("--against starts both servers itself; it cannot be used with --target") }
        if !nodeSettings.isEmpty, target != nil { throw ValidationError("--node-set sets the node this command starts; a node at --target keeps its own settings") }
        if nodes > 1, target != nil || against != nil { throw ValidationError("--nodes starts the cluster itself; it cannot be used with --target or --against") }
        guard (1...16).contains(nodes) else { throw ValidationError("--nodes must be 1-16") }
        guard (1...64).contains(generators) else { throw ValidationError("--generators must be 1-64") }
        if cluster_, target == nil { throw ValidationError("--cluster names the cluster of --target") }
        if let against, against != "janus" { throw ValidationError("--against knows only janus, got '\(against)'") }
        if against != nil, !BenchNamespace.isInside {
            // Janus needs a veth interface holding 127.0.0.1: the whole comparison runs in a namespace of its own.
            let status = try BenchNamespace.rerunInside(arguments: Array(CommandLine.arguments.dropFirst()))
            if status != 0 { throw ExitCode(status) }
            return
        }
        var plan = BenchPlan()
        // Janus forwards without estimating a subscriber's downlink, and the load client answers its offers
        // without transport-cc: the comparison is fair only with REMB subscribers on both servers.
        if against != nil { plan.transportCC = false }
        // Neither is the node polled for room stats nor its events watched: Janus is observed in neither way, and
        // at small rooms the node's answers would weigh on its side of the comparison.
        if against != nil { plan.observe = false }
        try plan.configure(scenario: scenario, overrides: overrides)
        if let meeting = plan.conversation {
            do { try meeting.validate() } catch { throw ValidationError(error.description) }
        }
        if against != nil, plan.transportCC {
            throw ValidationError("--against runs both servers with REMB subscribers (Janus does not estimate their downlinks): leave transport_cc false")
        }
        if against != nil, plan.maxActiveTalkers < plan.publishers {
            throw ValidationError("Janus forwards every publisher to every subscriber: set max_active_talkers (\(plan.maxActiveTalkers)) >= publishers (\(plan.publishers)) so both carry the same load")
        }
        if generators > 1 { return try await runGenerators(plan: plan) }
        var runs: [(label: String, plan: BenchPlan)] = [("", plan)]
        var sweepKey: String?
        if let sweep {
            do {
                let (k, values) = try BenchPlan.sweep(sweep)
                sweepKey = k
                runs = try values.map { v in
                    var p = plan
                    try p.set(k, v)
                    return (v, p)
                }
            } catch let e as BenchPlan.Invalid {
                throw ValidationError(e.description)
            }
        }
        print("bench: encoding media (Opus speech, VP8 \(plan.width)x\(plan.height) at \(plan.videoKbps) kbps)")
        let media = MediaLibrary(videoKbps: plan.videoKbps, fps: plan.fps, width: plan.width, height: plan.height,
                                 simulcast: plan.simulcast || sweepKey == "simulcast")
        var conversationMedia: ConversationMedia?
        if runs.contains(where: { $0.plan.conversation != nil }) {
            print("bench: synthesising and encoding the meeting's speech (espeak-ng, libopus)")
            conversationMedia = try ConversationMedia()
        }
        var reports: [BenchReport] = []
        var nodeReports: [BenchReport] = []
        var comparisons: [BenchComparison] = []
        for (label, p) in runs {
            if let sweepKey { print("\n== \(sweepKey) = \(label)") }
            let cluster = nodes > 1 ? try await startCluster() : []
            let node: NodeProcess? = target == nil && cluster.isEmpty ? try await NodeProcess(workers: workers, cores: cores, extra: nodeArguments) : nil
            let api = node?.api ?? cluster.first?.api ?? ControlClient(base: URL(string: target!)!, key: key)
            let conversation = p.conversation.map { BenchConversation(parameters: $0, media: conversationMedia!) }
            if let conversation {
                print("bench: meeting \(p.preset ?? "discussion"), \(conversation.parameters.participants) participants, \(conversation.joinOrder.count) publish audio, \(conversation.script.talkers) talk, \(conversation.script.turns.count) turns in \(String(format: "%.0f", conversation.seconds)) s")
            }
            let server: any BenchServer
            if cluster_ {
                server = ClusterServer(nodes: try await Self.clusterNodes(of: api), roomPrefix: roomPrefix)
            } else if cluster.isEmpty {
                server = NodeServer(api: api, pid: node?.pid ?? pid, roomPrefix: roomPrefix)
            } else {
                server = ClusterServer(nodes: cluster.map { .init(id: $0.nodeID, api: $0.api, pid: $0.pid) }, roomPrefix: roomPrefix)
            }
            var report: BenchReport
            do {
                var bench = try Bench(plan: p, server: server, media: media, conversation: conversation)
                bench.baselineRSS = bench.server.pids.compactMap(ProcessProbe.residentBytes(pid:)).reduce(0, +)
                report = try await bench.run { print($0) }
            } catch {
                _ = await node?.stop()
                for n in cluster { _ = await n.stop() }
                throw error
            }
            if let node { print("node: \(await node.stop() ?? "stopped cleanly")") }
            if let c = server as? ClusterServer { print(c.perNode) }
            for n in cluster { print("node \(n.nodeID): \(await n.stop() ?? "stopped cleanly")") }
            if baselineSeconds > 0, report.meanPacketBytes > 0 {
                report.baseline = try Baseline.measure(packetSize: report.meanPacketBytes, seconds: baselineSeconds)
            }
            report.label = sweepKey.map { "\($0)=\(label)" } ?? "sfu"
            print(report.text)
            reports.append(report)
            nodeReports.append(report)
            if against != nil {
                print("\nbench: the same plan against Janus VideoRoom")
                let janus = try await JanusServer(cores: cores)
                var janusBench = try Bench(plan: p, server: janus, media: media, conversation: conversation)
                janusBench.baselineRSS = janus.pid.flatMap(ProcessProbe.residentBytes(pid:))
                var janusReport: BenchReport
                do { janusReport = try await janusBench.run { print($0) } } catch {
                    print("janus log:\n\(janus.logTail)")
                    _ = await janus.stop()
                    throw error
                }
                print("janus: \(await janus.stop() ?? "stopped cleanly")")
                janusReport.label = sweepKey.map { "janus \($0)=\(label)" } ?? "janus"
                print(janusReport.text)
                let comparison = BenchComparison(ours: report, theirs: janusReport)
                print("\n" + comparison.text)
                comparisons.append(comparison)
                reports.append(janusReport)
            }
        }
        if let sweepKey {
            print("\n\(sweepKey) | kbit/s per subscriber | node cores | packets out/s | s CPU per M packets | packets out per core-second | per media-worker core-second | loss % | median estimate Mbit/s | mean number_of_videos")
            for (r, run) in zip(nodeReports, runs) {
                let summary = r.subscriberSeries?.summary
                let videos = summary.flatMap { s -> Double? in
                    let n = s.videosAtEnd.values.reduce(0, +)
                    return n > 0 ? Double(s.videosAtEnd.reduce(0) { $0 + $1.key * $1.value }) / Double(n) : nil
                }
                print(String(format: "%@ | %.0f | %.2f | %.0f | %@ | %@ | %@ | %.3f | %@ | %@", run.label, r.downstreamKbpsPerSubscriber, r.nodeCores,
                             r.packetsOutPerSecond, r.cpuSecondsPerMillionPackets.map { String(format: "%.2f", $0) } ?? "-",
                             r.packetsOutPerCoreSecond.map { String(format: "%.0f", $0) } ?? "-",
                             r.packetsOutPerWorkerCoreSecond.map { String(format: "%.0f", $0) } ?? "-", r.lossFraction * 100,
                             summary?.estimateMedian.map { String(format: "%.2f", $0 / 1e6) } ?? "-", videos.map { String(format: "%.2f", $0) } ?? "-"))
            }
            if let chart {
                let svg = SweepChart.svg(key: sweepKey, values: runs.map(\.label), series: [
                    ("downstream kbit/s per subscriber", nodeReports.map(\.downstreamKbpsPerSubscriber)),
                    ("node CPU (cores)", nodeReports.map(\.nodeCores)),
                    ("packets out per second", nodeReports.map(\.packetsOutPerSecond)),
                ])
                try svg.write(toFile: chart, atomically: true, encoding: .utf8)
                print("chart: \(chart)")
            }
            if !comparisons.isEmpty {
                print("\n\(sweepKey) | node delivered per CPU-second | \(against ?? "peer") delivered per CPU-second | ratio | node cores | \(against ?? "peer") cores | node latency p50 / p99 ms | \(against ?? "peer") latency p50 / p99 ms | node loss % | \(against ?? "peer") loss %")
                let ms = { (r: BenchReport) in
                    [r.latencyMilliseconds.p50, r.latencyMilliseconds.p99].map { $0.map { String(format: "%.2f", $0) } ?? "-" }.joined(separator: " / ")
                }
                for (c, run) in zip(comparisons, runs) {
                    print(String(format: "%@ | %@ | %@ | %@ | %.3f | %.3f | %@ | %@ | %.3f | %.3f", run.label,
                                 c.ours.deliveredPerCoreSecond.map { String(format: "%.0f", $0) } ?? "-",
                                 c.theirs.deliveredPerCoreSecond.map { String(format: "%.0f", $0) } ?? "-",
                                 c.efficiencyRatio.map { String(format: "%.2f", $0) } ?? "-", c.ours.nodeCores, c.theirs.nodeCores,
                                 ms(c.ours), ms(c.theirs), c.ours.lossFraction * 100, c.theirs.lossFraction * 100))
                }
            }
        }
        if let json {
            let object: Any = reports.count == 1 ? reports[0].json : reports.map(\.json)
            try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: json))
            print("json: \(json)")
        }
    }

    /// `--nodes` nodes of one cluster (ids bench-<run>-n0, -n1, ...), registered and live in the registry.
    var nodeArguments: [String] { nodeSettings.flatMap { ["--set", $0] } }

    func startCluster() async throws -> [NodeProcess] {
        let url = try registry ?? PostgresServer.shared.get().database()
        var started: [NodeProcess] = []
        // Ids of this run's own (a shared registry may list other nodes): all of them live before the run.
        let run = UInt32.random(in: 0...0xFFFF_FFFF)
        let ids = (0..<nodes).map { "bench-\(String(run, radix: 16))-n\($0)" }
        do {
            for id in ids {
                let n = try await NodeProcess(workers: workers, cores: cores, extra: [
                    "--set", "cluster.registry=\(url)", "--set", "cluster.node_id=\(id)", "--set", "cluster.capacity=\(nodeCapacity)",
                    "--set", "cluster.heartbeat_timeout_seconds=3",
                ] + nodeArguments, extraForPort: { ["--set", "cluster.control_url=http://127.0.0.1:\($0)"] })
                n.nodeID = id
                started.append(n)
            }
            for _ in 0..<100 {
                let listed = (try? await started[0].api.call("GET", "v1/nodes"))?.json["nodes"] as? [[String: Any]] ?? []
                let live = Set(listed.filter { ($0["alive"] as? Bool) == true && ($0["state"] as? String) == "serving" }.compactMap { $0["node"] as? String })
                if live.isSuperset(of: ids) { return started }
                try await Task.sleep(for: .milliseconds(100))
            }
        } catch {
            for n in started { _ = await n.stop() }
            throw error
        }
        for n in started { _ = await n.stop() }
        throw ValidationError("the \(nodes) nodes did not all appear live in the registry")
    }

    /// The live serving nodes of the cluster `api` is a node of (`GET /v1/nodes`), each through its control URL.
    static func clusterNodes(of api: ControlClient) async throws -> [ClusterServer.Node] {
        let listed = try await api.require("GET", "v1/nodes").json["nodes"] as? [[String: Any]] ?? []
        let nodes: [ClusterServer.Node] = listed.compactMap { n in
            guard (n["alive"] as? Bool) == true, (n["state"] as? String) == "serving", let id = n["node"] as? String,
                  let url = (n["control_url"] as? String).flatMap(URL.init(string:)) else { return nil }
            return .init(id: id, api: ControlClient(base: url, key: api.key), pid: nil)
        }
        guard !nodes.isEmpty else { throw ValidationError("\(api.base) lists no live serving node") }
        return nodes
    }
}
