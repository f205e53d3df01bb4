import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// Attacks on the session model: offers that replace or renegotiate a transport while the old one still
/// talks, storms of offers, and clients that vanish.
enum SessionAttacks {
    /// 1. A subscriber with 4 audio + 4 video slots subscribes again with 1 + 1 on a new transport (new
    /// fingerprint) while the first stays open and keeps sending receiver reports, NACKs and PLIs naming its
    /// old slots (this crashed the node once); the same from the same address; then the same slots shrunk
    /// by a renegotiation on one transport.
    static let resubscribe = Attack(number: 1, name: "re-subscribe") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("resub")
        try await ctx.admit(room, "pub", moderator: true)
        try await ctx.admit(room, "x")
        let pub = Talker(try ctx.publisher(audio: true, video: true), media: ctx.media)
        try await ctx.join(room, "pub", pub.client, "publish")
        try await ctx.api.require("POST", "v1/rooms/\(room)/pins", ["by": "pub", "add": ["pub"]])
        let first = try ctx.subscriber(audio: 4, video: 4)
        try await ctx.join(room, "x", first, "subscribe")
        guard try await ctx.connect([pub.client, first], talkers: [pub]) else {
            o.fail("the first subscription did not connect"); await ctx.deleteRoom(room); return o
        }
        try await ctx.drive(seconds: 0.5, clients: [pub.client, first], talkers: [pub])
        let before = try await ctx.metrics()

        /// RTCP naming `slots`: reports on all, NACK and PLI on the video ones.
        func stale(_ c: LoadClient, _ slots: [(mid: String, kind: String, ssrc: UInt32)]) {
            let video = slots.filter { $0.kind == "video" }.map(\.ssrc)
            var w = [RTCPBuilder.receiverReport(c.rtcpSSRC, naming: slots.map(\.ssrc))]
            for v in video { w += [RTCPBuilder.nack(c.rtcpSSRC, media: v, (0..<40).map { UInt16($0 * 3) }), RTCPBuilder.pli(c.rtcpSSRC, media: v)] }
            c.sendRTCP(RTCPBuilder.build(w))
        }

        // A new transport from a new address with a new fingerprint replaces the first.
        let oldSlots = first.answeredSlots
        let second = try ctx.subscriber(audio: 1, video: 1, certificate: ctx.otherCertificate)
        let change = try await ctx.join(room, "x", second, "subscribe")
        o.check(change == "replaced", "new fingerprint: replaced", "a new fingerprint was answered '\(change)', not 'replaced'")
        var staleSent = 0
        try await ctx.drive(seconds: 1.5, clients: [pub.client, second], talkers: [pub]) { _ in
            stale(first, oldSlots)
            staleSent += 1
            return true
        }
        first.poll(now: MonoClock.now())
        o.check(first.state == .closed, "old transport got close_notify", "the replaced transport was not closed (state \(first.state))")
        o.check(second.state == .connected && second.mediaPacketsReceived > 0, "new transport receives",
                "the new subscription did not receive (state \(second.state), \(second.mediaPacketsReceived) packets)")

        // The same client starts over on the same address: the old keys' RTCP now reaches the new transport.
        let third = try ctx.subscriber(audio: 1, video: 1, certificate: ctx.certificate, socket: second.socket)
        let r = try await ctx.offer(room, "x", third, "subscribe")
        let change3 = r.json["change"] as? String ?? "\(r.status)"
        o.check(change3 == "replaced", "same address: replaced", "a new fingerprint from the same address was answered '\(change3)'")
        try await ctx.drive(seconds: 0.3, clients: [pub.client, second], talkers: [pub])  // second reads its close_notify
        try third.start(answer: r.json["sdp"] as? String ?? "", now: MonoClock.now())
        let secondSlots = second.answeredSlots
        try await ctx.drive(seconds: 1.5, clients: [pub.client, third], talkers: [pub]) { _ in
            stale(second, secondSlots)
            stale(first, oldSlots)
            staleSent += 2
            return true
        }
        o.check(third.state == .connected && third.mediaPacketsReceived > 0, "restarted client receives",
                "the client that started over did not receive (state \(third.state), \(third.mediaPacketsReceived) packets)")

        // Renegotiation on one transport: 1+1 -> 4+4 -> 1+1, then RTCP naming the slots that went away.
        var big = LoadClient.Profile.subscriber(audio: 4, video: 4)
        var r4 = try await ctx.offer(room, "x", third, "subscribe", sdp: third.offer(profile: big))
        try third.update(answer: r4.json["sdp"] as? String ?? "", now: MonoClock.now())
        let grown = third.answeredSlots
        big = .subscriber(audio: 1, video: 1)
        r4 = try await ctx.offer(room, "x", third, "subscribe", sdp: third.offer(profile: big))
        let change4 = r4.json["change"] as? String ?? "\(r4.status)"
        try third.update(answer: r4.json["sdp"] as? String ?? "", now: MonoClock.now())
        o.check(change4 == "renegotiated" && third.answeredSlots.first?.ssrc == grown.first?.ssrc,
                "shrunk by renegotiation, kept slot keeps its SSRC", "renegotiation answered '\(change4)' or moved the kept slot's SSRC")
        let received = third.mediaPacketsReceived
        try await ctx.drive(seconds: 1.5, clients: [pub.client, third], talkers: [pub]) { _ in
            stale(third, grown)
            staleSent += 1
            return true
        }
        o.check(third.mediaPacketsReceived - received > 40, "renegotiated transport receives",
                "after renegotiation only \(third.mediaPacketsReceived - received) packets arrived in 1.5 s")
        let after = try await ctx.metrics()
        let d = after.dropsSince(before)
        let rtcp = after.sum("sfu_rtcp_packets_received_total") - before.sum("sfu_rtcp_packets_received_total")
        o.check((d["unvalidated_address"] ?? 0) > 0, "unvalidated_address +\(d["unvalidated_address"] ?? 0)",
                "the closed transport's RTCP was not counted as unvalidated_address (drops: \(d))")
        o.check((d["srtp_auth_failed"] ?? 0) + (d["media_before_dtls"] ?? 0) > 0,
                "old keys on new transport: srtp_auth_failed +\(d["srtp_auth_failed"] ?? 0)",
                "RTCP under the replaced transport's keys was not counted (drops: \(d))")
        o.counted.append("stale RTCP sent \(staleSent), RTCP parsed +\(rtcp)")
        await ctx.deleteRoom(room)
        return o
    }

    /// 2. Hundreds of renegotiations on one transport, a hundred ICE restarts, then hundreds of replacements
    /// with new fingerprints: the connection table must not grow, nor the node's memory.
    static let reofferStorm = Attack(number: 2, name: "re-offer storm", allowedGrowthBytes: 3 << 20) { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("storm")
        try await ctx.admit(room, "pub", moderator: true)
        try await ctx.admit(room, "x")
        try await ctx.admit(room, "y")
        let pub = Talker(try ctx.publisher(), media: ctx.media)
        try await ctx.join(room, "pub", pub.client, "publish")
        let sub = try ctx.subscriber(audio: 1)
        try await ctx.join(room, "x", sub, "subscribe")
        guard try await ctx.connect([pub.client, sub], talkers: [pub]) else {
            o.fail("the storm's subscriber did not connect"); await ctx.deleteRoom(room); return o
        }
        let start = try await ctx.metrics()
        let connections = start.sum("sfu_connections")
        let firstSSRC = sub.answeredSlots.first?.ssrc
        var changes: [String: Int] = [:]
        var keptSSRC = true
        let renegotiations = 300
        for i in 0..<renegotiations {
            let r = try await ctx.offer(room, "x", sub, "subscribe", sdp: sub.offer(profile: .subscriber(audio: 1 + (i + 1) % 3)))
            changes[r.json["change"] as? String ?? "\(r.status)/\(r.result ?? -1)", default: 0] += 1
            if let sdp = r.json["sdp"] as? String { try sub.update(answer: sdp, now: MonoClock.now()) }
            if sub.answeredSlots.first?.ssrc != firstSSRC { keptSSRC = false }
            if i % 10 == 9 { try await ctx.drive(seconds: 0.04, clients: [pub.client, sub], talkers: [pub]) }
        }
        o.check(changes["renegotiated"] == renegotiations, "\(renegotiations) renegotiated", "renegotiations answered \(changes)")
        o.check(keptSSRC, "slot 0 kept its SSRC", "a renegotiation moved slot 0 to another SSRC")
        let received = sub.mediaPacketsReceived
        try await ctx.drive(seconds: 1, clients: [pub.client, sub], talkers: [pub])
        o.check(sub.mediaPacketsReceived - received > 30, "still receiving", "after the renegotiations the subscriber got \(sub.mediaPacketsReceived - received) packets in 1 s")
        // ICE restarts on the same transport: new credentials each time, checked with at once.
        let restarts = 100
        var restartChanges: [String: Int] = [:]
        for i in 0..<restarts {
            let r = try await ctx.offer(room, "x", sub, "subscribe", sdp: sub.offer(restartICE: true))
            restartChanges[r.json["change"] as? String ?? "\(r.status)/\(r.result ?? -1)", default: 0] += 1
            if let sdp = r.json["sdp"] as? String { try sub.update(answer: sdp, now: MonoClock.now()) }
            if i % 10 == 9 { try await ctx.drive(seconds: 0.04, clients: [pub.client, sub], talkers: [pub]) }
        }
        let beforeRestartCheck = sub.mediaPacketsReceived
        try await ctx.drive(seconds: 1, clients: [pub.client, sub], talkers: [pub])
        o.check(restartChanges["iceRestarted"] == restarts && sub.checksSucceededSinceRestart > 0 && sub.mediaPacketsReceived - beforeRestartCheck > 30,
                "\(restarts) ICE restarts, checked and receiving",
                "ICE restarts answered \(restartChanges), \(sub.checksSucceededSinceRestart) checks answered since, \(sub.mediaPacketsReceived - beforeRestartCheck) packets in 1 s")
        let afterRenegotiation = try await ctx.metrics().sum("sfu_connections")
        o.check(afterRenegotiation == connections, "connections \(connections) -> \(afterRenegotiation)",
                "renegotiations changed the connection count \(connections) -> \(afterRenegotiation)")

        // Replacements: each offer carries the other fingerprint; every 25th completes its handshake first.
        let replacements = 200
        var replaceChanges: [String: Int] = [:]
        var last: LoadClient?
        for i in 0..<replacements {
            let c = try ctx.subscriber(audio: 1, certificate: i % 2 == 0 ? ctx.certificate : ctx.otherCertificate)
            let r = try await ctx.offer(room, "y", c, "subscribe")
            replaceChanges[r.json["change"] as? String ?? "\(r.status)/\(r.result ?? -1)", default: 0] += 1
            guard let sdp = r.json["sdp"] as? String else { continue }
            if i % 25 == 24 || i == replacements - 1 {
                try c.start(answer: sdp, now: MonoClock.now())
                if try await !ctx.connect([c, pub.client, sub], talkers: [pub], timeout: 3) { o.fail("replacement \(i) did not connect") }
            }
            last = c
        }
        o.check(replaceChanges["replaced"] == replacements - 1 && replaceChanges["created"] == 1,
                "\(replacements - 1) replaced", "replacements answered \(replaceChanges)")
        if let last {
            let got = last.mediaPacketsReceived
            try await ctx.drive(seconds: 1, clients: [pub.client, sub, last], talkers: [pub])
            o.check(last.mediaPacketsReceived - got > 30, "last replacement receives", "the last replacement got \(last.mediaPacketsReceived - got) packets in 1 s")
        }
        let end = try await ctx.metrics()
        let final = end.sum("sfu_connections")
        func events(_ e: String) -> Int { end.sum("sfu_transport_events_total", label: "event=\"\(e)\"") - start.sum("sfu_transport_events_total", label: "event=\"\(e)\"") }
        o.check(events("renegotiated") == renegotiations && events("ice_restarted") == restarts && events("replaced") == replacements - 1,
                "transport events: renegotiated +\(events("renegotiated")), ice_restarted +\(events("ice_restarted")), replaced +\(events("replaced"))",
                "transport events counted renegotiated +\(events("renegotiated")), ice_restarted +\(events("ice_restarted")), replaced +\(events("replaced"))")
        o.check(final == connections + 1, "connections \(connections) -> \(final) after \(replacements) replacements",
                "replacements left \(final) connections (expected \(connections + 1))")
        await ctx.deleteRoom(room)
        return o
    }

    /// 3. A subscriber and a publisher in the victim room stop everything, without a goodbye: after the
    /// consent lifetime the node must stop sending to them and say why.
    static let vanished = Attack(number: 3, name: "vanished client") { ctx in
        var o = AttackOutcome()
        let room = VictimPump.room
        try await ctx.admit(room, "ghost")
        let pub = Talker(try ctx.publisher(), media: ctx.media, loud: false)
        let sub = try ctx.subscriber(audio: 1)
        try await ctx.join(room, "ghost", pub.client, "publish")
        try await ctx.join(room, "ghost", sub, "subscribe")
        guard try await ctx.connect([pub.client, sub], talkers: [pub]) else {
            o.fail("the ghost did not connect"); await ctx.remove(room, "ghost"); return o
        }
        try await ctx.drive(seconds: 1, clients: [pub.client, sub], talkers: [pub])
        o.check(sub.mediaPacketsReceived > 20, "ghost received \(sub.mediaPacketsReceived)", "the ghost subscriber received nothing before vanishing")
        let since = ctx.events.count
        let before = try await ctx.metrics()
        pub.client.vanish()
        sub.vanish()
        let gone = MonoClock.now()
        // Consent lapses `consent_seconds` after the last check; the node looks once a second.
        let quietFrom = Double(ctx.limits.consentSeconds) + 2
        var atQuietStart = 0
        var lastArrival = 0.0
        var previous = sub.datagramsReceived
        try await ctx.drive(seconds: quietFrom + 1.5, clients: [pub.client, sub]) { _ in
            let t = (MonoClock.now() - gone).seconds
            if sub.datagramsReceived != previous { lastArrival = t; previous = sub.datagramsReceived }
            if t < quietFrom { atQuietStart = sub.datagramsReceived + pub.client.datagramsReceived }
            return true
        }
        let late = sub.datagramsReceived + pub.client.datagramsReceived - atQuietStart
        o.check(late == 0, "0 datagrams after consent expiry (last at +\(String(format: "%.1f", lastArrival)) s)",
                "\(late) datagrams reached the vanished client more than \(Int(quietFrom)) s after it vanished")
        let reasons = await ctx.events.wait(since: since, count: 2, timeout: 2) {
            $0.type == "participant_state" && $0.room == room && $0["participant"] as? String == "ghost" && $0["state"] as? String == "disconnected"
                && ($0["reason"] as? String ?? "").contains("ICE consent expired")
        }
        o.check(reasons.count >= 2, "event: disconnected, ICE consent expired (x\(reasons.count))",
                "no 'ICE consent expired' for both transports (saw \(ctx.events.disconnections(since: since, room: room, participant: "ghost")))")
        let reasonsSeen = Set(ctx.events.disconnections(since: since, room: room, participant: "ghost")).sorted()
        o.counted.append("reasons: " + reasonsSeen.joined(separator: "; "))
        // The node says "disconnected" after a third of the consent lifetime; its reason should say so.
        let quietAfter = ctx.limits.consentSeconds / 3
        if reasonsSeen.contains(where: { $0.contains("10 s") }), quietAfter != 10 {
            o.counted.append("note: the 'disconnected' reason claims 10 s; the node decided after \(quietAfter) s (WorkerCore hard-codes the text)")
        }
        let expired = try await ctx.metrics().sum("sfu_transport_events_total", label: "event=\"consent_expired\"")
            - before.sum("sfu_transport_events_total", label: "event=\"consent_expired\"")
        o.check(expired == 2, "consent_expired +2", "transport events counted consent_expired +\(expired), not 2")
        let snapshot = try await ctx.api.call("GET", "v1/rooms/\(room)")
        let ghost = (snapshot.json["participants"] as? [[String: Any]])?.first { $0["id"] as? String == "ghost" || $0["participant"] as? String == "ghost" }
        if let connected = ghost?["connected"] as? Bool {
            o.check(!connected, "room shows ghost disconnected", "the room still shows the ghost connected")
        }
        await ctx.remove(room, "ghost")
        return o
    }
}
