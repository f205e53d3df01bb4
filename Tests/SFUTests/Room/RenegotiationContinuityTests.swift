import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// What a renegotiation must not break: the RTP streams a client keeps sending, and the ones it keeps
/// receiving, after an answer that described them anew (issue 23, defects 3-5). Each test failed on the code
/// before: see the note in the issue.
@Suite struct RenegotiationContinuityTests {
    nonisolated(unsafe) static let quiet = SpeechScript([], seed: 3)

    // MARK: A published track described anew (defect 3)

    @Test func aPublishedTrackDescribedAnewAfterItsSequenceNumbersWrappedStillAuthenticates() throws {
        // The browser turns RED on for its microphone and keeps the SSRC: the track was re-created and libsrtp
        // restarted that SSRC at rollover counter 0, so once its sequence numbers had wrapped every packet
        // failed authentication, for good.
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A")) { s.frame(at: $0, speaking: 0..<30) }
        a.member.audio.sequenceNumber = 65_450
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 3)  // 150 packets: past the wrap
        #expect(h.room.counters.drops[.srtpAuthFailed] == 0)
        try h.room.sessions.attachPublisher("A", connection: a.member.publish.connection, tracks: [
            TrackDescription(codec: .opus, ssrc: a.member.audio.ssrc, payloadType: 111, audioLevelExtensionID: 1, redPayloadType: 63),
        ], now: h.now)
        h.clearReceived()
        h.run([a, b], from: 3, seconds: 3)
        #expect(h.room.counters.drops[.srtpAuthFailed] == 0, "every packet A keeps sending on its SSRC authenticates")
        let got = h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0))
        #expect(got.count >= 140, "B hears A through the renegotiation (\(got.count) packets)")
        let seqs = got.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "the slot stays one stream")
        #expect(got.filter(\.header.marker).isEmpty, "the slot was not switched: no new talkspurt")
    }

    @Test func aVideoTrackDescribedAnewKeepsItsSlotsWithoutAKeyFrame() throws {
        // Feedback changed (NACK offered now) on a camera whose sequence numbers wrapped: the stream, its RTX
        // and the slot showing it go on; nothing waits for a key frame.
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<30) }
        a.member.video.sequenceNumber = 65_460  // ~25 packets a second: wrapped before the renegotiation
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 4)
        let keyframes = a.keyframesSent
        var video = TrackDescription(codec: .vp8, ssrc: a.member.video.ssrc, rtxSSRC: a.member.video.ssrc + 1, payloadType: 96,
                                   rtxPayloadType: 97, nack: true)
        video.remb = true
        try h.room.sessions.attachPublisher("A", connection: a.member.publish.connection, tracks: [
            TrackDescription(codec: .opus, ssrc: a.member.audio.ssrc, payloadType: 111, audioLevelExtensionID: 1), video,
        ], now: h.now)
        h.clearReceived()
        h.run([a, b], from: 4, seconds: 3)
        #expect(h.room.counters.drops[.srtpAuthFailed] == 0)
        let got = h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0))
        #expect(got.count > 70, "B's video slot goes on (\(got.count) packets)")
        let seqs = got.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "one continuous stream")
        #expect(a.keyframesSent - keyframes <= 1, "no key frame was needed to go on (\(a.keyframesSent - keyframes) sent)")
    }

    @Test func aRenegotiationThatDropsATrackRetiresItsSSRCsAndKeepsTheOthers() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<30) }
        a.member.audio.sequenceNumber = 65_450
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        let conn = try #require(h.room.sessions.connection(a.member.publish.connection))
        #expect(conn.inboundSSRCs.ssrcs.isSuperset(of: [a.member.audio.ssrc, a.member.video.ssrc]))
        // The camera goes; the microphone changes its description.
        try h.room.sessions.attachPublisher("A", connection: a.member.publish.connection, tracks: [
            TrackDescription(codec: .opus, ssrc: a.member.audio.ssrc, payloadType: 111, audioLevelExtensionID: nil),
        ], now: h.now)
        #expect(conn.inboundSSRCs.retired == [a.member.video.ssrc, a.member.video.ssrc + 1] && conn.publisher?.tracksBySSRC[a.member.video.ssrc] == nil,
                "the dropped camera's SSRC no longer routes; its SRTP stream is retired, kept until room is needed")
        #expect(conn.inboundSSRCs.contains(a.member.audio.ssrc) && !conn.inboundSSRCs.retired.contains(a.member.audio.ssrc), "the microphone's is in use")
        a.sendsVideo = false
        h.clearReceived()
        h.run([a, b], from: 2, seconds: 2)
        #expect(h.room.counters.drops[.srtpAuthFailed] == 0)
        #expect(h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0)).count >= 90)
    }

    @Test func aTrackSetInactiveAndBackAfterItsSequenceNumbersWrappedStillAuthenticates() throws {
        // A transceiver set inactive, then sendonly again, comes back on its SSRC: its libsrtp stream was freed
        // with the track, and the client's rollover counter (1 after the wrap) no longer matched the node's (0).
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<30) }
        a.member.audio.sequenceNumber = 65_450
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        let audio = TrackDescription(codec: .opus, ssrc: a.member.audio.ssrc, payloadType: 111, audioLevelExtensionID: 1)
        let video = TrackDescription(codec: .vp8, ssrc: a.member.video.ssrc, rtxSSRC: a.member.video.ssrc + 1, payloadType: 96, rtxPayloadType: 97)
        try h.room.sessions.attachPublisher("A", connection: a.member.publish.connection, tracks: [video], now: h.now)
        let script = a.audioScript
        a.audioScript = { _ in nil }  // the microphone's transceiver is inactive: nothing sent
        h.run([a, b], from: 2, seconds: 1)
        try h.room.sessions.attachPublisher("A", connection: a.member.publish.connection, tracks: [audio, video], now: h.now)
        a.audioScript = script
        h.clearReceived()
        h.run([a, b], from: 3, seconds: 2)
        #expect(h.room.counters.drops[.srtpAuthFailed] == 0, "the microphone's packets authenticate again")
        #expect(h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0)).count >= 90)
    }

    @Test func aPublisherWhoseEveryTransceiverIsPausedPublishesNothingAndComesBackOnItsSSRC() throws {
        // A re-offer whose only m-line is inactive (the browser paused its one transceiver) was refused (6005)
        // and the track it paused stayed published. It ends the track now; sendonly again resumes it.
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A")) { s.frame(at: $0, speaking: 0..<30) }
        a.member.audio.sequenceNumber = 65_450
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        let conn = try #require(h.room.sessions.connection(a.member.publish.connection))
        try h.room.sessions.attachPublisher("A", connection: a.member.publish.connection, tracks: [], now: h.now)
        #expect(conn.publisher?.tracksBySSRC.isEmpty ?? true, "nothing published while paused")
        let script = a.audioScript
        a.audioScript = { _ in nil }
        h.clearReceived()
        h.run([a, b], from: 2, seconds: 1)
        #expect(h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0)).count < 5, "B hears nothing of a paused microphone")
        try h.room.sessions.attachPublisher("A", connection: a.member.publish.connection, tracks: [
            TrackDescription(codec: .opus, ssrc: a.member.audio.ssrc, payloadType: 111, audioLevelExtensionID: 1),
        ], now: h.now)
        a.audioScript = script
        h.clearReceived()
        h.run([a, b], from: 3, seconds: 2)
        #expect(h.room.counters.drops[.srtpAuthFailed] == 0, "the microphone comes back on its SSRC and rollover counter")
        #expect(h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0)).count >= 90)
    }

    @Test func retiredStreamsAreFreedOldestFirstWhenANewSSRCNeedsRoom() throws {
        var streams = InboundStreams()
        for s: UInt32 in [1, 2, 3, 4] {
            let ok = streams.reserve(s, limit: 4, srtp: nil)
            #expect(ok)
            streams.use(s)
        }
        let full = streams.reserve(5, limit: 4, srtp: nil)
        #expect(!full, "full, nothing retired: refused")
        streams.retire(2)
        streams.retire(1)
        let freed = streams.reserve(5, limit: 4, srtp: nil)
        #expect(freed)
        streams.use(5)
        #expect(streams.ssrcs == [1, 3, 4, 5] && streams.retired == [1] && streams.evictions == 1, "the oldest retired (2) went")
        streams.use(1)
        #expect(streams.retired.isEmpty, "a retired SSRC used again is kept")
        let again = streams.reserve(6, limit: 4, srtp: nil)
        #expect(!again)
    }

    // MARK: A subscriber's slot described anew (defect 4)

    @Test func aSlotDescribedAnewAfterSourceSwitchesKeepsItsSequence() throws {
        // A and C talk in turns to B's one audio slot (each switch moves the rewriter's offsets); then B's
        // browser re-offers with another payload type for the slot's mid. A new slot started at offset 0: its
        // sequence numbers went backwards and libsrtp refused to protect them (replay) for up to 2^15 packets.
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 1), sc = SpeechScript(Voices.c, seed: 2)
        let a = SimulatedParticipant(try h.join("A")) { sa.frame(at: $0, speaking: 0..<3) }
        let c = SimulatedParticipant(try h.join("C")) { sc.frame(at: $0, speaking: 3..<6) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        a.member.audio.sequenceNumber = 40_000
        h.run([a, c, b], from: 0, seconds: 6)
        let before = h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0))
        #expect(Set(before.compactMap { h.payloadSenders[Array($0.packet[$0.header.payloadRange])] }).count >= 2, "both were heard")
        let last = try #require(before.last?.header.sequenceNumber)
        let slotSSRC = b.member.audio.ssrc - 1 + SlotSSRC.audio(0)
        try h.room.sessions.attachSubscriber("B", connection: b.member.subscribe.connection, slots: [
            SlotDescription(codec: .opus, mid: "a0", ssrc: slotSSRC, payloadType: 110, audioLevelExtensionID: 3),
        ], now: h.now, into: h.batch)
        h.clearReceived()
        let sa2 = SpeechScript(Voices.a, seed: 4)
        a.audioScript = { sa2.frame(at: $0, speaking: 6..<9) }
        c.audioScript = { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, c, b], from: 6, seconds: 3)
        #expect(h.room.counters.drops[.srtpReplay] == 0, "nothing the slot sends is refused as a replay")
        let after = h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0))
        #expect(after.count >= 120, "B keeps hearing the slot (\(after.count) packets)")
        #expect(after.allSatisfy { $0.header.payloadType == 110 }, "in the payload type of the new description")
        let gap = (after.first?.header.sequenceNumber ?? 0) &- last
        #expect(gap >= 1 && gap < 100, "sequence numbers go on from \(last), not back (\(after.first?.header.sequenceNumber ?? 0))")
    }

    @Test func aVideoSlotDescribedAnewAfterASwitchKeepsItsStreamAndShowsWhatItShowed() throws {
        // A then C take B's one video slot (the switch moves its rewriter's offsets); B's browser then adds RTX
        // to the m-line, keeping mid and SSRC.
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 1), sc = SpeechScript(Voices.c, seed: 2)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0..<3) }
        let c = SimulatedParticipant(try h.join("C", publishVideo: true), video: true, seed: 2) { sc.frame(at: $0, speaking: 3..<30) }
        a.member.video.sequenceNumber = 20_000
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, c, b], from: 0, seconds: 7)
        #expect(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video }?.participant == "C", "the slot moved to C")
        let before = h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0))
        let last = try #require(before.last?.header)
        let base = b.member.audio.ssrc - 1
        try h.room.sessions.attachSubscriber("B", connection: b.member.subscribe.connection, slots: [
            SlotDescription(codec: .opus, mid: "a0", ssrc: base + SlotSSRC.audio(0), payloadType: 109, audioLevelExtensionID: 3),
            SlotDescription(codec: .vp8, mid: "v0", ssrc: base + SlotSSRC.video(0), payloadType: 98, absSendTimeExtensionID: 4,
                            rtxPayloadType: 99, rtxSSRC: base + 0x300),
        ], now: h.now, into: h.batch)
        let keyframes = c.keyframesSent
        h.clearReceived()
        h.run([a, c, b], from: 7, seconds: 2)
        let after = h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0))
        #expect(after.count > 45, "B's video slot goes on (\(after.count) packets)")
        #expect(after.first?.header.sequenceNumber == last.sequenceNumber &+ 1, "the stream goes on where it was")
        #expect(c.keyframesSent - keyframes <= 1, "what the slot showed goes on without a key frame")
        #expect(h.room.counters.drops[.srtpReplay] == 0)
    }

    // MARK: MID- and RID-bound tracks that move to a new SSRC (defect 5)

    /// A VP8 key frame packet of a track bound by extensions (MID id 4, RID id 10).
    static func packet(ssrc: UInt32, seq: UInt16, ts: UInt32, pictureID: UInt16, _ exts: [(id: UInt8, value: [UInt8])]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 200)
        let payload: [UInt8] = [0x90, 0x80, 0x80 | UInt8(pictureID >> 8 & 0x7F), UInt8(pictureID & 0xFF), 0x10, 0x00] + [UInt8](repeating: 7, count: 20)
        let n = payload.withUnsafeBytes { pl in
            out.withUnsafeMutableBytes {
                RTPPacketBuilder(payloadType: 96, sequenceNumber: seq, timestamp: ts, ssrc: ssrc, marker: true).write(extensions: exts, payload: pl, into: $0)
            }
        }!
        return Array(out[0..<n])
    }

    @Test func aRIDBoundLayerFollowsItsSenderToANewSSRC() throws {
        // A sender resolving an SSRC collision (RFC 3550 section 8.2) moves a layer to a new SSRC, with the
        // RID on its first packets: it was dropped as unknown_ssrc until a new transport.
        let h = try RoomHarness()
        let p = try h.join("P")
        var tracks = [TrackDescription(codec: .opus, ssrc: p.audio.ssrc, payloadType: 111, audioLevelExtensionID: 1)]
        for (i, rid) in ["l", "h"].enumerated() {
            var t = TrackDescription(codec: .vp8, ssrc: nil, payloadType: 96, mid: "1", midExtensionID: 4)
            t.simulcast = SimulcastLayer(index: i, rid: rid, ridExtensionID: 10, repairedRidExtensionID: 11)
            tracks.append(t)
        }
        try h.room.sessions.attachPublisher("P", connection: p.publish.connection, tracks: tracks, now: h.now)
        let mid: (id: UInt8, value: [UInt8]) = (4, Array("1".utf8))
        let h1: (id: UInt8, value: [UInt8]) = (10, Array("h".utf8))
        h.send(Self.packet(ssrc: 0x5001, seq: 1, ts: 0, pictureID: 1, [mid, h1]), from: p.publish)
        h.send(Self.packet(ssrc: 0x5001, seq: 2, ts: 3000, pictureID: 2, []), from: p.publish)
        let layer = try #require(h.room.participants.lookup("P")?.videoTracks.last)
        #expect(layer.ssrc == 0x5001)
        // The move: new SSRC, new sequence numbers, the RID on its first packets.
        h.advance(by: 100)
        h.send(Self.packet(ssrc: 0x7001, seq: 900, ts: 6000, pictureID: 3, [mid, h1]), from: p.publish)
        h.send(Self.packet(ssrc: 0x7001, seq: 901, ts: 9000, pictureID: 4, []), from: p.publish)
        #expect(layer.ssrc == 0x7001, "the layer follows its RID to the new SSRC")
        #expect(h.room.counters.drops[.unknownSSRC] == 0)
        #expect(h.room.counters.ssrcRebinds == 1)
        let conn = try #require(h.room.sessions.connection(p.publish.connection))
        #expect(conn.inboundSSRCs.retired == [0x5001] && conn.publisher?.tracksBySSRC[0x5001] == nil, "the old SSRC no longer routes; its stream is retired")
        // A second move within a second is refused (a client changing SSRCs on every packet costs one a second).
        h.send(Self.packet(ssrc: 0x7002, seq: 5, ts: 12000, pictureID: 5, [mid, h1]), from: p.publish)
        #expect(h.room.counters.drops[.ssrcRebindLimit] == 1 && layer.ssrc == 0x7001)
        h.advance(by: 1000)
        h.send(Self.packet(ssrc: 0x7002, seq: 6, ts: 15000, pictureID: 6, [mid, h1]), from: p.publish)
        #expect(layer.ssrc == 0x7002 && h.room.counters.ssrcRebinds == 2)
        // A renegotiation that changes the layers' description carries the learned SSRC over.
        var again = [tracks[0]]
        for (i, rid) in ["l", "h"].enumerated() {
            var t = TrackDescription(codec: .vp8, ssrc: nil, payloadType: 96, mid: "1", midExtensionID: 4, nack: true)
            t.simulcast = SimulcastLayer(index: i, rid: rid, ridExtensionID: 10, repairedRidExtensionID: 11)
            again.append(t)
        }
        try h.room.sessions.attachPublisher("P", connection: p.publish.connection, tracks: again, now: h.now)
        let renewed = try #require(h.room.participants.lookup("P")?.videoTracks.last)
        #expect(renewed.ssrc == 0x7002, "the RID binding survives the renegotiation")
        h.send(Self.packet(ssrc: 0x7002, seq: 7, ts: 18000, pictureID: 7, []), from: p.publish)
        #expect(h.room.counters.drops[.unknownSSRC] == 0 && h.room.counters.drops[.srtpAuthFailed] == 0)
    }

    @Test func aMIDBoundVideoMovedToANewSSRCReachesItsSlotWithoutAGap() throws {
        let h = try RoomHarness()
        let p = try h.join("P")
        let b = try h.join("B", audioSlots: 1, videoSlots: 1)
        try h.room.sessions.attachPublisher("P", connection: p.publish.connection, tracks: [
            TrackDescription(codec: .opus, ssrc: p.audio.ssrc, payloadType: 111, audioLevelExtensionID: 1),
            TrackDescription(codec: .vp8, ssrc: nil, payloadType: 96, mid: "1", midExtensionID: 4),
        ], now: h.now)
        let mid: (id: UInt8, value: [UInt8]) = (4, Array("1".utf8))
        var seq: UInt16 = 100, ts: UInt32 = 0, pic: UInt16 = 1
        func frames(_ n: Int, ssrc: UInt32, tagged: Int) {
            for k in 0..<n {
                h.send(Self.packet(ssrc: ssrc, seq: seq, ts: ts, pictureID: pic, k < tagged ? [mid] : []), from: p.publish)
                seq &+= 1; ts &+= 3000; pic &+= 1
                h.advance(by: 33)
            }
        }
        frames(30, ssrc: 0x5001, tagged: 1)
        #expect(h.slotPackets(b, ssrcOffset: SlotSSRC.video(0)).count >= 25, "the slot shows P")
        let last = try #require(h.slotPackets(b, ssrcOffset: SlotSSRC.video(0)).last?.header.sequenceNumber)
        h.clearReceived()
        seq = 30_000  // a new SSRC starts a sequence space of its own
        frames(30, ssrc: 0x9009, tagged: 2)
        let after = h.slotPackets(b, ssrcOffset: SlotSSRC.video(0))
        #expect(after.count >= 29, "the slot goes on from the new SSRC (\(after.count) packets)")
        #expect(after.first?.header.sequenceNumber == last &+ 1, "without a gap or a jump in what B receives")
        #expect(h.room.counters.drops[.unknownSSRC] == 0)
    }
}
