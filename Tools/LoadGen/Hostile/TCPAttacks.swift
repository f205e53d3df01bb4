import Foundation
import NodeIO
import SFU
import SFUMedia
import WebRTCEdge

/// Attacks on the ICE-TCP port (RFC 6544): connections that never speak, connections that connect and go at
/// once, garbage and oversized RFC 4571 frames. The port's caps and timeouts must hold, every refusal must be
/// counted, and clients over TCP must keep flowing and keep getting in.
enum TCPAttacks {
    /// 21. 300 silent connections (past the 64 a worker lets wait for a check: the oldest are closed), 1,000
    /// connect-and-close cycles, 20 connections of random bytes and 20 of 65,535-byte frames, while a
    /// subscriber over TCP listens to the victim and a new one joins over TCP in the middle of it.
    static let floods = Attack(number: 21, name: "ICE-TCP floods", allowedGrowthBytes: 4 << 20) { ctx in
        var o = AttackOutcome()
        let room = VictimPump.room
        func tcpSubscriber(_ who: String) async throws -> LoadClient {
            try await ctx.admit(room, who)
            var p = LoadClient.Profile.subscriber(audio: 1)
            p.overTCP = true
            let c = try LoadClient(certificate: ctx.certificate, profile: p)
            c.consentInterval = .milliseconds(1000)
            try await ctx.join(room, who, c, "subscribe")
            return c
        }
        let watch = try await tcpSubscriber("tcpwatch")
        guard try await ctx.connect([watch]), let port = watch.nodeAddress?.over(tcp: false) else {
            o.fail("a subscriber over TCP did not connect before the attack")
            await ctx.remove(room, "tcpwatch")
            return o
        }
        try await ctx.drive(seconds: 0.5, clients: [watch])
        let before = try await ctx.metrics()
        let heardBefore = watch.mediaPacketsReceived

        // Silent connections: connected, never a byte.
        var silent: [TCPStream] = []
        for _ in 0..<300 { if let s = try? TCPStream(connect: port) { silent.append(s) } }
        try await ctx.drive(seconds: 0.5, clients: [watch])
        // Connect and go at once.
        var cycles = 0
        for _ in 0..<1000 { if let s = try? TCPStream(connect: port) { s.close(); cycles += 1 } }
        // Garbage: random bytes, and frames that say 65,535 bytes.
        var rng = SplitMix64(seed: 0x7C9)
        var junk: [TCPStream] = []
        for i in 0..<40 {
            guard let s = try? TCPStream(connect: port) else { continue }
            let bytes = (0..<(64 * 1024)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if i % 2 == 0 { s.sendRaw(bytes) } else { s.sendRaw([0xFF, 0xFF] + bytes) }
            junk.append(s)
        }
        // A new client over TCP gets in while all that is open.
        let late = try await tcpSubscriber("tcplate")
        let lateIn = try await ctx.connect([watch, late], timeout: 5)
        try await ctx.drive(seconds: 2, clients: [watch, late])
        let heard = watch.mediaPacketsReceived - heardBefore
        let mid = try await ctx.metrics()
        // Past the unauthenticated timeout (5 s) every silent and junk connection is gone.
        try await ctx.drive(seconds: 5.5, clients: [watch, late])
        let after = try await ctx.metrics()

        let evicted = mid.sum("sfu_tcp_closed_total", label: "reason=\"unauthenticated_evicted\"")
            - before.sum("sfu_tcp_closed_total", label: "reason=\"unauthenticated_evicted\"")
        let timedOut = after.sum("sfu_tcp_closed_total", label: "reason=\"unauthenticated_timeout\"")
            - before.sum("sfu_tcp_closed_total", label: "reason=\"unauthenticated_timeout\"")
        let accepted = after.sum("sfu_tcp_accepted_total") - before.sum("sfu_tcp_accepted_total")
        let waitingMid = mid.sum("sfu_tcp_connections", label: "state=\"unauthenticated\"")
        let waitingAfter = after.sum("sfu_tcp_connections", label: "state=\"unauthenticated\"")
        let badFrames = after.drop("tcp_bad_frame") - before.drop("tcp_bad_frame")
        o.check(accepted >= 1300, "\(accepted) connections accepted", "only \(accepted) of \(silent.count + cycles + junk.count) connections were accepted")
        o.check(waitingMid <= 64, "at most 64 waiting for a check (\(waitingMid))", "\(waitingMid) connections waited for a check (cap 64)")
        o.check(evicted >= 250, "unauthenticated_evicted +\(evicted)", "only \(evicted) silent connections were closed to make room")
        o.check(timedOut > 0 && waitingAfter == 0, "unauthenticated_timeout +\(timedOut), none waiting after 5 s",
                "\(waitingAfter) connections still waited for a check after 5 s (\(timedOut) timed out)")
        o.check(badFrames > 0, "tcp_bad_frame +\(badFrames)", "no oversized frame was counted")
        o.check(heard > 80, "the TCP subscriber heard \(heard) packets through it", "the TCP subscriber heard only \(heard) packets in 2 s of floods")
        o.check(lateIn && late.mediaPacketsReceived > 50, "a TCP client joined during the floods and heard \(late.mediaPacketsReceived)",
                "a TCP client joining during the floods \(lateIn ? "heard only \(late.mediaPacketsReceived) packets" : "did not connect")")
        for s in silent + junk { s.close() }
        await ctx.remove(room, "tcpwatch")
        await ctx.remove(room, "tcplate")
        return o
    }
}

extension TCPAttacks {
    /// 22. A subscriber over TCP, checked and listening to the victim, resets its connection; another connection
    /// from the same IP and port, which never sends a check, must get nothing (RFC 6544: each connection is a
    /// candidate pair of its own), wait as unauthenticated and be closed at its timeout. The client then
    /// connects again from that port and checks: it hears the room again.
    static let adoption = Attack(number: 24, name: "ICE-TCP adoption after a reset") { ctx in
        var o = AttackOutcome()
        let room = VictimPump.room
        try await ctx.admit(room, "tcpadopt")
        var p = LoadClient.Profile.subscriber(audio: 1)
        p.overTCP = true
        let client = try LoadClient(certificate: ctx.certificate, profile: p)
        client.consentInterval = .milliseconds(1000)
        try await ctx.join(room, "tcpadopt", client, "subscribe")
        guard try await ctx.connect([client]), let old = client.stream else {
            o.fail("the subscriber over TCP did not connect")
            await ctx.remove(room, "tcpadopt")
            return o
        }
        try await ctx.drive(seconds: 0.5, clients: [client])
        let before = try await ctx.metrics()
        let node = old.remote.over(tcp: false), from = old.local.over(tcp: false)
        old.reset()
        let adopter = try TCPStream(connect: node, from: from)
        adopter.send([22, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 40))  // DTLS-looking, never a check
        // The client itself connects again at once, as a browser does, from a new port (its old one is the
        // adopter's now), and checks on the new connection: that one is its path. Waiting for the adopter's end
        // before reconnecting raced with the client's consent (6 s here; the adopter lasts 5 s and more).
        client.stream = try TCPStream(connect: node)
        let heard = client.mediaPacketsReceived
        let rx = ReceiveBatch(capacity: 64)
        var stolen = 0
        let start = MonoClock.now()
        var waitingMid = -1
        try await ctx.drive(seconds: 7, clients: [client]) { tick in
            stolen += adopter.receive(into: rx)
            if tick == 25 { waitingMid = try await ctx.metrics().sum("sfu_tcp_connections", label: "state=\"unauthenticated\"") }
            return !adopter.isClosed
        }
        let closedAfter = (MonoClock.now() - start).seconds
        let after = try await ctx.metrics()
        let timedOut = after.sum("sfu_tcp_closed_total", label: "reason=\"unauthenticated_timeout\"")
            - before.sum("sfu_tcp_closed_total", label: "reason=\"unauthenticated_timeout\"")
        o.check(stolen == 0, "the unchecked connection from the reset one's port got 0 frames",
                "the unchecked connection from the reset one's port got \(stolen) frames (the victim's audio for another client)")
        o.check(waitingMid >= 1, "it waited for a check (\(waitingMid) unauthenticated)", "it was counted as authenticated")
        o.check(adopter.isClosed && timedOut >= 1, String(format: "closed unchecked after %.1f s (unauthenticated_timeout +%d)", closedAfter, timedOut),
                "the unchecked connection was \(adopter.isClosed ? "closed" : "still open") after \(Int(closedAfter)) s (unauthenticated_timeout +\(timedOut))")
        adopter.reset()
        o.check(client.mediaPacketsReceived - heard >= 50, "the client's own checked reconnection (a new port) heard \(client.mediaPacketsReceived - heard) packets meanwhile",
                "the client's reconnection heard \(client.mediaPacketsReceived - heard) packets")
        await ctx.remove(room, "tcpadopt")
        return o
    }
}
