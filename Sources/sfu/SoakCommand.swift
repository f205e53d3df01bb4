import ArgumentParser
import Foundation
import LoadGen
import SFUClient
import NodeIO
import WebRTCEdge

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

    func run() async throws {
        var plan = Soak.Plan()
        plan.rooms = rooms
        plan.participantsPerRoom = participants
        plan.cycles = cycles
        plan.talkSeconds = talkSeconds
        plan.garbagePerSecond = garbage
        plan.allowedGrowthBytes = allowedGrowthMib << 20
        var node: Process?
        let api: ControlClient
        if let target {
            api = ControlClient(base: URL(string: target)!, key: key)
        } else {
            let (process, base) = try await Self.spawnNode(workers: workers)
            node = process
            api = ControlClient(base: base)
        }
        let pid = pid ?? node?.processIdentifier
        var soak = try Soak(plan: plan, api: api, nodePID: pid)
        print("soak: \(plan.cycles) cycles of \(plan.rooms) rooms x \(plan.participantsPerRoom) participants (\(plan.rooms * plan.participantsPerRoom * 2) connections per cycle), \(plan.garbagePerSecond) garbage datagrams/s")
        let report = try await soak.run { print($0) }
        var failures = report.failures
        if let b = report.baselineBytes, let f = report.finalBytes {
            print(String(format: "memory: baseline %.1f MiB (after cycle %d), final %.1f MiB, growth %+.1f MiB", Double(b) / 1_048_576,
                         plan.warmupCycles, Double(f) / 1_048_576, Double(f - b) / 1_048_576))
        }
        print("drops counted by the node: " + report.drops.sorted { $0.key < $1.key }.map { "\($0.key)=\(Int($0.value))" }.joined(separator: " "))
        if let node {
            kill(node.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(10)
            while node.isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
            if node.isRunning {
                failures.append("the node did not stop within 10 s of SIGTERM")
                node.terminate()
            } else if node.terminationStatus != 0 {
                failures.append("the node exited with status \(node.terminationStatus) after SIGTERM")
            } else {
                print("node stopped cleanly on SIGTERM")
            }
        }
        for f in failures { print("FAIL \(f)") }
        print("soak: \(failures.isEmpty ? "passed" : "failed")")
        if !failures.isEmpty { throw ExitCode.failure }
    }

    /// Starts `sfu serve` on free loopback ports and waits until it answers.
    static func spawnNode(workers: Int) async throws -> (Process, URL) {
        let apiPort = try freePort()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        p.arguments = ["serve", "--set", "api.listen=127.0.0.1:\(apiPort)", "--set", "media.listen=127.0.0.1:0",
                       "--set", "workers=\(workers)", "--set", "log.level=warning"]
        try p.run()
        let base = URL(string: "http://127.0.0.1:\(apiPort)")!
        let api = ControlClient(base: base)
        for _ in 0..<100 {
            if (try? await api.call("GET", "healthz"))?.status == 200 { return (p, base) }
            try await Task.sleep(for: .milliseconds(100))
        }
        p.terminate()
        throw ValidationError("the node did not answer on \(base)")
    }

    /// A port nothing listens on now (UDP and TCP share the number space here only by convention).
    static func freePort() throws -> UInt16 {
        let s = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        return s.local.port
    }
}
