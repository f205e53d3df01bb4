import Foundation
import NodeIO
import SFU
import Synchronization

/// What the bench reads of the server around the measured window: its counters, CPU and memory, and the
/// dominant speaker events a turn's switch delay is measured to.
extension Bench {
    /// Dominant speaker events of the bench's rooms, with the node's time (Unix ms).
    final class Dominance: Sendable {
        let events = Mutex<[(room: Int, participant: String, ms: Int64)]>([])
    }

    struct Snapshot {
        var counters: ServerCounters?
        /// User plus system time from `/proc/<pid>/stat`: whole clock ticks, charged to whichever thread runs
        /// when the tick fires, so a server using 1 % of a core reads ~15 ticks in 15 s, give or take several.
        var cpu: Double?
        /// The scheduler's own count (schedstat, nanoseconds) by thread: what the report takes.
        var threadCPU: [String: Double]?
        var rss: Int?
        var generatorCPU: Double?
        var nodeWait: Double?
        var generatorWait: Double?
        /// CPU seconds of the node's media worker threads alone (the control API's share left out).
        var workerCPU: Double?
        /// The same by worker thread name.
        var workerThreads: [String: Double] = [:]
    }

    /// The server's counters, CPU and memory now. The counters (this node's `/metrics`, an HTTP request it
    /// answers; Janus has none) are read before the CPU at the start of the window and after it at the end,
    /// so answering them is never counted as the server's work.
    func snapshot(countersFirst: Bool) async throws -> Snapshot {
        let early = countersFirst ? try await server.counters() : nil
        // A cluster's nodes are summed (threads by "pid/name"); one node is one pid.
        let pids = server.pids
        func sum(_ f: (Int32) -> Double?) -> Double? {
            let v = pids.compactMap(f)
            return v.isEmpty ? nil : v.reduce(0, +)
        }
        let all = pids.compactMap { ProcessProbe.schedulerSeconds(pid: $0) }
        var threads: [String: Double]?
        for p in pids {
            guard let t = ProcessProbe.threadCPUSeconds(pid: p) else { continue }
            for (name, v) in t { threads = threads ?? [:]; threads![pids.count > 1 ? "\(p)/\(name)" : name] = v }
        }
        var s = Snapshot(counters: nil, cpu: sum(ProcessProbe.cpuSeconds(pid:)), threadCPU: threads,
                         rss: sum { ProcessProbe.residentBytes(pid: $0).map(Double.init) }.map { Int($0) }, generatorCPU: ProcessProbe.cpuSeconds(pid: getpid()),
                         nodeWait: all.isEmpty ? nil : all.map(\.wait).reduce(0, +), generatorWait: ProcessProbe.schedulerSeconds(pid: getpid())?.wait,
                         workerCPU: sum { ProcessProbe.schedulerSeconds(pid: $0, threadsNamed: "sfu-worker")?.cpu })
        for p in pids {
            for (name, v) in ProcessProbe.cpuSecondsByThreadName(pid: p, prefix: "sfu-worker") { s.workerThreads[pids.count > 1 ? "\(p)/\(name)" : name] = v }
        }
        s.counters = countersFirst ? early : try await server.counters()
        return s
    }

    /// For each turn that started in the measured window: from the turn's start (the new speaker's first
    /// words) to the node's dominant_speaker event naming them.
    func switchDelays(dominance: Dominance, wallStart: Double, from: Int64, seconds: Double) -> [Double] {
        // A meeting's turns are in its script; its listeners report their onsets instead.
        guard plan.speakers > 1, conversation == nil else { return [] }
        let events = dominance.events.withLock { $0 }
        var delays: [Double] = []
        let turnMs = plan.turnSeconds * 1000
        let startMs = wallStart * 1000
        for room in 0..<plan.rooms {
            var k = Int((Double(from) - startMs) / turnMs) + 1
            while startMs + Double(k) * turnMs < Double(from) + seconds * 1000 - turnMs / 2 {
                let t = startMs + Double(k) * turnMs
                let speaker = "pub\((k + room) % plan.speakers)"
                if let e = events.first(where: { $0.room == room && $0.participant == speaker && Double($0.ms) >= t && Double($0.ms) < t + turnMs }) {
                    delays.append(Double(e.ms) - t)
                }
                k += 1
            }
        }
        return delays
    }
}
