import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// Attacks through RTCP feedback a keyed client may send: NACKs that ask for too much, transport-cc that
/// claims too much, and feedback naming streams that are not the sender's.
enum FeedbackAttacks {
    /// 6. A video subscriber NACKs the same packets again and again, then hundreds of packets per datagram:
    /// each packet is resent at most `limits.resends_per_packet` times and the bytes resent stay within the
    /// subscriber's resend budget (`resend_limit`, `resend_budget` counted).
    static let nackAmplification = Attack(number: 6, name: "NACK amplification") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("nack")
        try await ctx.admit(room, "pub", moderator: true)
        try await ctx.admit(room, "x")
        let pub = Talker(try ctx.publisher(audio: true, video: true), media: ctx.media)
        try await ctx.join(room, "pub", pub.client, "publish")
        try await ctx.api.require("POST", "v1/rooms/\(room)/pins", ["by": "pub", "add": ["pub"]])
        let sub = try ctx.subscriber(audio: 1, video: 1)
        // Sequence numbers of the video slot as received, and every packet that came again (a resend).
        final class Received { var seen: [UInt16: Int] = [:]; var order: [UInt16] = []; var bytes = 0; var resent = 0; var resentBytes = 0; var video: UInt32 = 0 }
        let got = Received()
        sub.onMedia = { buffer, length, _ in
            let p = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
            guard ClearRTP.ssrc(p) == got.video, let seq = ClearRTP.sequence(p) else { return }
            if let n = got.seen[seq] {
                got.seen[seq] = n + 1
                got.resent += 1
                got.resentBytes += length
            } else {
                got.seen[seq] = 1
                got.order.append(seq)
                got.bytes += length
            }
        }
        try await ctx.join(room, "x", sub, "subscribe")
        got.video = sub.answeredSlots.first { $0.kind == "video" }?.ssrc ?? 0
        guard try await ctx.connect([pub.client, sub], talkers: [pub]) else { o.fail("NACK room did not connect"); await ctx.deleteRoom(room); return o }
        try await ctx.drive(seconds: 2.5, clients: [pub.client, sub], talkers: [pub]) { t in
            if t % 25 == 0 { sub.sendREMB(bitsPerSecond: 3_000_000) }
            return true
        }
        o.counted.append("history \(got.order.count) packets, \(got.bytes / 1024) KiB")
        guard got.order.count > 30 else {
            o.fail("the video slot received only \(got.order.count) packets"); await ctx.deleteRoom(room); return o
        }
        let before = try await ctx.metrics()
        let resentBefore = got.resent, bytesBefore = got.resentBytes
        let start = MonoClock.now()
        // The same ten packets, NACKed every 20 ms for a second.
        let ten = Array(got.order.suffix(10))
        var nacks = 0
        try await ctx.drive(seconds: 1, clients: [pub.client, sub], talkers: [pub]) { _ in
            sub.sendRTCP(RTCPBuilder.build([RTCPBuilder.nack(sub.rtcpSSRC, media: got.video, ten)]))
            nacks += 1
            return true
        }
        let repeatsOfTen = ten.reduce(0) { $0 + (got.seen[$1] ?? 1) - 1 }
        let perPacket = 3
        o.check(repeatsOfTen <= ten.count * perPacket, "10 packets x \(nacks) NACKs -> \(repeatsOfTen) resends",
                "10 packets NACKed \(nacks) times were resent \(repeatsOfTen) times (at most \(ten.count * perPacket))")
        // Hundreds of packets per datagram: every packet received, one pair each (spaced out) and packed.
        try await ctx.drive(seconds: 1.5, clients: [pub.client, sub], talkers: [pub]) { _ in
            let all = Array(got.order.suffix(1000))
            sub.sendRTCP(RTCPBuilder.build([RTCPBuilder.nack(sub.rtcpSSRC, media: got.video, all)]))
            // 330 pairs, one per received packet, each also naming the 16 after it: 5,610 requests.
            sub.sendRTCP(RTCPBuilder.nackPairs(sub.rtcpSSRC, media: got.video, all.suffix(330).map { ($0, 0xFFFF) }))
            nacks += 2
            return true
        }
        try await ctx.sleep(0.2)
        sub.poll(now: MonoClock.now())
        let elapsed = (MonoClock.now() - start).seconds
        let after = try await ctx.metrics()
        let d = after.dropsSince(before)
        let resends = got.resent - resentBefore
        let bytes = got.resentBytes - bytesBefore
        let retransmissions = after.sum("sfu_retransmissions_total") - before.sum("sfu_retransmissions_total")
        // The budget: resend_kbps (the estimate's half is larger here), a quarter second of burst; SRTP adds
        // its 16-byte tag to each packet the budget counted plain.
        let rate = Double(ctx.limits.resendKbps) * 125
        let bound = Int(rate * elapsed + max(rate / 4, 4000)) + resends * 16 + 1500
        o.check(bytes <= bound, "\(resends) resends, \(bytes / 1024) KiB in \(String(format: "%.1f", elapsed)) s (bound \(bound / 1024) KiB)",
                "\(bytes) bytes resent in \(elapsed) s, over the budget's \(bound)")
        o.check((d["resend_limit"] ?? 0) > 0, "resend_limit +\(d["resend_limit"] ?? 0)", "no resend_limit drops counted (drops: \(d))")
        o.check((d["resend_budget"] ?? 0) > 0, "resend_budget +\(d["resend_budget"] ?? 0)", "no resend_budget drops counted (drops: \(d))")
        o.counted.append("\(nacks) NACK datagrams, retransmissions +\(retransmissions)")
        await ctx.deleteRoom(room)
        return o
    }

    /// 8. Transport-cc feedback whose packet status count is 65,535 in a 36-byte packet: refused before it is
    /// expanded (`rtcp_budget`).
    static let transportCC = Attack(number: 8, name: "transport-cc 65535 statuses") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("twcc")
        try await ctx.admit(room, "x", moderator: true)
        let sub = try ctx.subscriber(audio: 1, video: 1)
        try await ctx.join(room, "x", sub, "subscribe")
        guard try await ctx.connect([sub]) else { o.fail("the feedback client did not connect"); await ctx.deleteRoom(room); return o }
        let media = sub.answeredSlots.last?.ssrc ?? 1
        let packet = RTCPBuilder.transportCC(sub.rtcpSSRC, media: media, statusCount: 0xFFFF)
        let before = try await ctx.metrics()
        let sent = 1000
        try await ctx.drive(seconds: 1, clients: [sub]) { t in
            for _ in 0..<20 where t * 20 < sent { sub.sendRTCP(packet) }
            return t * 20 < sent
        }
        try await ctx.sleep(0.2)
        let after = try await ctx.metrics()
        let budget = after.drop("rtcp_budget") - before.drop("rtcp_budget")
        o.check(packet.count == 36 && budget >= sent, "rtcp_budget +\(budget)/\(sent) (36-byte packets)", "only \(budget) of \(sent) oversized feedbacks counted as rtcp_budget")
        await ctx.deleteRoom(room)
        return o
    }

    /// 12. RTCP for streams that are not the sender's, from a participant of the victim room: PLI, FIR, NACK
    /// and REMB naming the victim subscriber's slots and the victim publisher's tracks; sender reports
    /// under the victim publisher's SSRCs. Ignored: no keyframe request or resend is caused, the victim
    /// subscriber sees no forged report and no bandwidth alert.
    static let foreignRTCP = Attack(number: 12, name: "RTCP for SSRCs not yours") { ctx in
        var o = AttackOutcome()
        let room = VictimPump.room
        try await ctx.admit(room, "spoof")
        let pub = Talker(try ctx.publisher(), media: ctx.media, loud: false)
        let sub = try ctx.subscriber(audio: 1)
        try await ctx.join(room, "spoof", pub.client, "publish")
        try await ctx.join(room, "spoof", sub, "subscribe")
        guard try await ctx.connect([pub.client, sub], talkers: [pub]) else { o.fail("the spoofer did not connect"); await ctx.remove(room, "spoof"); return o }
        try await ctx.drive(seconds: 0.5, clients: [pub.client, sub], talkers: [pub])
        let victimSlots = ctx.victim.subscriber.answeredSlots.map(\.ssrc)
        let victimVideo = ctx.victim.subscriber.answeredSlots.filter { $0.kind == "video" }.map(\.ssrc)
        let victimTracks = [ctx.victim.publisher.audioSSRC, ctx.victim.publisher.videoSSRC]
        let since = ctx.events.count
        let before = try await ctx.metrics()
        let keyframesBefore = ctx.victim.keyframeRequests
        let forgedBefore = ctx.victim.forgedReportsSeen
        var sent = 0
        try await ctx.drive(seconds: 2, clients: [pub.client, sub], talkers: [pub]) { t in
            var w: [(UnsafeMutableRawBufferPointer) -> Int?] = [RTCPBuilder.receiverReport(sub.rtcpSSRC, naming: victimSlots)]
            for s in victimSlots + victimTracks { w.append(RTCPBuilder.pli(sub.rtcpSSRC, media: s)) }
            for s in victimTracks { w.append(RTCPBuilder.fir(sub.rtcpSSRC, target: s, seq: UInt8(truncatingIfNeeded: t))) }
            for s in victimVideo { w.append(RTCPBuilder.nack(sub.rtcpSSRC, media: s, (0..<64).map { UInt16($0) &+ UInt16(truncatingIfNeeded: t * 7) })) }
            w.append(RTCPBuilder.remb(sub.rtcpSSRC, bps: 30_000, ssrcs: victimSlots))
            sub.sendRTCP(RTCPBuilder.build(w))
            // Sender reports under the victim publisher's SSRCs, from the spoofer's publishing transport.
            pub.client.sendRTCP(RTCPBuilder.build(victimTracks.map { RTCPBuilder.senderReport($0, ntp: VictimPump.forgedNTP) }))
            sent += 2
            return true
        }
        try await ctx.sleep(0.3)
        let after = try await ctx.metrics()
        let keyframes = after.sum("sfu_keyframe_requests_total") - before.sum("sfu_keyframe_requests_total")
        let resends = after.sum("sfu_retransmissions_total") - before.sum("sfu_retransmissions_total")
        let parsed = after.sum("sfu_rtcp_packets_received_total") - before.sum("sfu_rtcp_packets_received_total")
        o.check(parsed >= sent, "RTCP parsed +\(parsed)/\(sent)", "only \(parsed) of \(sent) forged RTCP datagrams reached the room")
        o.check(keyframes == 0 && ctx.victim.keyframeRequests == keyframesBefore, "keyframe requests +0",
                "forged PLI/FIR caused \(keyframes) keyframe requests (\(ctx.victim.keyframeRequests - keyframesBefore) reached the victim publisher)")
        o.check(resends == 0, "retransmissions +0", "forged NACKs caused \(resends) retransmissions")
        o.check(ctx.victim.forgedReportsSeen == forgedBefore, "forged SR at victim 0", "the victim subscriber received \(ctx.victim.forgedReportsSeen - forgedBefore) forged sender reports")
        let alerts = ctx.events.find(since: since) { $0.type == "bandwidth_alert" && $0["participant"] as? String == "vsub" }
        o.check(alerts.isEmpty, "no bandwidth_alert for vsub", "forged REMB caused \(alerts.count) bandwidth alerts for the victim subscriber")
        await ctx.remove(room, "spoof")
        return o
    }
}
