import Foundation
import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// Attacks with SSRCs: a keyed client that makes up a new one for every packet, and publishers that
/// announce SSRCs already in use in the victim's room.
enum SSRCAttacks {
    /// 7. Authenticated SRTCP with a new sender SSRC in every datagram (libsrtp would keep a stream for each)
    /// and SRTP with new SSRCs: refused past `limits.ssrcs_per_connection` (`ssrc_limit`) or, 5,000 a second,
    /// past the connection's `limits.rtcp_per_second` (`rtcp_rate`), and as `unknown_ssrc`; the node's memory
    /// does not grow from one round to the next.
    static let everNewSSRCs = Attack(number: 7, name: "SRTCP with ever-new SSRCs") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("ssrcs")
        try await ctx.admit(room, "x", moderator: true)
        let pub = try ctx.publisher()
        try await ctx.join(room, "x", pub, "publish")
        guard try await ctx.connect([pub]) else { o.fail("the SSRC client did not connect"); await ctx.deleteRoom(room); return o }
        let before = try await ctx.metrics()
        var rng = SplitMix64(seed: 0x55C)
        let perRound = 3000
        var rss: [Int] = []
        for _ in 0..<2 {
            var sent = 0
            try await ctx.drive(seconds: 3, clients: [pub]) { _ in
                for _ in 0..<100 where sent < perRound {
                    let ssrc = UInt32(truncatingIfNeeded: rng.next()) | 1
                    pub.sendRTCP(RTCPBuilder.build([RTCPBuilder.receiverReport(ssrc, naming: [])]))
                    var header = RTPStreamHeader(ssrc: ssrc, payloadType: 111, levelExtension: false)
                    var plain = [UInt8](repeating: 0, count: 64)
                    let n = plain.withUnsafeMutableBytes { header.write(payload: [0xF8, 0xFF, 0xFE], level: nil, marker: false, into: $0) }
                    pub.sendProtectedRTP(Array(plain[0..<n]))
                    sent += 1
                }
                return sent < perRound
            }
            try await ctx.sleep(0.3)
            rss.append(ctx.residentBytes ?? 0)
        }
        let after = try await ctx.metrics()
        let limited = after.drop("ssrc_limit") - before.drop("ssrc_limit") + after.drop("rtcp_rate") - before.drop("rtcp_rate")
        let unknown = after.drop("unknown_ssrc") - before.drop("unknown_ssrc")
        o.check(limited >= 2 * perRound - 64, "ssrc_limit and rtcp_rate +\(limited)",
                "only \(limited) of \(2 * perRound) new RTCP senders refused (ssrc_limit, rtcp_rate)")
        o.check(unknown >= 2 * perRound * 9 / 10, "unknown_ssrc +\(unknown)", "only \(unknown) of \(2 * perRound) RTP packets of unknown SSRCs counted")
        let growth = rss[1] - rss[0]
        o.check(growth <= 512 << 10, "second round RSS \(growth >= 0 ? "+" : "")\(growth / 1024) KiB", "resident memory grew \(growth / 1024) KiB over the second round of \(perRound) SSRCs")
        await ctx.deleteRoom(room)
        return o
    }

    /// 11. Publishers in the victim room announcing the victim publisher's audio SSRC and the SSRC of the
    /// victim subscriber's audio slot, talking loudly: SSRCs are per connection, so the victim's slot keeps
    /// the victim and the intruders are forwarded on other slots as themselves.
    static let collision = Attack(number: 11, name: "SSRC collision") { ctx in
        var o = AttackOutcome()
        let room = VictimPump.room
        guard let slot = ctx.victim.victimSlot else { o.fail("no victim slot"); return o }
        try await ctx.admit(room, "clash1")
        try await ctx.admit(room, "clash2")
        let c1 = Talker(try ctx.publisher(ssrc: ctx.victim.publisher.audioSSRC), media: ctx.media)
        let c2 = Talker(try ctx.publisher(ssrc: slot.ssrc), media: ctx.media)
        try await ctx.join(room, "clash1", c1.client, "publish")
        try await ctx.join(room, "clash2", c2.client, "publish")
        o.check(c1.client.audioSSRC == ctx.victim.publisher.audioSSRC && c2.client.audioSSRC == slot.ssrc,
                "announced the victim's SSRCs", "the intruders did not announce the victim's SSRCs")
        guard try await ctx.connect([c1.client, c2.client], talkers: [c1, c2]) else {
            o.fail("the intruders did not connect"); await ctx.remove(room, "clash1"); await ctx.remove(room, "clash2"); return o
        }
        let start = MonoClock.now()
        try await ctx.drive(seconds: 3, clients: [c1.client, c2.client], talkers: [c1, c2])
        let end = MonoClock.now()
        let victimPackets = ctx.victim.packets(on: slot.ssrc, from: start, to: end)
        o.check(victimPackets >= 120, "victim slot \(victimPackets) packets in 3 s", "the victim's slot got \(victimPackets) packets in 3 s")
        let others = ctx.victim.subscriber.answeredSlots.filter { $0.kind == "audio" && $0.ssrc != slot.ssrc }
            .reduce(0) { $0 + ctx.victim.packets(on: $1.ssrc, from: start, to: end) }
        o.check(others > 0, "intruders forwarded on other slots (\(others))", "the intruders' audio reached no other slot")
        let maps = ctx.events.find { $0.type == "active_talkers" && $0.room == room && $0["participant"] as? String == "vsub" }
        if let last = maps.last, let slots = last["slots"] as? [[String: Any]] {
            let owner = slots.first { $0["mid"] as? String == slot.mid }?["participant"] as? String
            o.check(owner == "vpub", "slot map: mid \(slot.mid) -> vpub", "the victim's slot (mid \(slot.mid)) is mapped to \(owner ?? "nobody")")
        } else {
            o.fail("no slot map event for vsub")
        }
        await ctx.remove(room, "clash1")
        await ctx.remove(room, "clash2")
        return o
    }
}
