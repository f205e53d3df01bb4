import Foundation
import NodeIO
import SFU
import SFUClient

/// The hostile-client suite: starts a node of its own (one worker, small limits), puts a victim room on it
/// (a publisher talking, a subscriber listening), then runs each attack as real packets on real keyed
/// sessions. For every attack it checks that the node is still up, that the victim's audio never stopped
/// for more than `maxGapMs`, that the node's resident memory is back within the attack's allowance once
/// the attacker is cleaned up, and that the attack was counted where it should be (a drop reason, an API
/// refusal or an event).
public struct Hostile {
    public struct Plan: Sendable {
        public var limits = HostileLimits()
        /// The longest the victim's audio may stop during an attack.
        public var maxGapMs = 1000
        /// Attack numbers to run; all when empty.
        public var only: Set<Int> = []
        public init() {}
    }

    public struct Row: Sendable {
        public var number: Int
        public var attack: String
        public var nodeUp: Bool
        public var maxGapMs: Int
        public var victimPackets: Int
        public var rssBefore: Int
        public var rssAfter: Int
        public var counted: [String]
        public var failures: [String]
        public var seconds: Double
        public var passed: Bool { failures.isEmpty }
    }

    public struct Report: Sendable {
        public var rows: [Row] = []
        public var failures: [String] = []
        public var passed: Bool { failures.isEmpty && rows.allSatisfy(\.passed) }
    }

    static let attacks: [Attack] = [
        SessionAttacks.resubscribe, SessionAttacks.reofferStorm, SessionAttacks.vanished,
        HandshakeAttacks.neverFinishing, ICEAttacks.replayedNomination, FeedbackAttacks.nackAmplification,
        SSRCAttacks.everNewSSRCs, FeedbackAttacks.transportCC, ICEAttacks.stunFlood, HandshakeAttacks.malformedDTLS,
        SSRCAttacks.collision, FeedbackAttacks.foreignRTCP, APIAttacks.capsAndNames, APIAttacks.floodFairness,
        APIAttacks.eventsSince, APIAttacks.rebindingHost, RenegotiationAttacks.afterWrap, RenegotiationAttacks.slotReoffer,
        RenegotiationAttacks.ridSSRCChange, RenegotiationAttacks.highExtensionIDs, TCPAttacks.floods, AwaitedAttacks.awaitedFloor,
        StreamingAttacks.urls, TCPAttacks.adoption, FloodAttacks.srtcpSSRCFlood,
    ]

    public let plan: Plan

    public init(plan: Plan) { self.plan = plan }

    /// Runs the suite; `progress` gets a line per step and each finished row.
    public func run(progress: @escaping (String) -> Void) async throws -> Report {
        var report = Report()
        // The one RTMP server the node may push to (a listener that hangs up: attack 23), and the node's log, which
        // the attacks read for what must never be in it.
        let sink = try TCPSink()
        defer { sink.close() }
        let log = NSTemporaryDirectory() + "sfu-hostile-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let node = try await NodeProcess(workers: 1, extra: plan.limits.serveOptions + ["--set", "streaming.rtmp_hosts=[\"127.0.0.1:\(sink.port)\"]"],
                                         log: log)
        let events = EventRecorder(api: node.api.base)
        progress("node \(node.pid) on \(node.api.base) with \(plan.limits.serveOptions.filter { $0 != "--set" }.joined(separator: " "))")
        let media = MediaLibrary(videoKbps: 1000, fps: 15, width: 640, height: 360, videoSeconds: 2)
        var victim: VictimPump?
        defer { victim?.stop(); events.stop() }
        do {
            try await waitForEvents(events, api: node.api)
            let v = try await VictimPump.make(api: node.api, media: media)
            victim = v
            try await v.start()
            progress("victim connected: audio on slot mid \(v.victimSlot?.mid ?? "?")")
            let ctx = try HostileContext(node: node, limits: plan.limits, media: media, events: events, victim: v)
            ctx.streamSink = sink
            ctx.nodeLog = log
            try await ctx.drive(seconds: 1, clients: [])  // the allocator's first working set, before any baseline
            for attack in Self.attacks where plan.only.isEmpty || plan.only.contains(attack.number) {
                let row = await run(attack, ctx: ctx)
                report.rows.append(row)
                progress(Self.line(row))
                if !row.nodeUp {
                    report.failures.append("the node is down after attack \(attack.number); the rest were not run")
                    break
                }
            }
        } catch {
            report.failures.append("set-up: \(error)")
        }
        if let problem = await node.stop() { report.failures.append("the node \(problem)") }
        if !report.passed, let text = try? String(contentsOfFile: log, encoding: .utf8) {
            progress("the node's log, its last lines:\n" + text.split(separator: "\n").suffix(20).joined(separator: "\n"))
        }
        return report
    }

    /// One attack between two measurements; the rooms and victim-room guests it left are removed before the
    /// memory is read again.
    private func run(_ attack: Attack, ctx: HostileContext) async -> Row {
        let rssBefore = ctx.residentBytes ?? 0
        let start = MonoClock.now()
        var outcome: AttackOutcome
        do {
            outcome = try await attack.run(ctx)
        } catch {
            outcome = AttackOutcome()
            outcome.fail("the attack stopped: \(error)")
        }
        for room in ctx.createdRooms { await ctx.deleteRoom(room) }
        for guest in ctx.victimGuests { await ctx.remove(VictimPump.room, guest) }
        let end = MonoClock.now()
        try? await Task.sleep(for: .milliseconds(700))
        let (gap, packets) = ctx.victim.maxGap(from: start, to: end)
        let health = try? await ctx.api.call("GET", "healthz")
        let up = ctx.node.process.isRunning && health?.status == 200
        let rssAfter = ctx.residentBytes ?? 0
        var failures = outcome.failures
        if !up { failures.append("the node is down (healthz \(health.map { String($0.status) } ?? "no answer"))") }
        if gap > plan.maxGapMs { failures.append("the victim's audio stopped for \(gap) ms") }
        if rssAfter - rssBefore > attack.allowedGrowthBytes {
            failures.append("resident memory grew \((rssAfter - rssBefore) >> 10) KiB (allowed \(attack.allowedGrowthBytes >> 10) KiB)")
        }
        return Row(number: attack.number, attack: attack.name, nodeUp: up, maxGapMs: gap, victimPackets: packets, rssBefore: rssBefore,
                   rssAfter: rssAfter, counted: outcome.counted, failures: failures,
                   seconds: (end - start).seconds)
    }

    /// The events WebSocket is connected when the node counts a consumer.
    private func waitForEvents(_ events: EventRecorder, api: ControlClient) async throws {
        for _ in 0..<100 {
            if let text = try? await api.metrics(), MetricsText.sum(text, "sfu_event_consumers") >= 1 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw LoadError("the events WebSocket did not connect")
    }

    static func line(_ r: Row) -> String {
        String(format: "%2d %-30@ %@ gap %4d ms  RSS %7d -> %7d KiB  %4.1f s  %@", r.number, r.attack as NSString,
               r.passed ? "pass" : "FAIL", r.maxGapMs, r.rssBefore >> 10, r.rssAfter >> 10, r.seconds,
               (r.failures.isEmpty ? "" : r.failures.joined(separator: "; ")) as NSString)
    }

    /// The report as a table: attack, node up, victim's longest gap, memory, what was counted.
    public static func table(_ report: Report) -> String {
        var lines = ["| # | attack | node up | victim max gap ms | RSS before/after KiB | counted | result |", "|---|---|---|---|---|---|---|"]
        for r in report.rows {
            let counted = r.counted.joined(separator: "; ").replacingOccurrences(of: "|", with: "/")
            let result = r.passed ? "pass" : "FAIL: " + r.failures.joined(separator: "; ").replacingOccurrences(of: "|", with: "/")
            lines.append("| \(r.number) | \(r.attack) | \(r.nodeUp ? "yes" : "NO") | \(r.maxGapMs) | \(r.rssBefore >> 10) / \(r.rssAfter >> 10) | \(counted) | \(result) |")
        }
        return lines.joined(separator: "\n")
    }
}
