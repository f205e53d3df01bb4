import Foundation
import NodeIO
import SFUClient
import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// A soak of a running node: rooms of simulated clients join (ICE, DTLS, SRTP), talk in turns, receive their
/// talker slots and leave, cycle after cycle, with garbage datagrams mixed in from unknown addresses and from
/// connected clients. While they talk, each cycle also changes sessions the ways clients do (one way per
/// room, rotating): a subscriber renegotiates its slot count on the same transport, a participant restarts
/// ICE on both transports (new credentials; it must check again with them and keep receiving), a
/// subscriber starts over with a new fingerprint (its transport replaced, the old one closed), and a
/// participant vanishes without a goodbye (the node must let its consent expire). The node must stay up,
/// every cycle's clients must connect and hear each other, each change must take effect, the garbage must
/// be counted as drops, and the node's resident memory after the last cycle must be back near its level
/// after the first ones (a leak grows with the cycles; the allocator's working set does not).
public struct Soak {
    public struct Plan: Sendable {
        public var rooms = 4
        public var participantsPerRoom = 4
        public var audioSlots = 2
        public var cycles = 12
        public var talkSeconds = 4.0
        public var garbagePerSecond = 200
        /// Allowed growth of resident memory from the baseline (after the warm-up cycles) to the end.
        public var allowedGrowthBytes = 4 << 20
        public var warmupCycles = 3
        /// The node's `ice.consent_seconds` when known (the soak started it): vanished clients must then be
        /// reported as expired within the cycle.
        public var consentSeconds: Int?
        /// Change sessions while talking (renegotiate, restart ICE, replace, vanish).
        public var sessionChanges = true
        public init() {}
    }

    /// The change a room's chosen participant makes in a cycle.
    public enum SessionChange: String, CaseIterable, Sendable {
        case renegotiate = "renegotiated", restartICE = "ICE restarted", replace = "replaced", vanish = "vanished"
    }

    public struct Cycle: Sendable {
        public var index: Int
        public var connected: Int
        public var expected: Int
        public var subscriberPackets: Int
        public var garbageSent: Int
        public var residentBytes: Int?
        public var teardown: String
        /// Session changes made and how many took effect (answered as such, and the client still receives).
        public var changes: [SessionChange: (made: Int, ok: Int)] = [:]
        public var changeFailures: [String] = []
    }

    public struct Report: Sendable {
        public var cycles: [Cycle] = []
        public var baselineBytes: Int?
        public var finalBytes: Int?
        public var drops: [String: Double] = [:]
        public var nodeAlive = false
        public var failures: [String] = []
        public var passed: Bool { failures.isEmpty }
    }

    public let plan: Plan
    public let api: ControlClient
    public let nodePID: Int32?
    let certificate: DTLSCertificate
    /// What a client that starts over presents (a new fingerprint: its transport is replaced).
    let replacementCertificate: DTLSCertificate
    let speech: [[UInt8]]
    let quiet: [[UInt8]]
    var rng = SplitMix64(seed: 0x50A4)

    public init(plan: Plan, api: ControlClient, nodePID: Int32?) throws {
        self.plan = plan
        self.api = api
        self.nodePID = nodePID
        certificate = try DTLSCertificate(commonName: "soak")
        replacementCertificate = try DTLSCertificate(commonName: "soak-restarted")
        let encoder = OpusFrameEncoder()
        speech = encoder.encodeAll(TestSignal.sine(frequency: 220, dbfs: -18, seconds: 1))
        quiet = OpusFrameEncoder().encodeAll(TestSignal.noise(dbfs: -65, seconds: 1))
    }

    public mutating func run(progress: (String) -> Void) async throws -> Report {
        var report = Report()
        for c in 0..<plan.cycles {
            let cycle = try await runCycle(c)
            report.cycles.append(cycle)
            let changes = SessionChange.allCases.compactMap { k in cycle.changes[k].map { "\($0.ok)/\($0.made) \(k.rawValue)" } }
            progress(String(format: "cycle %2d: %d/%d connected, subscribers got %d packets, %d garbage datagrams, %@%@ -> RSS %@",
                            c + 1, cycle.connected, cycle.expected, cycle.subscriberPackets, cycle.garbageSent,
                            changes.isEmpty ? "" : changes.joined(separator: ", ") + ", ", cycle.teardown,
                            cycle.residentBytes.map { String(format: "%.1f MiB", Double($0) / 1_048_576) } ?? "?"))
            if cycle.connected < cycle.expected { report.failures.append("cycle \(c + 1): \(cycle.connected) of \(cycle.expected) clients connected") }
            if cycle.subscriberPackets == 0 { report.failures.append("cycle \(c + 1): no subscriber received audio") }
            report.failures += cycle.changeFailures.map { "cycle \(c + 1): \($0)" }
        }
        let idle = report.cycles.compactMap(\.residentBytes)
        if idle.count > plan.warmupCycles {
            report.baselineBytes = idle[plan.warmupCycles - 1]
            report.finalBytes = idle.last
            if let b = report.baselineBytes, let f = report.finalBytes, f - b > plan.allowedGrowthBytes {
                report.failures.append("resident memory grew \((f - b) >> 10) KiB from the baseline (allowed \(plan.allowedGrowthBytes >> 10) KiB)")
            }
        }
        let health = try? await api.call("GET", "healthz")
        report.nodeAlive = health?.status == 200
        if !report.nodeAlive { report.failures.append("the node does not answer /healthz") }
        if let text = try? await api.metrics() { report.drops = MetricsText.drops(text) }
        let garbage = report.cycles.reduce(0) { $0 + $1.garbageSent }
        let counted = report.drops.values.reduce(0, +)
        // Garbage that OpenSSL discards inside a connected DTLS association is not counted; the rest must be.
        if garbage > 0, counted < Double(garbage) * 0.75 {
            report.failures.append("only \(Int(counted)) drops counted for \(garbage) garbage datagrams")
        }
        return report
    }

    mutating func runCycle(_ c: Int) async throws -> Cycle {
        var publishers: [[LoadClient]] = []
        var subscribers: [[LoadClient]] = []
        let start = MonoClock.now()
        for r in 0..<plan.rooms {
            let room = "soak-\(c)-\(r)"
            try await api.require("POST", "v1/rooms", ["room": room, "max_active_talkers": plan.audioSlots])
            var pubs: [LoadClient] = [], subs: [LoadClient] = []
            for p in 0..<plan.participantsPerRoom {
                let who = "p\(p)"
                try await api.require("POST", "v1/rooms/\(room)/participants", ["participant": who, "role": p == 0 ? "moderator" : "participant"])
                let pub = try LoadClient(certificate: certificate, publishes: true)
                pub.consentInterval = checkInterval
                let a = try await api.require("POST", "v1/rooms/\(room)/participants/\(who)/publish", ["sdp": pub.offer()])
                try pub.start(answer: a.json["sdp"] as? String ?? "", now: MonoClock.now())
                let sub = try LoadClient(certificate: certificate, publishes: false, audioSlots: plan.audioSlots)
                sub.consentInterval = checkInterval
                let b = try await api.require("POST", "v1/rooms/\(room)/participants/\(who)/subscribe", ["sdp": sub.offer()])
                try sub.start(answer: b.json["sdp"] as? String ?? "", now: MonoClock.now())
                pubs.append(pub)
                subs.append(sub)
            }
            publishers.append(pubs)
            subscribers.append(subs)
        }
        let all = publishers.flatMap { $0 } + subscribers.flatMap { $0 }
        // Connect: everyone polls until connected (or 10 s pass).
        while all.contains(where: { $0.state != .connected && !Self.isFailed($0.state) }), MonoClock.now() - start < .seconds(10) {
            for client in all { client.poll(now: MonoClock.now()) }
            try await Task.sleep(for: .milliseconds(5))
        }
        let connected = all.filter { $0.state == .connected }.count
        var changes = SessionChanges(cycle: c, rooms: plan.rooms, participants: plan.participantsPerRoom, enabled: plan.sessionChanges)
        let expiredBefore = plan.consentSeconds == nil ? 0 : await transportEvents("consent_expired")
        // Vanishing first, so that consent has expired before the cycle ends.
        changes.vanish(publishers: publishers, subscribers: subscribers)

        // Talk in turns for talkSeconds, 20 ms frames, garbage mixed in.
        let stranger = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let mediaTargets = Set(all.compactMap(\.node))
        var garbage = 0
        let frames = Int(plan.talkSeconds * 50)
        var next = MonoClock.now()
        var replacements: [LoadClient] = []
        var lastSecond: [ObjectIdentifier: Int] = [:]
        for f in 0..<frames {
            if f == frames / 4 {
                replacements = try await changes.apply(self, publishers: publishers, subscribers: subscribers)
            }
            if f == frames - 50 {
                for client in all + replacements { lastSecond[ObjectIdentifier(client)] = client.mediaPacketsReceived }
            }
            let turn = f / 100
            for (r, pubs) in publishers.enumerated() {
                for (p, client) in pubs.enumerated() {
                    let talking = (turn + r) % pubs.count == p
                    client.sendAudio((talking ? speech : quiet)[f % 50], level: talking ? 18 : 90)
                }
            }
            for client in all + replacements { client.poll(now: MonoClock.now()) }
            for _ in 0..<(plan.garbagePerSecond / 50) {
                let bytes = Self.garbage(&rng)
                if rng.next() % 2 == 0, let target = mediaTargets.randomElement(using: &rng) {
                    stranger.send(bytes, to: target)
                } else {
                    all.randomElement(using: &rng)?.sendRaw(bytes)
                }
                garbage += 1
            }
            next = next + .milliseconds(20)
            let wait = (next - MonoClock.now()).milliseconds
            if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
        }
        let heard = (subscribers.flatMap { $0 } + replacements).reduce(0) { $0 + $1.mediaPacketsReceived }
        changes.verify(receivedSince: { c in c.mediaPacketsReceived - (lastSecond[ObjectIdentifier(c)] ?? c.mediaPacketsReceived) })
        if let consent = plan.consentSeconds, changes.vanishedTransports > 0 {
            // Consent lapses `consent` seconds after a vanished client's last check; the node looks once a second.
            let deadline = MonoClock.now() + .seconds(Double(consent) + 2)
            var expired = await transportEvents("consent_expired") - expiredBefore
            while expired < changes.vanishedTransports, MonoClock.now() < deadline {
                try await Task.sleep(for: .milliseconds(200))
                expired = await transportEvents("consent_expired") - expiredBefore
            }
            changes.record(.vanish, ok: min(expired, changes.vanishedTransports) / 2)
            if expired < changes.vanishedTransports {
                changes.failures.append("\(changes.vanishedTransports) transports vanished, \(expired) reported consent_expired")
            }
        }

        // Leave: one way per cycle, in turn - every participant deleted then the room; the room destroyed with
        // everyone in it; clients that just vanish (no goodbye) before the room is destroyed.
        let teardown = ["participants deleted", "rooms destroyed", "clients vanished"][c % 3]
        for r in 0..<plan.rooms {
            let room = "soak-\(c)-\(r)"
            if c % 3 == 0 {
                for p in 0..<plan.participantsPerRoom { try await api.require("DELETE", "v1/rooms/\(room)/participants/p\(p)", [:]) }
            }
            try await api.require("DELETE", "v1/rooms/\(room)")
        }
        if c % 3 != 2 {
            // Clients that were told (close_notify) see it.
            let until = MonoClock.now() + .seconds(1)
            while MonoClock.now() < until {
                for client in all + replacements { client.poll(now: MonoClock.now()) }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        return Cycle(index: c, connected: connected, expected: all.count, subscriberPackets: heard,
                     garbageSent: garbage, residentBytes: nodePID.flatMap(ProcessProbe.residentBytes(pid:)), teardown: teardown,
                     changes: changes.results, changeFailures: changes.failures)
    }

    /// Clients check every 2.5 s as browsers do, or more often when the node's consent lifetime is short.
    var checkInterval: MonoTime.Interval {
        guard let consent = plan.consentSeconds, consent < 10 else { return .milliseconds(2500) }
        return .milliseconds(Int64(consent) * 1000 / 6)
    }

    /// A node-wide `sfu_transport_events_total{event}` total.
    func transportEvents(_ event: String) async -> Int {
        guard let text = try? await api.metrics() else { return 0 }
        return Int(MetricsText.sum(text, "sfu_transport_events_total", label: "event=\"\(event)\""))
    }

    static func isFailed(_ s: LoadClient.State) -> Bool {
        if case .failed = s { return true }
        return false
    }

    /// One bad datagram: random bytes, RTP- or RTCP-looking junk, truncated headers, STUN with a bad
    /// integrity, DTLS-looking records, oversized.
    static func garbage(_ rng: inout SplitMix64) -> [UInt8] {
        func random(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        switch rng.next() % 7 {
        case 0: return random(Int(rng.next() % 1200) + 1)
        case 1: return [0x80, 0x6F] + random(Int(rng.next() % 300) + 10)  // RTP-looking: fails SRTP authentication
        case 2: return [0x80, 0xC8] + random(Int(rng.next() % 100) + 6)  // RTCP-looking
        case 3: return Array([0x90, 0x6F, 0x00][0..<Int(rng.next() % 3 + 1)])  // truncated
        case 4: return [0x00, 0x01, 0x00, 0x08, 0x21, 0x12, 0xA4, 0x42] + random(20)  // STUN request, nonsense
        case 5: return [0x16, 0xFE, 0xFD] + random(Int(rng.next() % 200) + 10)  // DTLS-looking
        default: return random(1800)  // larger than the MTU
        }
    }
}
