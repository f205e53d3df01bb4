import ArgumentParser
import Foundation
import LoadGen
import SFUClient

/// Churns simulated clients through a node (its own, or one at `--target`) and checks that it stays up,
/// counts the garbage, and returns to its memory baseline.
struct SoakCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Join and leave rooms of simulated WebRTC clients repeatedly, with garbage datagrams, against a node.",
        discussion: """
            Without --target, starts `sfu serve` (this binary) on free loopback ports with --workers workers, \
            measures its resident memory after each cycle, and stops it with SIGTERM at the end (which must exit \
            cleanly). Exits non-zero when a check fails.
            """
    )

    @Option(help: "Control API of a running node (its memory is then read only with --pid).") var target: String?
    @Option(help: "PID of the node at --target, to read its memory.") var pid: Int32?
    @Option(help: "API key of the node at --target.") var key: String?
    @Option(help: "Workers of the node this command starts.") var workers = 2
    @Option(help: "Rooms per cycle.") var rooms = 4
    @Option(help: "Participants per room (each publishes audio and subscribes).") var participants = 4
    @Option(help: "Join-talk-leave cycles.") var cycles = 12
    @Option(help: "Seconds of talk per cycle.") var talkSeconds = 4.0
    @Option(help: "Garbage datagrams per second.") var garbage = 200
    @Option(help: "Allowed memory growth from the baseline (after the third cycle), MiB.") var allowedGrowthMib = 4
    @Option(help: "ICE consent lifetime of the node this command starts (vanished clients must expire within a cycle).") var consentSeconds = 3

    @Flag(help: "Do not renegotiate, restart ICE, replace or vanish clients while they talk.") var noSessionChanges = false

    mutating func validate() throws {
        try OptionRanges.require("--talk-seconds", talkSeconds, in: 0.1...3_600)
        try OptionRanges.require("--cycles", cycles, in: 1...100_000)
        try OptionRanges.require("--garbage", garbage, in: 0...1_000_000)
    }

    func run() async throws {
        var plan = Soak.Plan()
        plan.rooms = rooms
        plan.participantsPerRoom = participants
        plan.cycles = cycles
        plan.talkSeconds = talkSeconds
        plan.garbagePerSecond = garbage
        plan.allowedGrowthBytes = allowedGrowthMib << 20
        plan.sessionChanges = !noSessionChanges
        if target == nil { plan.consentSeconds = consentSeconds }
        let node: NodeProcess? = target == nil ? try await NodeProcess(workers: workers, extra: ["--set", "ice.consent_seconds=\(consentSeconds)"]) : nil
        let api = node?.api ?? ControlClient(base: URL(string: target!)!, key: key)
        let pid = pid ?? node?.pid
        var soak = try Soak(plan: plan, api: api, nodePID: pid)
        print("soak: \(plan.cycles) cycles of \(plan.rooms) rooms x \(plan.participantsPerRoom) participants (\(plan.rooms * plan.participantsPerRoom * 2) connections per cycle), \(plan.garbagePerSecond) garbage datagrams/s\(plan.sessionChanges ? ", one participant per room renegotiating, restarting ICE, starting over or vanishing" : "")")
        let report = try await soak.run { print($0) }
        var failures = report.failures
        if let b = report.baselineBytes, let f = report.finalBytes {
            print(String(format: "memory: baseline %.1f MiB (after cycle %d), final %.1f MiB, growth %+.1f MiB", Double(b) / 1_048_576,
                         plan.warmupCycles, Double(f) / 1_048_576, Double(f - b) / 1_048_576))
        }
        print("drops counted by the node: " + report.drops.sorted { $0.key < $1.key }.map { "\($0.key)=\(Int($0.value))" }.joined(separator: " "))
        if let node {
            if let problem = await node.stop() { failures.append("the node \(problem)") } else { print("node stopped cleanly on SIGTERM") }
        }
        for f in failures { print("FAIL \(f)") }
        print("soak: \(failures.isEmpty ? "passed" : "failed")")
        if !failures.isEmpty { throw ExitCode.failure }
    }
}
