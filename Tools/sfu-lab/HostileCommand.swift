import ArgumentParser
import Foundation
import LoadGen

/// Runs the hostile-client suite against a node it starts, and fails when the node crashed, the victim's
/// audio stopped, memory stayed up, or an attack went uncounted.
struct HostileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hostile",
        abstract: "Attack a node with hostile WebRTC clients while a victim room talks; check it stays up, fair and counted.",
        discussion: """
            Starts `sfu serve` (this binary) with one worker and small limits, connects a victim publisher and \
            subscriber, then runs each attack (stale RTCP after re-subscribing, offer storms, vanished clients, \
            stalled handshakes, replayed nominations, NACK amplification, ever-new SSRCs, oversized transport-cc, \
            STUN floods, malformed DTLS, SSRC collisions, foreign RTCP, API caps and names, a garbage flood, \
            events resumed from unknown points, rebinding Host headers, renegotiations after a sequence wrap, \
            a slot re-offered after source switches, rid-bound layers changing SSRC, extension ids above 14, \
            ICE-TCP floods, a new TCP connection from a reset one's address, a subscriber's SRTCP flood) \
            with real packets on keyed sessions. Prints a table and exits non-zero on any failure.
            """
    )

    @Option(help: "Run only these attacks (numbers, comma-separated).") var only: String?
    @Option(help: "Longest victim audio gap allowed, ms.") var maxGapMs = 1000

    func run() async throws {
        var plan = Hostile.Plan()
        plan.maxGapMs = maxGapMs
        plan.only = Set((only ?? "").split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) })
        let started = Date()
        let report = try await Hostile(plan: plan).run { print($0) }
        print("")
        print(Hostile.table(report))
        for f in report.failures { print("FAIL \(f)") }
        let failed = report.rows.filter { !$0.passed }.map(\.number)
        print(String(format: "hostile: %@ (%d attacks, %d failed%@) in %.0f s", report.passed ? "passed" : "failed", report.rows.count, failed.count,
                     failed.isEmpty ? "" : ": " + failed.map(String.init).joined(separator: ", "), Date().timeIntervalSince(started)))
        if !report.passed { throw ExitCode.failure }
    }
}
