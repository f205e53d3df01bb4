import ArgumentParser
import ClusterLab
import Foundation

/// The cluster registry under load: placements from several signaling servers while every node heartbeats.
struct RegistryBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "registry-bench",
        abstract: "Measure the cluster registry: placements per second and their p50/p99, heartbeat latency, database writes.",
        discussion: """
            Signaling servers (each its own connection pool) place every participant of --rooms rooms, \
            --concurrency at a time each, while --nodes nodes heartbeat each second with the rooms they host, \
            as nodes do. Without --registry, starts a private PostgreSQL server (Debian's binaries, a Unix \
            socket in /tmp) and a fresh database; with it, uses that database (its registry tables are created \
            if missing, and rows are left behind: use a scratch database).
            """
    )

    @Option(help: "A registry URL (postgres://...); default: a private server this command starts.") var registry: String?
    @Option(help: "Nodes heartbeating each second.") var nodes = 20
    @Option(help: "Signaling servers placing participants.") var signalingServers = 4
    @Option(help: "Placements in flight per signaling server.") var concurrency = 8
    @Option(help: "Rooms.") var rooms = 200
    @Option(help: "Participants placed per room.") var participants = 10
    @Option(help: "Heartbeats go on at least this many seconds.") var seconds = 5.0

    mutating func validate() throws {
        try OptionRanges.require("--seconds", seconds, in: 0...86_400)
    }


    func run() async throws {
        let url = try registry ?? PostgresServer.shared.get().database()
        var plan = RegistryBench.Plan()
        plan.nodes = nodes
        plan.signalingServers = signalingServers
        plan.concurrency = concurrency
        plan.rooms = rooms
        plan.participantsPerRoom = participants
        plan.minimumSeconds = seconds
        print("registry-bench: \(nodes) nodes, \(signalingServers) signaling servers x \(concurrency) in flight, \(rooms) rooms x \(participants)")
        let result = try await RegistryBench.run(url: url, plan: plan)
        print(result)
        if result.splitRooms > 0 { throw ValidationError("\(result.splitRooms) rooms were split across nodes") }
    }
}
