import Foundation
import NodeIO
import SFU
import SFUClient
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// Attacks on transport set-up: handshakes that never finish, and DTLS garbage in the middle of one.
enum HandshakeAttacks {
    /// 4. Offers whose clients never send a check, and clients that pass ICE and stop after their
    /// ClientHello: the worker holds at most `limits.pending_handshakes` (409/6006 past it) and closes each
    /// after `limits.handshake_seconds`, saying why; then a new client connects again.
    static let neverFinishing = Attack(number: 4, name: "never-finishing handshakes") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("stall")
        let participants = (ctx.limits.pendingHandshakes + 2) / 2 + 1
        for i in 0..<participants { try await ctx.admit(room, "s\(i)", moderator: i == 0) }
        let since = ctx.events.count
        let before = try await ctx.metrics()
        var accepted: [(who: String, client: LoadClient, silent: Bool)] = []
        var refusal: ControlClient.Reply?
        offers: for i in 0..<participants {
            for direction in ["publish", "subscribe"] {
                let c = try direction == "publish" ? ctx.publisher() : ctx.subscriber(audio: 1)
                let r = try await ctx.offer(room, "s\(i)", c, direction)
                guard r.status == 200, let sdp = r.json["sdp"] as? String else { refusal = r; break offers }
                let silent = accepted.count % 2 == 0
                if !silent {
                    c.stallDTLS = true
                    try c.start(answer: sdp, now: MonoClock.now())
                }
                accepted.append(("s\(i)", c, silent))
            }
        }
        o.check(refusal?.status == 409 && refusal?.result == 6006 && accepted.count <= ctx.limits.pendingHandshakes,
                "\(accepted.count) pending, next 409/6006",
                "after \(accepted.count) pending handshakes the next offer got \(refusal.map { "\($0.status)/\($0.result ?? -1)" } ?? "no refusal")")
        // Removing a participant frees its pending handshakes at once.
        let pendingFull = try await ctx.metrics().sum("sfu_pending_handshakes")
        await ctx.remove(room, "s0")
        let pendingAfter = try await ctx.metrics().sum("sfu_pending_handshakes")
        let freed = accepted.filter { $0.who == "s0" }.count
        o.check(pendingAfter == pendingFull - freed, "removing s0 frees \(freed): pending \(pendingFull) -> \(pendingAfter)",
                "removing a participant with \(freed) pending handshakes took pending \(pendingFull) -> \(pendingAfter)")
        let late = try ctx.subscriber(audio: 1)
        let again = try await ctx.offer(room, "s\(participants - 1)", late, "subscribe")
        o.check(again.status == 200, "then an offer is accepted", "with \(pendingAfter) pending an offer got \(again.status)/\(again.result ?? -1)")
        accepted.removeAll { $0.who == "s0" }
        if again.status == 200 { accepted.append(("s\(participants - 1)", late, true)) }
        // The stalled clients keep ICE alive (so the reason is DTLS), the silent ones say nothing.
        let stalled = accepted.filter { !$0.silent }.map(\.client)
        try await ctx.drive(seconds: Double(ctx.limits.handshakeSeconds) + 2, clients: stalled)
        let seconds = ctx.limits.handshakeSeconds
        for a in accepted {
            let reasons = ctx.events.disconnections(since: since, room: room, participant: a.who)
            let expected = a.silent ? "no ICE connectivity check within \(seconds) s" : "DTLS did not complete within \(seconds) s"
            if !reasons.contains(expected) { o.fail("\(a.who) (\(a.silent ? "silent" : "stalled")): no '\(expected)' event (saw \(reasons))") }
        }
        let timeouts = ctx.events.find(since: since) { $0.type == "participant_state" && $0.room == room && ($0["reason"] as? String ?? "").contains("within \(seconds) s") }
        let after = try await ctx.metrics()
        let counted = after.sum("sfu_transport_events_total", label: "event=\"handshake_timeout\"") - before.sum("sfu_transport_events_total", label: "event=\"handshake_timeout\"")
        let refused = after.sum("sfu_limit_refusals_total", label: "limit=\"pending_handshakes\"") - before.sum("sfu_limit_refusals_total", label: "limit=\"pending_handshakes\"")
        o.check(timeouts.count == accepted.count && counted == accepted.count && refused == 1,
                "handshake_timeout +\(counted) (events x\(timeouts.count)), refusals{pending_handshakes} +\(refused)",
                "\(accepted.count) stalled: handshake_timeout +\(counted), events x\(timeouts.count), refusals{pending_handshakes} +\(refused)")
        // The slots are free again: a well-behaved client connects.
        let fresh = try ctx.publisher()
        let r = try await ctx.offer(room, "s\(participants - 1)", fresh, "publish")
        if let sdp = r.json["sdp"] as? String {
            try fresh.start(answer: sdp, now: MonoClock.now())
            let connected = try await ctx.connect([fresh])
            o.check(connected, "a new client connects after", "a client could not connect after the stalled handshakes were closed")
        } else {
            o.fail("after the timeouts an offer was refused: \(r.status)/\(r.result ?? -1) \(r.json["msg"] ?? "")")
        }
        await ctx.deleteRoom(room)
        return o
    }

    /// 10. Clients that pass ICE, send their ClientHello, then garbage DTLS-looking records (random
    /// handshakes, lying lengths, alerts, change-cipher-spec, epoch-1 data): the node stays up, each such
    /// transport ends (DTLS failure or handshake timeout, with its reason), and a new client connects after.
    static let malformedDTLS = Attack(number: 10, name: "malformed DTLS mid-handshake") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("dtls")
        let kinds = 4
        for i in 0..<kinds { try await ctx.admit(room, "d\(i)", moderator: i == 0) }
        let since = ctx.events.count
        var clients: [LoadClient] = []
        for i in 0..<kinds {
            let c = try ctx.publisher()
            c.stallDTLS = true
            try await ctx.join(room, "d\(i)", c, "publish")
            clients.append(c)
        }
        let before = try await ctx.metrics()
        var rng = SplitMix64(seed: 0xD715)
        var sent = 0
        try await ctx.drive(seconds: 1.5, clients: clients) { _ in
            for (i, c) in clients.enumerated() where c.state == .handshaking {
                for _ in 0..<4 {
                    c.sendRaw(Self.garbageRecord(kind: i, &rng))
                    sent += 1
                }
            }
            return true
        }
        try await ctx.drive(seconds: Double(ctx.limits.handshakeSeconds) + 1, clients: clients)
        let after = try await ctx.metrics()
        var ended = 0
        for i in 0..<kinds {
            let reasons = ctx.events.disconnections(since: since, room: room, participant: "d\(i)")
            if reasons.contains(where: { $0.contains("DTLS") }) { ended += 1 } else { o.fail("d\(i): transport not closed with a DTLS reason (saw \(reasons))") }
        }
        let failed = after.sum("sfu_dtls_handshakes_total", label: "result=\"failed\"") - before.sum("sfu_dtls_handshakes_total", label: "result=\"failed\"")
        o.counted.append("\(sent) garbage records, \(ended)/\(kinds) closed with a DTLS reason, dtls failed +\(failed)")
        let reasons = Set((0..<kinds).flatMap { ctx.events.disconnections(since: since, room: room, participant: "d\($0)") })
        o.counted.append(reasons.sorted().joined(separator: "; "))
        // Afterwards a well-behaved client connects.
        let fresh = try ctx.publisher()
        try await ctx.join(room, "d0", fresh, "publish")
        let connected = try await ctx.connect([fresh])
        o.check(connected, "a new client connects after", "a client could not connect after the garbage")
        await ctx.deleteRoom(room)
        return o
    }

    /// DTLS-looking records (content type, version DTLS 1.2, epoch, sequence, length) with bodies that are
    /// nonsense in different ways.
    static func garbageRecord(kind: Int, _ rng: inout SplitMix64) -> [UInt8] {
        func random(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        func record(_ type: UInt8, epoch: UInt16, length: Int, body: [UInt8]) -> [UInt8] {
            var r: [UInt8] = [type, 0xFE, 0xFD, UInt8(epoch >> 8), UInt8(epoch & 0xFF)]
            r += random(6)  // sequence number
            r += [UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
            return r + body
        }
        switch kind {
        case 0:
            // A handshake record whose message claims a ClientHello of absurd length, fragmented oddly.
            let body: [UInt8] = [0x01, 0xFF, 0xFF, 0xFF, 0x00, 0x01, 0x00, 0xFF, 0xF0, 0x00, 0x00, 0x10] + random(40)
            return record(0x16, epoch: 0, length: body.count, body: body)
        case 1:
            // A record length longer than the datagram, then a second record glued on.
            let body = random(30)
            return record(0x16, epoch: 0, length: 4000, body: body) + record(0x15, epoch: 0, length: 2, body: [0x02, 0x28])
        case 2:
            // Change-cipher-spec and epoch-1 application data before any keys exist.
            return record(0x14, epoch: 0, length: 1, body: [0x01]) + record(0x17, epoch: 1, length: 48, body: random(48))
        default:
            // Random handshake messages of every type.
            let type = UInt8(truncatingIfNeeded: rng.next() % 25)
            let n = Int(rng.next() % 200) + 12
            var body = [type] + random(n - 1)
            body[1] = 0; body[2] = UInt8(n >> 8); body[3] = UInt8(n & 0xFF)
            return record(0x16, epoch: 0, length: body.count, body: body)
        }
    }
}
