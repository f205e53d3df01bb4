import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

@Suite struct RTCPScenarioTests {
    /// A video publisher A (talking) and a subscriber B with one video slot, 2 s in.
    func setUp(subscribeProfile: SRTPProfile = .aesCM128HmacSHA1_80) throws -> (RoomHarness, SimulatedParticipant, SimulatedParticipant) {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 1), quiet = SpeechScript([], seed: 2)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0..<30) }
        // AES-CM: its video slot has no RTX, and only there is a NACK answered on the media SSRC (not under GCM).
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1, options: .init(subscribeProfile: subscribeProfile))) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        return (h, a, b)
    }

    func pli(from b: SimulatedParticipant, slot: UInt32) -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: 12)
        _ = buf.withUnsafeMutableBytes { PictureLossIndication.write(sender: 0xB0B, media: slot, into: $0) }
        return buf
    }

    func count(_ packets: [[UInt8]], type: RTCPPacketType, format: UInt8? = nil) -> Int {
        packets.reduce(0) { n, p in
            var c = 0
            _ = p.withUnsafeBytes { RTCPCompound.forEach($0) { pkt in
                if pkt.packetType == type.rawValue && (format == nil || pkt.countOrFormat == format!) { c += 1 }
            } }
            return n + c
        }
    }

    @Test func keyframeRequestsReachTheCurrentSourceAtMostOncePer200ms() throws {
        // media-core check 11, first half.
        let (h, a, b) = try setUp()
        let slotSSRC = b.member.audio.ssrc - 1 + SlotSSRC.video(0)
        let before = count(h.rtcp(to: a.member.publish.connection), type: .payloadFeedback, format: FeedbackFormat.pli)
        for i in 0..<10 {
            h.advance(by: 10)
            if i % 2 == 0 { h.send(pli(from: b, slot: slotSSRC), from: b.member.subscribe) }
        }
        let after = count(h.rtcp(to: a.member.publish.connection), type: .payloadFeedback, format: FeedbackFormat.pli)
        #expect(after - before == 1, "5 PLIs in 100 ms became \(after - before) upstream")
        h.advance(by: 250)
        h.send(pli(from: b, slot: slotSSRC), from: b.member.subscribe)
        #expect(count(h.rtcp(to: a.member.publish.connection), type: .payloadFeedback, format: FeedbackFormat.pli) - before == 2)
    }

    /// Runs 0.2 s from t = 2 s with the first packet of slot `ssrc` to `m` lost on the way: its sequence number.
    static func loseOneSlotPacket(_ h: RoomHarness, _ people: [SimulatedParticipant], to m: RoomHarness.Member, ssrc: UInt32) -> UInt16? {
        var lostSeq: UInt16?
        h.network = { dest, d in
            guard dest == m.subscribe.connection, lostSeq == nil, d.count > 12,
                  (UInt32(d[8]) << 24 | UInt32(d[9]) << 16 | UInt32(d[10]) << 8 | UInt32(d[11])) == ssrc else { return true }
            lostSeq = UInt16(d[2]) << 8 | UInt16(d[3])
            return false
        }
        h.run(people, from: 2, seconds: 0.2)
        return lostSeq
    }

    @Test func nackIsAnsweredFromHistoryAndNeverForwardedUpstream() throws {
        // media-core check 11, second half: a lost slot packet is NACKed and retransmitted by the node.
        let (h, a, b) = try setUp()
        let slotSSRC = b.member.audio.ssrc - 1 + SlotSSRC.video(0)
        h.clearReceived()
        let lost = try #require(Self.loseOneSlotPacket(h, [a, b], to: b.member, ssrc: slotSSRC))
        #expect(!h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).contains { $0.header.sequenceNumber == lost })
        var nack = [UInt8](repeating: 0, count: 32)
        let n = try #require(nack.withUnsafeMutableBytes {
            GenericNACK.write(sender: 0xB0B, media: slotSSRC, sequences: [lost], into: $0)
        })
        h.send(Array(nack[0..<n]), from: b.member.subscribe)
        h.send(Array(nack[0..<n]), from: b.member.subscribe)  // a repeat within one RTT is not answered again
        let video = h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0))
        #expect(video.filter { $0.header.sequenceNumber == lost }.count == 1)
        let checker = VP8StreamChecker()
        for p in video.sorted(by: { Int16(bitPattern: $0.header.sequenceNumber &- $1.header.sequenceNumber) < 0 }) {
            checker.receive(p.packet)
        }
        #expect(checker.errors.isEmpty && checker.incompleteFrames == 0, "the retransmission fills the gap")
        #expect(a.nacksReceived == 0)
        #expect(count(h.rtcp(to: a.member.publish.connection), type: .transportFeedback, format: FeedbackFormat.nack) == 0)
        #expect(h.room.counters.retransmissions == 1)
    }

    /// Under AES-GCM a slot without RTX does not answer a NACK: the resend would go out under the packet's own
    /// SSRC and number with other header bytes (a new transport-wide sequence or send time), the original's
    /// nonce with other associated data (RFC 7714 section 8.1). The drop is counted; nothing goes out again.
    @Test func underAESGCMASlotWithoutRTXDoesNotResendUnderTheSameNonce() throws {
        let (h, a, b) = try setUp(subscribeProfile: .aeadAES128GCM)
        let slotSSRC = b.member.audio.ssrc - 1 + SlotSSRC.video(0)
        let lost = try #require(Self.loseOneSlotPacket(h, [a, b], to: b.member, ssrc: slotSSRC))
        h.clearReceived()
        var nack = [UInt8](repeating: 0, count: 32)
        let n = try #require(nack.withUnsafeMutableBytes { GenericNACK.write(sender: 0xB0B, media: slotSSRC, sequences: [lost], into: $0) })
        h.send(Array(nack[0..<n]), from: b.member.subscribe)
        #expect(!h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).contains { $0.header.sequenceNumber == lost })
        #expect(h.room.counters.retransmissions == 0 && h.room.counters.drops[.resendNeedsRTX] == 1)
    }

    @Test func senderReportsAreRewrittenForTheSlotSoLipSyncSurvives() throws {
        let (h, a, b) = try setUp()
        // A's SR pairs NTP time with A's current RTP audio timestamp.
        let sr = SenderReport(ssrc: a.member.audio.ssrc, ntpTimestamp: 0xE000_0000_8000_0000,
                              rtpTimestamp: a.member.audio.timestamp, packetCount: 100, octetCount: 1000)
        var buf = [UInt8](repeating: 0, count: 64)
        let n = try #require(buf.withUnsafeMutableBytes { sr.write(into: $0) })
        h.clearReceived()
        h.send(Array(buf[0..<n]), from: a.member.publish)
        let got = h.rtcp(to: b.member.subscribe.connection)
        #expect(got.count == 1)
        let (pkts, _) = rtcpPackets(try #require(got.first))
        let out = try #require(got.first!.withUnsafeBytes { SenderReport.parse($0, pkts[0]) }.successValue)
        #expect(out.ssrc == b.member.audio.ssrc - 1 + SlotSSRC.audio(0))
        #expect(out.ntpTimestamp == sr.ntpTimestamp)
        // The slot's timestamps are A's plus a fixed offset; the SR must carry the same offset.
        h.clearReceived()
        let sa = SpeechScript(Voices.a, seed: 1)
        let aa = a
        aa.audioScript = { sa.frame(at: $0, speaking: 0..<30) }
        let sentTs = a.member.audio.timestamp
        h.run([a], from: 2, seconds: 0.02)
        let next = try #require(h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0)).first)
        #expect(next.header.timestamp &- sentTs == out.rtpTimestamp &- sr.rtpTimestamp)
    }

    @Test func fallingREMBRaisesABandwidthAlertAndStopsVideo() throws {
        var config = RoomConfiguration()
        config.streamBandwidthKbps = 300
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a, seed: 1), quiet = SpeechScript([], seed: 2)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 2)) { quiet.frame(at: $0, speaking: 0..<0) }
        func remb(_ bps: UInt64) {
            var buf = [UInt8](repeating: 0, count: 32)
            let n = buf.withUnsafeMutableBytes { REMB(senderSSRC: 0xB0B, bitrate: bps, ssrcs: [1]).write(into: $0) }!
            h.send(Array(buf[0..<n]), from: b.member.subscribe)
        }
        h.run([a, b], from: 0, seconds: 1)
        remb(2_000_000)
        h.run([a, b], from: 1, seconds: 9)  // past the 8 s in which a first estimate settles
        #expect(h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).count > 10)
        let alertsBefore = h.events.filter { if case .bandwidthAlert = $0.1 { return true } else { return false } }.count
        remb(100_000)  // below what is being sent: congestion
        h.flush()
        let alerts = h.events.compactMap { e -> (Int, Int, Int)? in
            if case .bandwidthAlert(let p, let bw, let s, let n) = e.1, p == "B" { return (bw, s, n) } else { return nil }
        }
        #expect(alerts.count == alertsBefore + 1)
        #expect(alerts.last.map { $0.0 == 100 && $0.2 == 0 } == true)
        let measured = h.room.downlinks.videoCosts.measure(h.room.participants.all.compactMap(\.publisher), fallbackKbps: 300, now: h.now)
            .perVideo(h.room.configuration.videoDegradation)
        #expect(measured != 300 && alerts.last?.1 == measured, "stream_bandwidth is what A's video measures (\(measured) kbps), not the configured 300")
        #expect(h.talkerEvents(for: "B").last?.1.first?.video == false, "audio-only now")
        h.clearReceived()
        h.run([a, b], from: 10, seconds: 1)
        #expect(h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).isEmpty)
        #expect(h.audio(to: b.member, from: a, slots: 1).count > 40)
    }

    @Test func publishersGetReceiverReportsWithLossAndHighestSequence() throws {
        let (h, a, _) = try setUp()
        let reports = h.rtcp(to: a.member.publish.connection).compactMap { p -> ReceiverReport? in
            let (pkts, _) = rtcpPackets(p)
            return pkts.first { $0.packetType == 201 }.flatMap { pkt in p.withUnsafeBytes { ReceiverReport.parse($0, pkt) }.successValue }
        }
        #expect(reports.count >= 1)
        let block = try #require(reports.last?.reports.first { $0.ssrc == a.member.audio.ssrc })
        #expect(block.fractionLost == 0 && block.cumulativeLost == 0)
        // The report is at most a second old: its highest sequence is within 50 packets of what A sent last.
        #expect(a.member.audio.sequenceNumber &- UInt16(truncatingIfNeeded: block.extendedHighestSequence) <= 60)
    }

    @Test func firOnASlotAlsoReachesItsSource() throws {
        let (h, a, b) = try setUp()
        let slotSSRC = b.member.audio.ssrc - 1 + SlotSSRC.video(0)
        var buf = [UInt8](repeating: 0, count: 32)
        let n = try #require(buf.withUnsafeMutableBytes { FullIntraRequest.write(sender: 0xB0B, target: slotSSRC, sequenceNumber: 1, into: $0) })
        h.advance(by: 300)
        let upstream = count(h.rtcp(to: a.member.publish.connection), type: .payloadFeedback, format: FeedbackFormat.pli)
        h.send(Array(buf[0..<n]), from: b.member.subscribe)
        #expect(count(h.rtcp(to: a.member.publish.connection), type: .payloadFeedback, format: FeedbackFormat.pli) == upstream + 1)
    }

    @Test func replayedDatagramIsDroppedAndNotForwardedTwice() throws {
        let (h, a, b) = try setUp()
        var w = a.member.audio
        let datagram = a.member.publish.protect(w.packet(OpusFrameEncoder().encode(ArraySlice(TestSignal.sine(dbfs: -20, seconds: 0.02))), level: 20))
        h.clearReceived()
        h.sendRaw(datagram, from: a.member.publish.connection)
        let once = h.rtp(to: b.member.subscribe.connection).count
        h.sendRaw(datagram, from: a.member.publish.connection)
        #expect(once == 1)
        #expect(h.rtp(to: b.member.subscribe.connection).count == once)
        #expect(h.room.counters.drops[.srtpReplay] == 1)
    }
}

@Suite struct MidBindingTests {
    @Test func aTrackWithoutSignalledSSRCIsBoundFromItsFirstAuthenticatedPacket() throws {
        let h = try RoomHarness()
        let b = try h.join("B", audioSlots: 1)
        try h.room.admit("A", now: h.now)
        let pub = SimulatedClient(connection: ConnectionID(900), seed: 900)
        try h.room.sessions.attachPublisher("A", connection: pub.connection, tracks: [
            TrackDescription(codec: .opus, ssrc: nil, payloadType: 111, audioLevelExtensionID: 1, mid: "0", midExtensionID: 4),
        ], now: h.now)
        try h.room.sessions.setSRTP(connection: pub.connection, inbound: pub.nodeInbound, outbound: pub.nodeOutbound)
        func packet(ssrc: UInt32, seq: UInt16, mid: String?) -> [UInt8] {
            var exts: [(id: UInt8, value: [UInt8])] = [(1, [20])]
            if let mid { exts.append((4, Array(mid.utf8))) }
            var out = [UInt8](repeating: 0, count: 200)
            let n = [UInt8]([0x78, 0x80, 1, 2, 3]).withUnsafeBytes { p in
                out.withUnsafeMutableBytes {
                    RTPPacketBuilder(payloadType: 111, sequenceNumber: seq, timestamp: UInt32(seq) * 960, ssrc: ssrc)
                        .write(extensions: exts, payload: p, into: $0)
                }
            }!
            return Array(out[0..<n])
        }
        // A forged packet that names the mid but fails authentication binds nothing.
        var forged = pub.protect(packet(ssrc: 0xBAD, seq: 1, mid: "0"))
        forged[forged.count - 1] ^= 1
        h.sendRaw(forged, from: pub.connection)
        #expect(h.room.counters.drops[.srtpAuthFailed] == 1)
        // The real first packet (with mid) binds; later packets without the extension follow by SSRC.
        h.send(packet(ssrc: 0xA11CE, seq: 2, mid: "0"), from: pub)
        for seq in 3...30 { h.send(packet(ssrc: 0xA11CE, seq: UInt16(seq), mid: nil), from: pub); h.advance(by: 20) }
        #expect(h.room.counters.drops[.unknownSSRC] == 0)
        #expect(h.slotPackets(b, ssrcOffset: SlotSSRC.audio(0)).count >= 25)
        // Another SSRC naming no awaiting mid stays unknown.
        h.send(packet(ssrc: 0xB0B, seq: 1, mid: "9"), from: pub)
        #expect(h.room.counters.drops[.unknownSSRC] == 1)
    }
}
