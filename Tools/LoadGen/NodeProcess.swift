import Foundation
import NodeIO
import SFUClient
import WebRTCEdge

/// A node this process starts (`sfu serve`, the node's binary beside this one) on free loopback ports, optionally pinned to
/// chosen cores with taskset, and stops with SIGTERM.
public final class NodeProcess: @unchecked Sendable {
    public let process: Process
    public let api: ControlClient
    public var pid: Int32 { process.processIdentifier }
    /// The node's id in a cluster, when the caller gave it one.
    public var nodeID = ""
    /// Where the node writes recordings (a directory of its own, removed when it stops).
    public let recordings: String

    /// Starts the node and waits until it answers `/healthz`.
    /// `host`: the address its control API and media listen on; `netns`: a network namespace to run it in
    /// (`ip netns exec`, which execs: the process is the node's); `key`: its API key (needed beyond loopback);
    /// `log`: a file for its standard output and error (else this process's).
    public init(workers: Int, cores: String? = nil, extra: [String] = [], extraForPort: (UInt16) -> [String] = { _ in [] },
                host: String = "127.0.0.1", netns: String? = nil, key: String? = nil, log: String? = nil) async throws {
        let apiPort = try Self.freePort()
        let extra = extra + extraForPort(apiPort) + (key.map { ["--set", "api.key=\($0)"] } ?? [])
        let binary = Self.nodeBinary
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw LoadError("no node binary at \(binary): build it with swift build --product sfu")
        }
        recordings = NSTemporaryDirectory() + "sfu-node-\(apiPort)-recordings"
        var arguments = ["serve", "--set", "api.listen=\(host):\(apiPort)", "--set", "media.listen=\(host):0",
                         "--set", "workers=\(workers)", "--set", "log.level=warning", "--set", "recording.directory=\(recordings)"] + extra
        let p = Process()
        if let netns {
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            arguments = ["netns", "exec", netns, binary] + arguments
        } else if let cores {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            arguments = ["-c", cores, binary] + arguments
        } else {
            p.executableURL = URL(fileURLWithPath: binary)
        }
        p.arguments = arguments
        if let log, FileManager.default.createFile(atPath: log, contents: nil), let file = FileHandle(forWritingAtPath: log) {
            p.standardOutput = file
            p.standardError = file
        }
        try p.run()
        process = p
        let base = URL(string: "http://\(host):\(apiPort)")!
        api = ControlClient(base: base, key: key)
        for _ in 0..<100 {
            if (try? await api.call("GET", "healthz"))?.status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        p.terminate()
        throw LoadError("the node did not answer on \(base)")
    }

    /// The `sfu` binary in this executable's directory: the node as users run it, not the tools' binary; or
    /// `SFU_BENCH_NODE`, a node built otherwise (scripts/bench.sh: on Debian's libsrtp2, in .build-debian).
    static var nodeBinary: String {
        if let path = ProcessInfo.processInfo.environment["SFU_BENCH_NODE"], !path.isEmpty { return path }
        return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("sfu").path
    }

    /// How long a node may take to exit after SIGTERM before it counts as hung: its own limit on a graceful
    /// stop (`ServeCommand.stopLimit`, then up to 2 s of cancellation) and a second.
    public static let stopLimit = 13.0

    /// SIGTERM, then waits up to `timeout`; returns what went wrong, or nil when it exited with status 0.
    public func stop(timeout: Double = stopLimit) async -> String? {
        if process.isRunning { kill(pid, SIGTERM) }  // (an exited one's pid may be another process's by now)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        defer { try? FileManager.default.removeItem(atPath: recordings) }
        if process.isRunning {
            kill(pid, SIGKILL)  // no orphan node left behind (terminate() would only send SIGTERM again)
            return "did not stop within \(Int(timeout)) s of SIGTERM (killed)"
        }
        return process.terminationStatus == 0 ? nil : "exited with status \(process.terminationStatus)"
    }


    /// A port nothing listens on now.
    static func freePort() throws -> UInt16 {
        let s = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        return s.local.port
    }
}

/// Sums of metric families in the Prometheus text of `/metrics` (over the worker label).
public enum MetricsText {
    public static func sum(_ text: String, _ family: String, label: String? = nil) -> Double {
        var total = 0.0
        for line in text.split(separator: "\n") where line.hasPrefix(family + "{") || line.hasPrefix(family + " ") {
            if let label, !line.contains(label) { continue }
            if let v = Double(line.split(separator: " ").last ?? "") { total += v }
        }
        return total
    }

    /// The value of the first sample of `family`.
    public static func value(_ text: String, _ family: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(family + "{") || line.hasPrefix(family + " ") {
            return Double(line.split(separator: " ").last ?? "")
        }
        return nil
    }

    /// The value of label `name` on the first sample of `family` (`family{name="value",...} 1`).
    public static func label(_ text: String, _ family: String, _ name: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix(family + "{") {
            guard let r = line.range(of: "\(name)=\""), let end = line[r.upperBound...].firstIndex(of: "\"") else { continue }
            return String(line[r.upperBound..<end])
        }
        return nil
    }

    /// `sfu_drops_total` by reason, summed over workers, non-zero only.
    public static func drops(_ text: String) -> [String: Double] {
        var out: [String: Double] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("sfu_drops_total{") {
            guard let r = line.range(of: "reason=\""), let end = line[r.upperBound...].firstIndex(of: "\""),
                  let value = Double(line.split(separator: " ").last ?? "") else { continue }
            out[String(line[r.upperBound..<end]), default: 0] += value
        }
        return out.filter { $0.value > 0 }
    }
}
