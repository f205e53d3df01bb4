import ArgumentParser
import ClusterLab
import Foundation
import LoadGen

/// What a relay between two nodes costs in latency, and how a room comes back after its home is killed.
struct RelayBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-bench",
        abstract: "Measure the latency a relay hop adds, a relaying node's SIGTERM and the fail-over after kill -9 of a room's home, with two node processes.",
        discussion: """
            Starts two nodes (`sfu serve`, beside this binary) sharing a registry (without --registry, a private \
            PostgreSQL server this command starts), a room spanning them, a talker and a listener on node a and \
            a listener on node b, on loopback with real ICE, DTLS and SRTP. Reports each listener's latency \
            (send stamp to receipt) and their difference; talkers on both nodes take turns; node b is stopped \
            with SIGTERM (it must exit with status 0 after saying node_lost of the room) and started again, its \
            listener rejoining; then node a is killed with SIGKILL and the bench reports when node b says \
            node_lost, takes the room over, and when the talker, rejoining on that event, is heard there - and \
            the same for a room only node a hosted. Exits non-zero when a stage fails.
            """
    )

    @Option(help: "A registry URL (postgres://...); default: a private server this command starts.") var registry: String?
    @Option(help: "Seconds of talk measured before the kill.") var seconds = 10.0
    @Option(help: "The nodes' cluster.heartbeat_timeout_seconds (default: the node's default).") var heartbeatTimeout: Int?
    @Option(help: "The two nodes' addresses (comma-separated); default: both on loopback.") var nodeHosts = "127.0.0.1,127.0.0.1"
    @Option(help: "Network namespaces to run the two nodes in (comma-separated); default: this one.") var namespaces: String?
    @Option(help: "The clients' address.") var clientHost = "127.0.0.1"

    mutating func validate() throws {
        try OptionRanges.require("--seconds", seconds, in: 1...86_400)
        if let heartbeatTimeout { try OptionRanges.require("--heartbeat-timeout", heartbeatTimeout, in: 1...3_600) }
    }

    func run() async throws {
        let url = try registry ?? PostgresServer.shared.get().database()
        print("relay-bench: two nodes, one room across them, \(seconds) s of talk, talkers taking turns, SIGTERM of a relaying node, then kill -9 of the talker's node")
        var placement = RelayBench.Placement()
        placement.nodeHosts = nodeHosts.split(separator: ",").map(String.init)
        placement.namespaces = namespaces.map { $0.split(separator: ",").map { String($0) } } ?? [nil, nil]
        placement.clientHost = clientHost
        guard placement.nodeHosts.count == 2, placement.namespaces.count == 2 else { throw ValidationError("two nodes: two hosts, two namespaces") }
        let result = try await RelayBench.run(registry: url, seconds: seconds, heartbeatTimeout: heartbeatTimeout, placement: placement)
        print(result)
        let failures = [
            result.remoteReceived > 0 ? nil : "nothing crossed the relay",
            result.stopProblem == nil && result.stopSaidNodeLost && result.rejoinAfterStopSeconds != nil ? nil
                : "SIGTERM of a relaying node: it did not stop cleanly, say node_lost, or come back",
            result.mediaBackSeconds != nil && result.mediaBackNewNodeSeconds != nil ? nil : "the fail-over after kill -9 did not bring the talkers back",
        ].compactMap { $0 }
        guard failures.isEmpty else {
            for f in failures { FileHandle.standardError.write(Data("!! relay-bench: \(f)\n".utf8)) }
            throw ExitCode.failure
        }
    }
}
