import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// Attacks on what a renegotiation must keep (issue 23, defects 3-6): the SRTP and RTP streams a client goes
/// on sending or receiving while its description changes, streams that move to a new SSRC, and header
/// extension ids the node cannot write.
enum RenegotiationAttacks {
    /// 17. A publisher whose audio and video sequence numbers started near 65,535 and have wrapped (SRTP's
    /// rollover counter is 1) re-offers on the same transport with another description of the same SSRCs:
    /// audio level under another id, RED offered, NACK no longer offered for video. A second publisher,
    /// wrapped too, sets its audio transceiver inactive (the m-line stays, without SSRC) and then sendonly
    /// again on the same SSRC. A subscriber must keep hearing both, and no packet may fail authentication:
    /// a track re-created (or ended) with its libsrtp stream freed restarted at rollover counter 0.
    static let afterWrap = Attack(number: 17, name: "renegotiation after wrap") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("wrap")
        try await ctx.admit(room, "a", moderator: true)
        try await ctx.admit(room, "b")
        try await ctx.admit(room, "x")
        var pa = LoadClient.Profile.publisher(audio: true, video: true)
        pa.audioSequenceStart = 65_440
        pa.videoSequenceStart = 65_480
        // b keeps its camera while its microphone's transceiver is inactive (a publish of nothing is refused).
        var pb = LoadClient.Profile.publisher(audio: true, video: true)
        pb.audioSequenceStart = 65_450
        let a = Talker(try ctx.publisher(profile: pa), media: ctx.media)
        let b = Talker(try ctx.publisher(profile: pb), media: ctx.media)
        try await ctx.join(room, "a", a.client, "publish")
        try await ctx.join(room, "b", b.client, "publish")
        try await ctx.api.require("POST", "v1/rooms/\(room)/pins", ["by": "a", "add": ["a", "b"]])
        let sub = try ctx.subscriber(audio: 2, video: 2)
        let tally = SlotTally(sub)
        try await ctx.join(room, "x", sub, "subscribe")
        let clients = [a.client, b.client, sub]
        guard try await ctx.connect(clients, talkers: [a, b]) else {
            o.fail("the wrapping room did not connect"); await ctx.deleteRoom(room); return o
        }
        // Until every stream's sequence numbers wrapped (video at about 30 packets a second).
        func wrapped(_ next: UInt16, from start: UInt16?) -> Bool { next < start ?? 0 }
        try await ctx.drive(seconds: 5, clients: clients, talkers: [a, b]) { _ in
            !(wrapped(a.client.nextAudioSequence, from: pa.audioSequenceStart) && wrapped(a.client.nextVideoSequence(), from: pa.videoSequenceStart)
              && wrapped(b.client.nextAudioSequence, from: pb.audioSequenceStart))
        }
        try await ctx.drive(seconds: 0.4, clients: clients, talkers: [a, b])
        let allWrapped = wrapped(a.client.nextAudioSequence, from: pa.audioSequenceStart) && wrapped(a.client.nextVideoSequence(), from: pa.videoSequenceStart)
            && wrapped(b.client.nextAudioSequence, from: pb.audioSequenceStart)
        o.check(allWrapped, "wrapped: a audio at \(a.client.nextAudioSequence), video at \(a.client.nextVideoSequence()), b audio at \(b.client.nextAudioSequence)",
                "the streams did not wrap in 5 s (a audio \(a.client.nextAudioSequence), video \(a.client.nextVideoSequence()), b audio \(b.client.nextAudioSequence))")
        // Which audio slot shows whom (both are pinned: each has one).
        let owners = slotOwners(ctx, room: room, "x")
        let slot = { (who: String, kind: String) -> UInt32? in sub.answeredSlots.first { $0.kind == kind && owners[$0.mid] == who }?.ssrc }
        guard let slotA = slot("a", "audio"), let slotB = slot("b", "audio"), let videoSlot = slot("a", "video") else {
            o.fail("x's slot map does not show a and b on its audio slots and a on a video slot (\(owners))"); await ctx.deleteRoom(room); return o
        }
        o.check(tally.packets(slotA) > 20 && tally.packets(slotB) > 20 && tally.packets(videoSlot) > 20,
                "before: a \(tally.packets(slotA)), b \(tally.packets(slotB)), video \(tally.packets(videoSlot)) packets",
                "before any re-offer x got a \(tally.packets(slotA)), b \(tally.packets(slotB)), video \(tally.packets(videoSlot)) packets")

        // a: the same SSRCs described anew on the same transport.
        var before = try await ctx.metrics()
        var changed = pa
        changed.audioLevelID = 3
        changed.offerRED = true
        changed.videoNACK = false
        let r = try await ctx.offer(room, "a", a.client, "publish", sdp: a.client.offer(profile: changed))
        let answer = r.json["sdp"] as? String ?? ""
        try a.client.update(answer: answer, now: MonoClock.now())
        let described = answer.contains("a=extmap:3 \(OfferAnswer.audioLevelURI)") && answer.contains("red/48000")
        o.check(r.json["change"] as? String == "renegotiated" && described, "a re-offered: renegotiated (level id 3, RED, no NACK)",
                "a's re-offer was answered \(r.status) '\(r.json["change"] ?? "")'\(described ? "" : " without the new level id or RED")")
        var counts = (a: tally.packets(slotA), b: tally.packets(slotB), video: tally.packets(videoSlot))
        try await ctx.drive(seconds: 1.2, clients: clients, talkers: [a, b])
        var after = try await ctx.metrics()
        var failed = after.drop("srtp_auth_failed") - before.drop("srtp_auth_failed")
        let gotA = tally.packets(slotA) - counts.a, gotVideo = tally.packets(videoSlot) - counts.video
        // The video slot must still show a (a slot that lost a's re-created track would take b's video).
        let shown = slotOwners(ctx, room: room, "x")
        let videoMid = sub.answeredSlots.first { $0.ssrc == videoSlot }?.mid ?? ""
        o.check(gotA >= 40 && gotVideo >= 20 && shown[videoMid] == "a", "after a's re-offer: audio \(gotA), video \(gotVideo) packets in 1.2 s",
                "after a's re-offer x got \(gotA) audio packets of a and \(gotVideo) on the video slot, which shows \(shown[videoMid] ?? "nobody") in 1.2 s")
        o.check(failed == 0, "srtp_auth_failed +0 (re-described)", "a's packets failed authentication after its re-offer: srtp_auth_failed +\(failed)")

        // b: the audio transceiver inactive, then sendonly again on its SSRC.
        before = after
        var paused = pb
        paused.audioInactive = true
        let r1 = try await ctx.offer(room, "b", b.client, "publish", sdp: b.client.offer(profile: paused))
        try b.client.update(answer: r1.json["sdp"] as? String ?? "", now: MonoClock.now())
        try await ctx.drive(seconds: 0.5, clients: clients, talkers: [a, b])
        let duringPause = tally.packets(slotB)
        try await ctx.drive(seconds: 0.3, clients: clients, talkers: [a, b])
        let r2 = try await ctx.offer(room, "b", b.client, "publish", sdp: b.client.offer(profile: pb))
        try b.client.update(answer: r2.json["sdp"] as? String ?? "", now: MonoClock.now())
        let paused0 = tally.packets(slotB) - duringPause
        o.check(r1.json["change"] as? String == "renegotiated" && r2.json["change"] as? String == "renegotiated",
                "b inactive and back: renegotiated twice (\(paused0) packets while paused)",
                "b's re-offers were answered '\(r1.json["change"] ?? r1.status)', '\(r2.json["change"] ?? r2.status)'")
        counts = (a: tally.packets(slotA), b: tally.packets(slotB), video: tally.packets(videoSlot))
        try await ctx.drive(seconds: 1.2, clients: clients, talkers: [a, b])
        after = try await ctx.metrics()
        failed = after.drop("srtp_auth_failed") - before.drop("srtp_auth_failed")
        let gotB = tally.packets(slotB) - counts.b
        o.check(gotB >= 40, "after b came back: \(gotB) packets in 1.2 s", "after b's audio came back on its SSRC x got \(gotB) packets of b in 1.2 s")
        o.check(failed == 0, "srtp_auth_failed +0 (inactive and back)", "b's packets failed authentication after it came back: srtp_auth_failed +\(failed)")
        let undecryptable = tally.streams.values.reduce(0) { $0 + $1.undecryptable }
        o.check(undecryptable == 0, "x decrypted all", "\(undecryptable) packets x received did not decrypt")
        await ctx.deleteRoom(room)
        return o
    }

    /// 18. Two publishers talk in turns, so a subscriber's one audio slot switches source three times (each
    /// switch moves the slot's sequence offset); then the subscriber re-offers on the same transport with
    /// another Opus payload type for the slot's mid (same mid, so the node keeps the slot's SSRC). The slot
    /// must go on where it was: a slot made anew restarted its rewriter at offset 0, its sequence numbers went
    /// back, and libsrtp refused to protect them (`srtp_replay`) for up to 2^15 packets. The later talker's
    /// sequence numbers start 10,000 below the first's, so offset 0 would be a step back.
    static let slotReoffer = Attack(number: 18, name: "slot re-offer after switches") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("slot")
        try await ctx.admit(room, "a", moderator: true)
        try await ctx.admit(room, "b")
        try await ctx.admit(room, "x")
        let since = ctx.events.count
        var pa = LoadClient.Profile.publisher(audio: true)
        pa.audioSequenceStart = 40_000
        var pb = LoadClient.Profile.publisher(audio: true)
        pb.audioSequenceStart = 30_000
        let a = Talker(try ctx.publisher(profile: pa), media: ctx.media)
        let b = Talker(try ctx.publisher(profile: pb), media: ctx.media, loud: false)
        try await ctx.join(room, "a", a.client, "publish")
        try await ctx.join(room, "b", b.client, "publish")
        let sub = try ctx.subscriber(audio: 1)
        let tally = SlotTally(sub)
        try await ctx.join(room, "x", sub, "subscribe")
        let clients = [a.client, b.client, sub]
        guard try await ctx.connect(clients, talkers: [a, b]), let slot = sub.answeredSlots.first else {
            o.fail("the talkers' room did not connect"); await ctx.deleteRoom(room); return o
        }
        let before = try await ctx.metrics()
        // Turns: a, b, a, b (b talks on through the re-offer). Each turn lasts until the slot shows the
        // talker (at most 3 s), then 0.4 s more.
        for (turn, talker) in ["a", "b", "a", "b"].enumerated() {
            a.loud = talker == "a"
            b.loud = talker == "b"
            var shown: MonoTime?
            try await ctx.drive(seconds: 3, clients: clients, talkers: [a, b]) { _ in
                if shown == nil, slotOwners(ctx, room: room, "x", since: since)[slot.mid] == talker { shown = MonoClock.now() }
                return shown.map { (MonoClock.now() - $0).seconds < 0.4 } ?? true
            }
            if shown == nil { o.fail("turn \(turn + 1): the slot did not go to \(talker) within 3 s"); break }
        }
        let switches = slotHistory(ctx, room: room, "x", mid: slot.mid, since: since)
        o.check(switches.count >= 3, "slot sources: \(switches.joined(separator: " > "))", "the slot switched only between \(switches)")
        let lastBefore = tally.sequences(slot.ssrc).last
        let r = try await ctx.offer(room, "x", sub, "subscribe", sdp: sub.offer(profile: { var p = sub.profile; p.opusPayloadType = 109; return p }()))
        try sub.update(answer: r.json["sdp"] as? String ?? "", now: MonoClock.now())
        let sameSSRC = sub.answeredSlots.first?.ssrc == slot.ssrc && sub.answeredSlots.first?.mid == slot.mid
        o.check(r.json["change"] as? String == "renegotiated" && sameSSRC, "re-offered with Opus as 109: renegotiated, same mid and SSRC",
                "the slot re-offer was answered \(r.status) '\(r.json["change"] ?? "")' with slots \(sub.answeredSlots)")
        let count = tally.sequences(slot.ssrc).count
        try await ctx.drive(seconds: 1.5, clients: clients, talkers: [a, b])
        let after = try await ctx.metrics()
        let seqs = tally.sequences(slot.ssrc)
        let newSeqs = Array(seqs.dropFirst(count))
        let pts = tally.streams[slot.ssrc]?.payloadTypes ?? [:]
        o.check(newSeqs.count >= 50, "after the re-offer: \(newSeqs.count) packets in 1.5 s (payload types \(pts.keys.sorted()))",
                "after the re-offer the slot got \(newSeqs.count) packets in 1.5 s")
        if let last = lastBefore, let first = newSeqs.first {
            let step = Int(Int16(bitPattern: first &- last))
            o.check((1...100).contains(step), "sequence \(last) -> \(first)", "across the re-offer the slot's sequence went \(last) -> \(first) (step \(step))")
        }
        let back = SlotTally.largestStepBack(seqs)
        o.check(back == 0, "no step back in \(seqs.count) packets", "the slot's sequence numbers stepped back by up to \(back)")
        let replay = after.drop("srtp_replay") - before.drop("srtp_replay")
        o.check(replay == 0, "srtp_replay +0", "the node's protect refused \(replay) packets as replays (srtp_replay)")
        await ctx.deleteRoom(room)
        return o
    }

    /// 19. A publisher with rid-based simulcast (two layers, no `a=ssrc`: their SSRCs learned from the MID and
    /// RID extensions of their first packets) moves both layers to new SSRCs, the MID and RID on the first
    /// packets of each (an SSRC collision resolved): the subscriber's video goes on. Then it moves its top
    /// layer on every packet for a second: one move a second is followed (`sfu_ssrc_rebinds_total`), the
    /// rest refused (`ssrc_rebind_limit`) before libsrtp keeps a stream for them; a last move after the
    /// interval is followed again.
    static let ridSSRCChange = Attack(number: 19, name: "rid SSRC change") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("rid")
        try await ctx.admit(room, "pub", moderator: true)
        try await ctx.admit(room, "x")
        var profile = LoadClient.Profile.publisher(audio: true, video: true, simulcastLayers: 2)
        profile.ridSimulcast = true
        let pub = Talker(try ctx.publisher(profile: profile), media: ctx.media)
        try await ctx.join(room, "pub", pub.client, "publish")
        try await ctx.api.require("POST", "v1/rooms/\(room)/pins", ["by": "pub", "add": ["pub"]])
        let sub = try ctx.subscriber(audio: 1, video: 1)
        let tally = SlotTally(sub)
        try await ctx.join(room, "x", sub, "subscribe")
        let clients = [pub.client, sub]
        guard try await ctx.connect(clients, talkers: [pub]), let video = sub.answeredSlots.first(where: { $0.kind == "video" })?.ssrc else {
            o.fail("the simulcast room did not connect"); await ctx.deleteRoom(room); return o
        }
        try await ctx.drive(seconds: 1, clients: clients, talkers: [pub])
        o.check(tally.packets(video) > 20, "rid-bound video: \(tally.packets(video)) packets", "the rid-bound video reached x in \(tally.packets(video)) packets")
        let start = try await ctx.metrics()
        func rebinds(_ m: MetricsSnapshot) -> Int { m.sum("sfu_ssrc_rebinds_total") - start.sum("sfu_ssrc_rebinds_total") }

        // Both layers move, each announced by its RID on its first packets.
        for layer in 0..<2 { pub.client.moveVideo(layer: layer, to: .random(in: 1...UInt32.max)) }
        var count = tally.packets(video)
        try await ctx.drive(seconds: 1.2, clients: clients, talkers: [pub])
        let moved = try await ctx.metrics()
        var got = tally.packets(video) - count
        let unknown = moved.drop("unknown_ssrc") - start.drop("unknown_ssrc")
        o.check(got >= 30 && unknown == 0, "after the move: \(got) video packets in 1.2 s, unknown_ssrc +0",
                "after both layers moved x got \(got) video packets in 1.2 s (unknown_ssrc +\(unknown))")
        o.check(rebinds(moved) == 2, "rebinds +2 (one per layer)", "sfu_ssrc_rebinds_total rose by \(rebinds(moved)) for two moved layers")

        // The top layer on a new SSRC for every packet, for a second.
        let sentBefore = pub.client.mediaPacketsSent
        pub.client.videoSSRCFlips = [1]
        let flipStart = MonoClock.now()
        try await ctx.drive(seconds: 1, clients: clients, talkers: [pub])
        pub.client.videoSSRCFlips = []
        let flipSeconds = (MonoClock.now() - flipStart).seconds
        let flipped = try await ctx.metrics()
        let limited = flipped.drop("ssrc_rebind_limit") - moved.drop("ssrc_rebind_limit")
        let flipRebinds = rebinds(flipped) - rebinds(moved)
        o.check(limited >= 15, "flipping \(String(format: "%.1f", flipSeconds)) s: ssrc_rebind_limit +\(limited)",
                "a second of SSRC flips was refused only \(limited) times as ssrc_rebind_limit (\(pub.client.mediaPacketsSent - sentBefore) packets sent)")
        o.check((0...2).contains(flipRebinds), "rebinds +\(flipRebinds) while flipping", "sfu_ssrc_rebinds_total rose by \(flipRebinds) in a second of flips")
        // The layer settles on one SSRC once the interval has passed.
        try await ctx.drive(seconds: 1.05, clients: clients, talkers: [pub])
        pub.client.moveVideo(layer: 1, to: .random(in: 1...UInt32.max))
        count = tally.packets(video)
        try await ctx.drive(seconds: 1, clients: clients, talkers: [pub])
        let end = try await ctx.metrics()
        got = tally.packets(video) - count
        o.check(rebinds(end) - rebinds(flipped) >= 1 && got >= 25, "settled: rebinds +\(rebinds(end) - rebinds(flipped)), \(got) video packets in 1 s",
                "after the flips the last move was followed \(rebinds(end) - rebinds(flipped)) times, x got \(got) video packets in 1 s")
        o.counted.append("rebinds +\(rebinds(end)) in all")
        await ctx.deleteRoom(room)
        return o
    }

    /// 20. Subscribers offering header extensions under ids the one-byte form cannot carry: audio level as
    /// 15, abs-send-time as 17, transport-cc as 255 (one of them with audio level as 2, which it can). The
    /// answers must leave those out, and nothing received may carry an extension element under an id its
    /// answer did not negotiate: 17 went out as id 1 and 15 and 255 as the one-byte form's stop marker.
    static let highExtensionIDs = Attack(number: 20, name: "extension ids above 14") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("extid")
        try await ctx.admit(room, "pub", moderator: true)
        try await ctx.admit(room, "y")
        try await ctx.admit(room, "z")
        let pub = Talker(try ctx.publisher(audio: true, video: true), media: ctx.media)
        try await ctx.join(room, "pub", pub.client, "publish")
        try await ctx.api.require("POST", "v1/rooms/\(room)/pins", ["by": "pub", "add": ["pub"]])
        var subs: [(name: String, client: LoadClient, tally: SlotTally, negotiated: Set<UInt8>)] = []
        for (name, levelID) in [("y", 15), ("z", 2)] {
            let c = try LoadClient(certificate: ctx.certificate, profile: .subscriber(audio: 1, video: 1, transportCC: true))
            c.consentInterval = .milliseconds(1000)
            let tally = SlotTally(c)
            let offer = c.offer()
                .replacingOccurrences(of: "a=extmap:1 \(OfferAnswer.audioLevelURI)", with: "a=extmap:\(levelID) \(OfferAnswer.audioLevelURI)")
                .replacingOccurrences(of: "a=extmap:3 \(OfferAnswer.absSendTimeURI)", with: "a=extmap:17 \(OfferAnswer.absSendTimeURI)")
                .replacingOccurrences(of: "a=extmap:\(LoadClient.transportCCOfferID) \(OfferAnswer.transportCCURI)", with: "a=extmap:255 \(OfferAnswer.transportCCURI)")
            let r = try await ctx.offer(room, name, c, "subscribe", sdp: offer)
            guard let answer = r.json["sdp"] as? String else {
                o.fail("\(name)'s offer was refused: \(r.status)/\(r.result ?? -1) \(r.json["msg"] ?? "")"); continue
            }
            try c.start(answer: answer, now: MonoClock.now())
            let extmaps = try SessionDescription.parse(answer).media.flatMap { $0.extmaps.map { (id: $0.key, uri: $0.value) } }
            let ids = Set(extmaps.map(\.id))
            let expected: Set<UInt8> = levelID <= 14 ? [UInt8(levelID)] : []
            o.check(ids == expected, "\(name)'s answer: extmap ids \(ids.sorted())",
                    "\(name)'s answer negotiated \(extmaps.map { "\($0.id) \($0.uri)" }) (expected ids \(expected.sorted()))")
            subs.append((name, c, tally, ids))
        }
        let clients = [pub.client] + subs.map(\.client)
        guard try await ctx.connect(clients, talkers: [pub]) else {
            o.fail("the extension-id room did not connect"); await ctx.deleteRoom(room); return o
        }
        try await ctx.drive(seconds: 1.5, clients: clients, talkers: [pub])
        for s in subs {
            let packets = s.tally.streams.values.reduce(0) { $0 + $1.packets + $1.undecryptable }
            // 15 is never an id (the one-byte form's stop marker), whatever an answer says.
            let stray = s.tally.extensionIDs.filter { !s.negotiated.contains($0.key) || !OutgoingRTP.oneByteIDs.contains($0.key) }
            let seen = s.tally.extensionIDs.keys.sorted().map { "\($0) x\(s.tally.extensionIDs[$0]!)" }
            o.check(packets >= 60 && stray.isEmpty && s.tally.otherExtensionForms == 0,
                    "\(s.name) received \(packets), extension ids seen \(seen.isEmpty ? "none" : seen.joined(separator: ", "))",
                    "\(s.name) received \(packets) packets with extension ids not negotiated: \(stray.keys.sorted().map { "\($0) x\(stray[$0]!)" })"
                        + (s.tally.otherExtensionForms > 0 ? ", \(s.tally.otherExtensionForms) in another form" : ""))
        }
        await ctx.deleteRoom(room)
        return o
    }

    // MARK: Slot maps

    /// The participant each of `who`'s slots shows (mid -> participant) in the latest slot map.
    static func slotOwners(_ ctx: HostileContext, room: String, _ who: String, since: Int = 0) -> [String: String] {
        let maps = ctx.events.find(since: since) { $0.type == "active_talkers" && $0.room == room && $0["participant"] as? String == who }
        guard let slots = maps.last?["slots"] as? [[String: Any]] else { return [:] }
        var out: [String: String] = [:]
        for s in slots { if let mid = s["mid"] as? String, let p = s["participant"] as? String { out[mid] = p } }
        return out
    }

    /// The participants a slot showed one after the other (repeats folded).
    static func slotHistory(_ ctx: HostileContext, room: String, _ who: String, mid: String, since: Int) -> [String] {
        var history: [String] = []
        for e in ctx.events.find(since: since, { $0.type == "active_talkers" && $0.room == room && $0["participant"] as? String == who }) {
            guard let slots = e["slots"] as? [[String: Any]], let p = slots.first(where: { $0["mid"] as? String == mid })?["participant"] as? String,
                  p != history.last else { continue }
            history.append(p)
        }
        return history
    }
}
