import ArgumentParser
import Foundation
import LoadGen
import SFUClient

/// `sfu bench --generators N`: the load comes from N generator processes (this binary's `bench --target`, each
/// with its share of the rooms under a room prefix of its own), so one run can load more than one generator
/// thread sends - a many-core node, or a cluster. This process starts the node(s), measures their CPU over the
/// generators' run, and merges what the generators report.
extension BenchCommand {
    func runGenerators(plan: BenchPlan) async throws {
        guard sweep == nil, against == nil else { throw ValidationError("--generators runs one plan: no --sweep, no --against") }
        guard plan.rooms >= generators else { throw ValidationError("--generators \(generators) needs at least as many rooms (rooms = \(plan.rooms))") }
        let cluster = nodes > 1 ? try await startCluster() : []
        let node: NodeProcess? = target == nil && cluster.isEmpty ? try await NodeProcess(workers: workers, cores: cores) : nil
        let url = node?.api.base.absoluteString ?? cluster.first?.api.base.absoluteString ?? target!
        let pids = cluster.map(\.pid) + (node.map { [$0.pid] } ?? pid.map { [$0] } ?? [])
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("sfu-bench-\(getpid())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        print("bench: \(generators) generator processes against \(url)\(cluster.isEmpty ? "" : " (a cluster of \(cluster.count) nodes)")")
        // Each node of a cluster over the whole run (its packets, relays and CPU), read as the generators' rooms are.
        let watch: ClusterServer? = nodes > 1 || cluster_
            ? ClusterServer(nodes: cluster.isEmpty ? try await Self.clusterNodes(of: ControlClient(base: URL(string: url)!, key: key))
                                                   : cluster.enumerated().map { .init(id: "n\($0.offset)", api: $0.element.api, pid: $0.element.pid) })
            : nil
        _ = try await watch?.counters()
        let cpuBefore = pids.compactMap { ProcessProbe.schedulerSeconds(pid: $0)?.cpu }.reduce(0, +)
        let started = Date()
        var children: [(Process, URL)] = []
        for g in 0..<generators {
            let rooms = plan.rooms / generators + (g < plan.rooms % generators ? 1 : 0)
            let out = work.appendingPathComponent("g\(g).json")
            var args = ["bench", "--target", url, "--room-prefix", "\(roomPrefix)g\(g)-", "--json", out.path, "--baseline-seconds", "0"]
            if nodes > 1 || cluster_ { args.append("--cluster") }
            if let key { args += ["--key", key] }
            if pids.count == 1 { args += ["--pid", "\(pids[0])"] }
            if let scenario { args += ["--scenario", scenario] }
            for o in overrides { args += ["--set", o] }
            args += ["--set", "rooms=\(rooms)"]
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            p.arguments = args
            p.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            try p.run()
            children.append((p, out))
        }
        for (p, _) in children { while p.isRunning { try await Task.sleep(for: .milliseconds(100)) } }
        let seconds = Date().timeIntervalSince(started)
        let cores = (pids.compactMap { ProcessProbe.schedulerSeconds(pid: $0)?.cpu }.reduce(0, +) - cpuBefore) / seconds
        _ = try await watch?.counters()
        var reports: [BenchReport] = []
        for (g, (p, out)) in children.enumerated() {
            guard p.terminationStatus == 0, let data = try? Data(contentsOf: out), let r = try? JSONDecoder().decode(BenchReport.self, from: data) else {
                print("generator \(g): failed (exit \(p.terminationStatus))")
                continue
            }
            reports.append(r)
        }
        print(Self.merged(reports, generators: generators, nodeCores: pids.isEmpty ? nil : cores, seconds: seconds))
        if let watch { print(watch.perNode.replacingOccurrences(of: "over the window", with: "over the whole run")) }
        if let node { print("node: \(await node.stop() ?? "stopped cleanly")") }
        for (i, n) in cluster.enumerated() { print("node n\(i): \(await n.stop() ?? "stopped cleanly")") }
        guard reports.count == generators else { throw ExitCode(1) }
    }

    /// One line per generator and the sums: what the subscribers of all generators received, their loss, the
    /// worst latency percentiles, and the node's (nodes') CPU over the whole run, ramps included.
    static func merged(_ reports: [BenchReport], generators: Int, nodeCores: Double?, seconds: Double) -> String {
        var lines = ["== \(reports.count) of \(generators) generators reported"]
        for (g, r) in reports.enumerated() {
            lines.append(String(format: "  generator %d: %d rooms, %d/%d connected, subscribers received %.0f packets/s, loss %.3f %%, latency p50 %@ p99 %@ ms",
                                g, r.plan.rooms, r.connected, r.participants, r.receivedPackets / max(r.measuredSeconds, 1e-9), r.lossFraction * 100,
                                r.latencyMilliseconds.p50.map { String(format: "%.2f", $0) } ?? "-", r.latencyMilliseconds.p99.map { String(format: "%.2f", $0) } ?? "-"))
        }
        let received = reports.reduce(0) { $0 + $1.receivedPackets / max($1.measuredSeconds, 1e-9) }
        let expected = reports.reduce(0) { $0 + $1.expectedPackets }, got = reports.reduce(0) { $0 + $1.receivedPackets }
        lines.append(String(format: "all: %d/%d connected, subscribers received %.0f packets/s, loss %.3f %%, worst p99 %@ ms",
                            reports.reduce(0) { $0 + $1.connected }, reports.reduce(0) { $0 + $1.participants }, received,
                            expected > 0 ? max(0, 1 - got / expected) * 100 : 0,
                            reports.compactMap(\.latencyMilliseconds.p99).max().map { String(format: "%.2f", $0) } ?? "-"))
        if let nodeCores {
            lines.append(String(format: "node CPU over the whole run (%.0f s, ramps included): %.2f cores; %.0f packets delivered per node core-second",
                                seconds, nodeCores, nodeCores > 0 ? received / nodeCores : 0))
        }
        return lines.joined(separator: "\n")
    }
}
