import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// Sessions that live like real calls: renegotiation, replaced transports, long mutes, speakers who leave.
/// Each test here failed before the session model (issue 11).
@Suite struct SessionScenarioTests {
    nonisolated(unsafe) static let quiet = SpeechScript([], seed: 3)

    func receiverReport(from ssrc: UInt32, about slots: [UInt32]) -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: 8 + 24 * slots.count)
        let blocks = slots.map {
            ReportBlock(ssrc: $0, fractionLost: 0, cumulativeLost: 0, extendedHighestSequence: 1, jitter: 0,
                        lastSenderReport: 0, delaySinceLastSenderReport: 0)
        }
        let n = buf.withUnsafeMutableBytes { ReceiverReport(ssrc: ssrc, reports: blocks).write(into: $0) }
        return Array(buf[0..<n!])
    }

    func nack(_ sequences: [UInt16], slot: UInt32) -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: 16 + 4 * sequences.count)
        let n = buf.withUnsafeMutableBytes { GenericNACK.write(sender: 0xB0B, media: slot, sequences: sequences, into: $0) }
        return Array(buf[0..<n!])
    }

    @Test func resubscribingWithFewerSlotsOnANewConnectionIgnoresFeedbackAboutTheOldSlots() throws {
        // The crash of issue 11: 4 + 4 slots, then 1 + 1 while the first connection is still open; the first
        // connection's next receiver report named slots that no longer exist.
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 4, videoSlots: 4)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        let first = b.member
        let base = first.audio.ssrc - 1
        let oldSlots = (0..<4).map { base + SlotSSRC.audio($0) } + (0..<4).map { base + SlotSSRC.video($0) }
        b.member = try h.resubscribe(first, audioSlots: 1, videoSlots: 1, newConnection: true)
        h.send(receiverReport(from: 0xB0B, about: oldSlots), from: first.subscribe)
        h.send(nack([1, 2, 3], slot: base + SlotSSRC.video(3)), from: first.subscribe)
        h.send(receiverReport(from: 0xB0B, about: oldSlots), from: b.member.subscribe)
        h.send(nack([1, 2, 3], slot: base + SlotSSRC.video(3)), from: b.member.subscribe)
        h.clearReceived()
        h.run([a, b], from: 2, seconds: 2)
        #expect(h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0)).count > 80, "the new slot carries A")
        #expect(h.rtp(to: first.subscribe.connection).isEmpty, "the old connection gets nothing")
        #expect(h.room.counters.drops[.unknownConnection] >= 2, "the old connection's RTCP no longer routes")
        #expect(!h.events.contains { if case .participantState("B", .disconnected, _, _) = $0.1 { true } else { false } },
                "a participant who streams fine is not reported disconnected")
    }

    @Test func renegotiatingOnTheSameConnectionKeepsTheSlotsItStillDeclares() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A")) { s.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 2)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        h.clearEvents()
        b.member = try h.resubscribe(b.member, audioSlots: 3, videoSlots: 1, newConnection: false)
        h.run([a, b], from: 2, seconds: 2)
        let slot = h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0))
        let seqs = slot.map(\.header.sequenceNumber)
        #expect(slot.count > 150)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "slot a0 stays one stream through the renegotiation")
        #expect(slot.filter(\.header.marker).count == 1, "no new talkspurt: the slot was not switched")
        let map = try #require(h.talkerEvents(for: "B").last?.2)
        #expect(map.map(\.mid) == ["a0", "a1", "a2", "v0"], "the slot map reports the new slots")
        #expect(map.first?.participant == "A")
        // And back down to one slot: the removed ones stop, a0 goes on.
        b.member = try h.resubscribe(b.member, audioSlots: 1, videoSlots: 0, newConnection: false)
        h.send(receiverReport(from: 0xB0B, about: [b.member.audio.ssrc - 1 + SlotSSRC.audio(2)]), from: b.member.subscribe)
        h.run([a, b], from: 4, seconds: 1)
        #expect(h.talkerEvents(for: "B").last?.2.map(\.mid) == ["a0"])
    }

    @Test func republishingOnANewConnectionReleasesTheOldOneWithoutCallingTheParticipantDisconnected() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A")) { s.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        let old = a.member
        let held = try #require(h.room.sessions.connection(old.publish.connection), "the worker's table holds the room's side")
        a.member = try h.republish(old, video: false, newConnection: true)
        #expect(!held.attached, "the room let go of the replaced connection; whoever holds it must stop feeding it")
        #expect(h.room.sessions.connections(of: "A").sorted { $0.raw < $1.raw } == [a.member.subscribe.connection, a.member.publish.connection].sorted { $0.raw < $1.raw })
        h.clearReceived()
        var stale = old
        h.send(stale.audio.packet([0xF8, 0xFF, 0xFE], level: 20), from: old.publish)
        #expect(h.room.counters.drops[.unknownConnection] == 1, "the replaced connection no longer routes")
        var datagram = try #require(stale.publish.tryProtect(stale.audio.packet([0xF8, 0xFF, 0xFE], level: 20)))
        datagram += [UInt8](repeating: 0, count: SRTPSession.maxOverhead)
        datagram.withUnsafeMutableBytes { h.room.receive($0, length: $0.count - SRTPSession.maxOverhead, from: held, now: h.now, into: h.batch) }
        #expect(h.room.counters.drops[.unknownConnection] == 2, "nor does a datagram handed over with the held connection")
        h.run([a, b], from: 2, seconds: 2)
        #expect(h.audio(to: b.member, from: a, slots: 1).count > 80, "the new connection's track feeds B's slot")
        #expect(!h.events.contains { if case .participantState("A", .disconnected, _, _) = $0.1 { true } else { false } })
    }

    @Test func aTalkerHardMutedForThirteenMinutesIsRankedAgainAfterUnmute() throws {
        // Issue 11: her packets were dropped before sequence unwrapping; after 2^15 of them her sequence
        // numbers read as old, and she was not ranked for up to another 11 minutes.
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let m = SimulatedParticipant(try h.join("M", role: .moderator)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        let a = SimulatedParticipant(try h.join("A")) { s.frame(at: $0, speaking: 0..<1000) }
        h.run([m, a], from: 0, seconds: 3)
        #expect(h.dominantSpeakers.last?.1 == "A")
        try h.room.moderation.hardMute(by: "M", target: "A", audio: true, video: nil, now: h.now, into: h.batch)
        h.flush()
        // 40,000 packets (13 minutes of 20 ms audio) that her client keeps sending while muted.
        let frame = OpusFrameEncoder().encode(s.frame(at: 1, speaking: 0..<1000))
        for _ in 0..<40_000 {
            h.advance(by: 20)
            h.send(a.member.audio.packet(frame, level: 20), from: a.member.publish)
            a.member.audio.timestamp &+= 960
        }
        #expect(h.room.counters.drops[.hardMuted] >= 40_000)
        try h.room.moderation.hardMute(by: "M", target: "A", audio: false, video: nil, now: h.now, into: h.batch)
        h.flush()
        h.clearEvents()
        let resume = h.now - h.scenarioOrigin
        h.run([m, a], from: Double(resume.milliseconds) / 1000, seconds: 3)
        #expect(h.dominantSpeakers.first?.1 == "A", "she talks alone after unmute and is dominant again")
        #expect(h.audio(to: m.member, from: a).count > 100, "and heard")
    }

    @Test func theDominantSpeakerLeavingIsReportedAsNoDominantSpeaker() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let m = SimulatedParticipant(try h.join("M", role: .moderator)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        let a = SimulatedParticipant(try h.join("A")) { s.frame(at: $0, speaking: 0..<30) }
        h.run([m, a], from: 0, seconds: 3)
        #expect(h.dominantSpeakers.last?.1 == "A")
        try h.room.remove("A", now: h.now, into: h.batch)
        h.flush()
        #expect(h.dominantSpeakers.last?.1 == nil, "dominant_speaker: null when the dominant speaker leaves")
        #expect(h.room.snapshot().dominantSpeaker == nil)
    }

    /// A and B publish video; C watches one video slot. A talks first, then B: C's slot waits for B's
    /// keyframe while A's video still flows. B's publisher never hears the PLIs (`blockPLIsToB`).
    func videoSwitchWaitingOnB() throws -> (RoomHarness, SimulatedParticipant, SimulatedParticipant, SimulatedParticipant, SimulatedParticipant) {
        var config = RoomConfiguration()
        config.maxActiveTalkers = 1
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a, seed: 1), sb = SpeechScript(Voices.c, seed: 5)
        let m = SimulatedParticipant(try h.join("M", role: .moderator)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0..<3) }
        let b = SimulatedParticipant(try h.join("B", publishVideo: true), video: true, seed: 2) { sb.frame(at: $0, speaking: 3.5..<30) }
        let c = SimulatedParticipant(try h.join("C", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([m, a, b, c], from: 0, seconds: 3)
        #expect(h.talkerEvents(for: "C").last?.2.first { $0.mid == "v0" }?.participant == "A")
        let bPublish = b.member.publish.connection
        h.network = { dest, d in !(dest == bPublish && d.count > 1 && d[1] == 206) }  // B never sees a PLI
        h.run([m, a, b, c], from: 3, seconds: 3)
        let slot = try #require(h.room.participants.lookup("C")?.subscriber?.videoSlots.first)
        #expect(slot.pending != nil && slot.pending === h.room.participants.lookup("B")?.videoTracks.first,
                "C's slot waits for B's keyframe")
        return (h, m, a, b, c)
    }

    @Test func videoMutingASourceThatWaitsForItsKeyframeStopsTheSlotItWasTaking() throws {
        let (h, m, a, b, c) = try videoSwitchWaitingOnB()
        try h.room.moderation.hardMute(by: "M", target: "B", audio: nil, video: true, now: h.now, into: h.batch)
        h.flush()
        h.clearReceived()
        h.run([m, a, b, c], from: 6, seconds: 1)
        let map = h.talkerEvents(for: "C").last?.2.first { $0.mid == "v0" }?.participant
        let video = h.slotPackets(c.member, ssrcOffset: SlotSSRC.video(0))
        #expect(map == nil && video.isEmpty,
                "what flows on the slot is what the slot map says: map \(String(describing: map)), \(video.count) packets")
    }

    @Test func aSourceNoLongerWaitedForNeverTakesTheSlotNorGetsItsKeyframeRequests() throws {
        let (h, m, a, b, c) = try videoSwitchWaitingOnB()
        // A talks again, B stops: the list goes back to A, whose video still feeds the slot.
        let sa = SpeechScript(Voices.a, seed: 1)
        a.audioScript = { sa.frame(at: $0, speaking: 6..<30) }
        b.audioScript = { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([m, a, b, c], from: 6, seconds: 4)
        #expect(h.talkerEvents(for: "C").last?.2.first { $0.mid == "v0" }?.participant == "A")
        let aTrack = h.room.participants.lookup("A")?.videoTracks.first
        var slot = try #require(h.room.participants.lookup("C")?.subscriber?.videoSlots.first)
        #expect(slot.current === aTrack && slot.pending == nil, "nothing is waited for any more")
        // B's keyframe comes after all, and C asks for a keyframe on its slot: neither reaches B.
        h.network = nil
        let plisToB = b.plisReceived
        b.sendKeyframe()
        h.run([m, a, b, c], from: 10, seconds: 0.2)
        let slotSSRC = c.member.audio.ssrc - 1 + SlotSSRC.video(0)
        var pli = [UInt8](repeating: 0, count: 12)
        _ = pli.withUnsafeMutableBytes { PictureLossIndication.write(sender: 0xC, media: slotSSRC, into: $0) }
        h.send(pli, from: c.member.subscribe)
        h.run([m, a, b, c], from: 10.2, seconds: 0.5)
        slot = try #require(h.room.participants.lookup("C")?.subscriber?.videoSlots.first)
        #expect(slot.current === aTrack, "B's late keyframe does not take the slot")
        #expect(b.plisReceived == plisToB, "the slot's PLI reaches A only")
    }

    @Test func aNACKedPacketIsResentAtMostThreeTimesWhateverTheClientClaims() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1, options: .init(subscribeProfile: .aesCM128HmacSHA1_80))) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        let slotSSRC = b.member.audio.ssrc - 1 + SlotSSRC.video(0)
        let sent = try #require(h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).last?.header.sequenceNumber)
        for _ in 0..<50 {
            h.send(nack([sent], slot: slotSSRC), from: b.member.subscribe)
            h.advance(by: 200)
        }
        #expect(h.room.counters.retransmissions == 3, "50 NACKs of one packet: \(h.room.counters.retransmissions) resends")
        #expect(h.room.counters.drops[.resendLimit] == 47)
    }

    @Test func resendsArePaidFromABudgetThatFollowsTheEstimate() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1, options: .init(subscribeProfile: .aesCM128HmacSHA1_80))) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 4)
        var remb = [UInt8](repeating: 0, count: 24)
        let n = remb.withUnsafeMutableBytes { REMB(senderSSRC: 0xB0B, bitrate: 100_000, ssrcs: [1]).write(into: $0) }
        h.send(Array(remb[0..<n!]), from: b.member.subscribe)
        let slotSSRC = b.member.audio.ssrc - 1 + SlotSSRC.video(0)
        let sent = h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).map(\.header.sequenceNumber)
        #expect(sent.count > 100)
        h.clearReceived()
        // One datagram NACKs everything the slot sent: with a 100 kbit/s estimate, resends may cost 50 kbit/s.
        h.send(nack(Array(sent.suffix(200)), slot: slotSSRC), from: b.member.subscribe)
        let resentBytes = h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).reduce(0) { $0 + $1.packet.count }
        #expect(resentBytes <= 4_000 + 1_500, "\(resentBytes) bytes resent at once")
        #expect(h.room.counters.drops[.resendBudget] > 100)
    }

    @Test func aTransportCCFeedbackClaimingMorePacketsThanTheBudgetIsNotExpanded() throws {
        let h = try RoomHarness()
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([b], from: 0, seconds: 0.2)
        // 36 bytes: header, SSRCs, base 0, status count 65535, reference time, then run-length chunks of
        // "received, small delta" naming 8191 packets each (draft-holmer-rmcat-transport-wide-cc-extensions-01).
        var fb: [UInt8] = [0x8F, 205, 0, 8, 0, 0, 0x0B, 0x0B, 0, 0, 0, 1, 0, 0, 0xFF, 0xFF, 0, 0, 0, 0]
        for _ in 0..<8 { fb += [0x3F, 0xFF] }
        #expect(fb.count == 36)
        h.send(fb, from: b.member.subscribe)
        #expect(h.room.counters.drops[.rtcpBudget] == 1)
    }

    @Test func srtcpFromEverNewSSRCsIsRefusedPastTheCap() throws {
        let h = try RoomHarness()
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([b], from: 0, seconds: 0.2)
        for i in 0..<300 { h.send(receiverReport(from: 0x7000_0000 + UInt32(i), about: []), from: b.member.subscribe) }
        let conn = try #require(h.room.sessions.connection(b.member.subscribe.connection))
        #expect(conn.inboundSSRCs.count <= h.room.limits.ssrcsPerConnection)
        #expect(h.room.counters.drops[.ssrcLimit] >= 300 - UInt64(h.room.limits.ssrcsPerConnection))
    }

    @Test func srtcpPastAConnectionsRateIsDroppedBeforeItIsDecrypted() throws {
        // Issue 40: what one connection may make its worker do is bounded. 5,000 authenticated receiver reports
        // at once from one subscriber: a second's worth (1,000) is decrypted and parsed, the rest is not.
        let h = try RoomHarness()
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([b], from: 0, seconds: 0.2)
        let before = h.room.counters.rtcpIn
        for _ in 0..<5000 { h.send(receiverReport(from: 0x7000_0001, about: []), from: b.member.subscribe) }
        let parsed = h.room.counters.rtcpIn - before
        #expect(parsed <= 1000 && parsed >= 900, "\(parsed) of 5000 decrypted and parsed")
        #expect(h.room.counters.drops[.rtcpRate] == 5000 - parsed)
        #expect(h.room.counters.drops[.srtpAuthFailed] == 0 && h.room.counters.drops[.srtpReplay] == 0)
        // The budget refills with time: a second later the client's reports are taken again.
        h.advance(by: 1000)
        for _ in 0..<100 { h.send(receiverReport(from: 0x7000_0001, about: []), from: b.member.subscribe) }
        #expect(h.room.counters.rtcpIn - before - parsed == 100)
    }

    @Test func aFullRoomRefusesAdmissionWithTheLimitCode() throws {
        var limits = RoomLimits()
        limits.participants = 2
        let room = try Room(name: "r", limits: limits, now: .zero)
        try room.admit("a", now: .zero)
        try room.admit("b", now: .zero)
        #expect(throws: RoomError(.limitReached, .conflict, "room r is full (2 participants)", limit: "participants_per_room")) { try room.admit("c", now: .zero) }
        try room.remove("a", now: .zero, into: DatagramBatch())
        try room.admit("c", now: .zero)
    }

    @Test func rtcpAboutAnotherParticipantsSSRCsChangesNothing() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        let e = SimulatedParticipant(try h.join("E", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b, e], from: 0, seconds: 2)
        let bSlot = b.member.audio.ssrc - 1 + SlotSSRC.video(0)
        let plis = a.plisReceived
        let resent = h.room.counters.retransmissions
        // E names B's slot in PLIs and NACKs, and sends a sender report as if it were A's video.
        var pli = [UInt8](repeating: 0, count: 12)
        _ = pli.withUnsafeMutableBytes { PictureLossIndication.write(sender: 0xE, media: bSlot, into: $0) }
        h.send(pli, from: e.member.subscribe)
        h.send(nack(Array(1...100), slot: bSlot), from: e.member.subscribe)
        var sr = [UInt8](repeating: 0, count: 28)
        _ = sr.withUnsafeMutableBytes {
            SenderReport(ssrc: a.member.video.ssrc, ntpTimestamp: 1, rtpTimestamp: 1, packetCount: 1, octetCount: 1).write(into: $0)
        }
        h.clearReceived()
        h.send(sr, from: e.member.publish)
        h.run([a, b, e], from: 2, seconds: 0.3)
        #expect(a.plisReceived == plis && h.room.counters.retransmissions == resent)
        #expect(h.rtcp(to: b.member.subscribe.connection).allSatisfy { p in
            p.withUnsafeBytes { raw in SenderReport.parse(raw, RTCPPacket(packetType: raw[1], countOrFormat: raw[0] & 0x1F, range: 0..<raw.count)).successValue?.rtpTimestamp != 1 }
        }, "no forged sender report reaches B")
    }
}
