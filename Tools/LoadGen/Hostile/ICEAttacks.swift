import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// Attacks on ICE: a captured nomination replayed from elsewhere, and floods of checks that do not
/// authenticate.
enum ICEAttacks {
    /// 5. A client's valid nominating check, captured and replayed from other sockets: the downlink must not
    /// move (the client keeps receiving, the replaying sockets get nothing) and the edge counts `stun_replay`.
    static let replayedNomination = Attack(number: 5, name: "replayed USE-CANDIDATE") { ctx in
        var o = AttackOutcome()
        let room = VictimPump.room
        try await ctx.admit(room, "watch")
        let sub = try ctx.subscriber(audio: 1)
        try await ctx.join(room, "watch", sub, "subscribe")
        guard try await ctx.connect([sub]) else { o.fail("the watcher did not connect"); await ctx.remove(room, "watch"); return o }
        try await ctx.drive(seconds: 0.5, clients: [sub])
        // Capture a check the node has answered (the transaction is now remembered with its source).
        guard let captured = sub.lastAnsweredCheck, let node = sub.nodeAddress else { o.fail("no check was captured"); return o }
        let before = try await ctx.metrics()
        let replayers = try (0..<3).map { _ in try UDPSocket(bind: TransportAddress("127.0.0.1:0")!) }
        let replays = 30
        for i in 0..<replays { replayers[i % replayers.count].send(captured, to: node) }
        let received = sub.mediaPacketsReceived
        let batch = ReceiveBatch(capacity: 64)
        var stolen = 0
        try await ctx.drive(seconds: 2, clients: [sub]) { _ in
            for r in replayers { while let n = try? r.receive(into: batch), n > 0 { stolen += n } }
            return true
        }
        let after = try await ctx.metrics()
        let replayDrops = after.drop("stun_replay") - before.drop("stun_replay")
        o.check(replayDrops >= replays, "stun_replay +\(replayDrops)", "only \(replayDrops) of \(replays) replays counted as stun_replay")
        o.check(stolen == 0, "replay sockets got 0 datagrams", "the replaying sockets received \(stolen) datagrams")
        let got = sub.mediaPacketsReceived - received
        o.check(got > 80, "real client kept \(got) packets in 2 s", "the real client received only \(got) packets in the 2 s after the replay")
        await ctx.remove(room, "watch")
        return o
    }

    /// 9. Floods of Binding requests at a high, steady rate from one socket: the victim subscriber's username with a
    /// wrong integrity key, and unknown usernames. Counted (`stun_unauthenticated`,
    /// `stun_unknown_username`); the victim keeps flowing.
    static let stunFlood = Attack(number: 9, name: "STUN floods") { ctx in
        var o = AttackOutcome()
        guard let node = ctx.victim.subscriber.nodeAddress else { o.fail("no victim address"); return o }
        let ice = ctx.victim.subscriberICE
        let attacker = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let wrongKey = ICEControllingClient(local: ice.client, remote: ICECredentials(ufrag: ice.node.ufrag, password: "not-the-password-at-all"))
        let bad: [[UInt8]] = (0..<64).map { _ in wrongKey.bindingRequest(nominate: true) }
        let unknown: [[UInt8]] = (0..<64).map { _ in
            ICEControllingClient(local: .random(), remote: .random()).bindingRequest(nominate: true)
        }
        let before = try await ctx.metrics()
        let kernelBefore = KernelUDPDrops.count(port: node.port)
        var sentBad = 0, sentUnknown = 0
        func burst(_ n: Int) {
            for i in 0..<n {
                if i % 2 == 0 { if attacker.send(bad[i % 64], to: node) { sentBad += 1 } } else if attacker.send(unknown[i % 64], to: node) { sentUnknown += 1 }
            }
        }
        // A steady 40,000 checks a second for three seconds: far beyond any client (browsers check every few
        // seconds), within what a worker reads even in a debug build, so the kernel does not drop the
        // victim's packets at random with the flood's (attack 14 floods past that).
        let start = MonoClock.now()
        var next = start
        while MonoClock.now() - start < .seconds(3) {
            burst(40)
            next = next + .milliseconds(1)
            let wait = next - MonoClock.now()
            if wait.nanoseconds > 0 { try await Task.sleep(for: .nanoseconds(wait.nanoseconds)) }
        }
        let seconds = (MonoClock.now() - start).seconds
        try await ctx.sleep(0.5)
        let after = try await ctx.metrics()
        let kernel = KernelUDPDrops.count(port: node.port) - kernelBefore
        let unauth = after.drop("stun_unauthenticated") - before.drop("stun_unauthenticated")
        let unknownCounted = after.drop("stun_unknown_username") - before.drop("stun_unknown_username")
        let sent = sentBad + sentUnknown
        let busy = after.sumDouble("sfu_worker_busy_seconds_total") - before.sumDouble("sfu_worker_busy_seconds_total")
        o.counted.append(String(format: "%d checks in %.1f s, kernel dropped %d, worker busy %.0f %%", sent, seconds, kernel, busy / seconds * 100))
        // What the kernel dropped at the node's full socket never reached it; the rest must be counted.
        o.check(unauth > 0 && unknownCounted > 0 && unauth + unknownCounted >= (sent - kernel) * 95 / 100,
                "stun_unauthenticated +\(unauth), stun_unknown_username +\(unknownCounted)",
                "\(unauth) + \(unknownCounted) counted of \(sent - kernel) checks that reached the node")
        return o
    }
}
