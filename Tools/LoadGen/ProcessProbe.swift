import Foundation

/// What Linux says about a process: resident memory and CPU time (from /proc).
public enum ProcessProbe {
    /// Resident set size in bytes (`VmRSS`).
    public static func residentBytes(pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return line.split(separator: " ").compactMap { Int($0) }.first.map { $0 * 1024 }
    }

    /// User plus system CPU seconds (`/proc/<pid>/stat` fields 14 and 15).
    public static func cpuSeconds(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// What the scheduler accounted to the process's threads whose name starts with `prefix` (every thread
    /// for ""), from each `/proc/<pid>/task/<tid>/schedstat`: seconds on a CPU, and seconds ready to run but
    /// waiting for one. The wait says how much other work on a shared machine held these threads back (a node
    /// pinned to a core someone else uses queues its packets meanwhile); CPU by thread name separates the
    /// node's media workers ("sfu-worker-N") from its control API. nil when no such thread was read.
    public static func schedulerSeconds(pid: Int32, threadsNamed prefix: String = "") -> (cpu: Double, wait: Double)? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var total: (cpu: Double, wait: Double)?
        for tid in tasks {
            let dir = "/proc/\(pid)/task/\(tid)"
            if !prefix.isEmpty {
                guard let name = try? String(contentsOfFile: dir + "/comm", encoding: .utf8), name.hasPrefix(prefix) else { continue }
            }
            guard let text = try? String(contentsOfFile: dir + "/schedstat", encoding: .utf8), let t = schedstat(text) else { continue }
            total = ((total?.cpu ?? 0) + t.cpu, (total?.wait ?? 0) + t.wait)
        }
        return total
    }

    /// Seconds on a CPU of each thread whose name starts with `prefix`, by name (a room spread across workers
    /// shows as CPU on every "sfu-worker-N").
    public static func cpuSecondsByThreadName(pid: Int32, prefix: String) -> [String: Double] {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [:] }
        var out: [String: Double] = [:]
        for tid in tasks {
            let dir = "/proc/\(pid)/task/\(tid)"
            guard let name = (try? String(contentsOfFile: dir + "/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines),
                  name.hasPrefix(prefix),
                  let text = try? String(contentsOfFile: dir + "/schedstat", encoding: .utf8), let t = schedstat(text) else { continue }
            out[name, default: 0] += t.cpu
        }
        return out
    }

    /// Seconds on a CPU by thread id, from each `/proc/<pid>/task/<tid>/schedstat` (the scheduler's nanosecond
    /// count, where `/proc/<pid>/stat` counts whole clock ticks).
    public static func threadCPUSeconds(pid: Int32) -> [String: Double]? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var out: [String: Double] = [:]
        for tid in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8),
                  let t = schedstat(text) else { continue }
            out[tid] = t.cpu
        }
        return out
    }

    /// CPU seconds between two `threadCPUSeconds` readings: what each thread alive at the end ran since the
    /// first (all of it for a thread started in between). A thread that ended in between is missing from
    /// the end reading, and its time since the first with it: `lost` counts such threads.
    public static func cpuSecondsBetween(_ before: [String: Double], _ after: [String: Double]) -> (seconds: Double, lost: Int) {
        let seconds = after.reduce(0.0) { $0 + max(0, $1.value - (before[$1.key] ?? 0)) }
        return (seconds, before.keys.filter { after[$0] == nil }.count)
    }

    /// One schedstat line ("<on-CPU ns> <waiting ns> <timeslices>") in seconds.
    static func schedstat(_ text: String) -> (cpu: Double, wait: Double)? {
        let fields = text.split(whereSeparator: \.isWhitespace)
        guard fields.count >= 3, let cpu = Double(fields[0]), let wait = Double(fields[1]) else { return nil }
        return (cpu / 1e9, wait / 1e9)
    }
}
