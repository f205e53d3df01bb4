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
        guard sweep == nil, against == nil, json == nil, chart == nil else {
            throw ValidationError("--generators runs one plan and prints the merged report: no --sweep, --against, --json or --chart")
        }
        guard plan.rooms >= generators else { throw ValidationError("--generators \(generators) needs at least as many rooms (rooms = \(plan.rooms))") }
        let cluster = nodes > 1 ? try await startCluster() : []
        var node: NodeProcess?
        var children: [(Process, URL)] = []
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("sfu-bench-\(getpid())")
        func cleanUp() async {
            for (p, _) in children where p.isRunning { p.terminate() }
            for (p, _) in children { p.waitUntilExit() }
            if let node { print("node: \(await node.stop() ?? "stopped cleanly")") }
            for n in cluster { print("node \(n.nodeID): \(await n.stop() ?? "stopped cleanly")") }
            try? FileManager.default.removeItem(at: work)
        }
        let reports: [BenchReport]
        do {
            node = target == nil && cluster.isEmpty ? try await NodeProcess(workers: workers, cores: cores) : nil
            let url = node?.api.base.absoluteString ?? cluster.first?.api.base.absoluteString ?? target!
            let pids = cluster.map(\.pid) + (node.map { [$0.pid] } ?? pid.map { [$0] } ?? [])
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            print("bench: \(generators) generator processes against \(url)\(cluster.isEmpty ? "" : " (a cluster of \(cluster.count) nodes)")")
            // Each node of a cluster over the whole run (its packets, relays and CPU).
            let watch: ClusterServer? = nodes > 1 || cluster_
                ? ClusterServer(nodes: cluster.isEmpty ? try await Self.clusterNodes(of: ControlClient(base: URL(string: url)!, key: key))
                                                       : cluster.map { .init(id: $0.nodeID, api: $0.api, pid: $0.pid) })
                : nil
            _ = try? await watch?.counters()
            // utime + stime from /proc/<pid>/stat: the time of threads that ended is kept.
            let cpuBefore = pids.map { ProcessProbe.cpuSeconds(pid: $0) }
            let started = Date()
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
            let cpuAfter = pids.map { ProcessProbe.cpuSeconds(pid: $0) }
            let used = zip(cpuBefore, cpuAfter).compactMap { a, b in a.flatMap { a in b.map { $0 - a } } }
            let cores = used.count == pids.count && !pids.isEmpty ? used.reduce(0, +) / seconds : nil
            _ = try? await watch?.counters()
            var read: [BenchReport] = []
            for (g, (p, out)) in children.enumerated() {
                guard p.terminationStatus == 0, let data = try? Data(contentsOf: out), let r = try? JSONDecoder().decode(BenchReport.self, from: data) else {
                    print("generator \(g): failed (exit \(p.terminationStatus))")
                    continue
                }
                read.append(r)
            }
            reports = read
            print(Self.merged(reports, generators: generators, nodeCores: cores, seconds: seconds))
            if let watch { print(watch.perNode.replacingOccurrences(of: "over the window", with: "over the whole run")) }
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
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
            // Not divided into the received rate: that is each generator's measured window, this the whole run.
            lines.append(String(format: "node CPU over the whole run (%.0f s: the generators' start, ramps and teardown included): %.2f cores",
                                seconds, nodeCores))
        }
        return lines.joined(separator: "\n")
    }
}
