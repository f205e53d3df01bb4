import Foundation

/// A private network namespace for a benchmark against Janus: no route out, loopback up, and 127.0.0.1 also
/// held by a veth interface, because Janus (libnice) gathers no candidates on loopback interfaces. The bench
/// re-runs itself inside it (`ip netns exec`), so the node, Janus and the generator all live and die there.
public enum BenchNamespace {
    /// Set in the re-run process: the namespace it runs in.
    public static let environmentKey = "SFU_BENCH_NETNS"

    public static var isInside: Bool { ProcessInfo.processInfo.environment[environmentKey] != nil }

    /// Creates the namespace, runs this executable with `arguments` inside it, removes the namespace;
    /// returns the exit status.
    public static func rerunInside(arguments: [String]) throws -> Int32 {
        guard getuid() == 0 else { throw LoadError("a benchmark against Janus needs root to create its network namespace") }
        let name = "sfubench\(getpid())"
        try ip(["netns", "add", name])
        defer { try? ip(["netns", "del", name]) }
        for command in [["link", "set", "lo", "up"], ["link", "add", "v0", "type", "veth", "peer", "name", "v1"],
                        ["link", "set", "v0", "up"], ["link", "set", "v1", "up"], ["addr", "add", "127.0.0.1/32", "dev", "v0"]] {
            try ip(["netns", "exec", name, "ip"] + command)
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ipPath)
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        p.arguments = ["netns", "exec", name, binary] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment[environmentKey] = name
        p.environment = environment
        try p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }

    static var ipPath: String {
        ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "ip"
    }

    static func ip(_ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ipPath)
        p.arguments = arguments
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw LoadError("ip \(arguments.joined(separator: " ")) failed (\(p.terminationStatus))") }
    }
}
