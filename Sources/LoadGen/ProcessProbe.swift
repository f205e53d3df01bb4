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

    /// Seconds the process's threads were ready to run but waited for a CPU (the second field of each
    /// `/proc/<pid>/task/<tid>/schedstat`). On a machine shared with other work this says how much that work
    /// held this process back: a node pinned to a core someone else also uses queues its packets meanwhile.
    public static func runQueueWaitSeconds(pid: Int32) -> Double? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var total = 0.0
        var read = false
        for tid in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8),
                  let ns = waitNanoseconds(schedstat: text) else { continue }
            total += ns
            read = true
        }
        return read ? total / 1e9 : nil
    }

    /// The run-queue wait in one schedstat line ("<on-CPU ns> <waiting ns> <timeslices>").
    static func waitNanoseconds(schedstat: String) -> Double? {
        let fields = schedstat.split(whereSeparator: \.isWhitespace)
        return fields.count >= 3 ? Double(fields[1]) : nil
    }
}
