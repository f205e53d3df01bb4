import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

@Suite struct VideoScenarioTests {
    /// Decodes one video slot's output with libvpx as a receiver would.
    func check(_ h: RoomHarness, _ m: RoomHarness.Member, slot: UInt32 = 0) -> VP8StreamChecker {
        let checker = VP8StreamChecker()
        for p in h.slotPackets(m, ssrcOffset: SlotSSRC.video(slot)) { checker.receive(p.packet) }
        return checker
    }

    @Test func videoSlotSwitchesOnlyAtAKeyframeAndDecodesCleanlyAcrossSwitches() throws {
        // media-core check 10: seq contiguous, ts increasing, picture ID and TL0PICIDX continuous, decodable.
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a), sc = SpeechScript(Voices.c, seed: 5), quiet = SpeechScript([])
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0.2..<4) }
        let c = SimulatedParticipant(try h.join("C", publishVideo: true), video: true, seed: 2) { sc.frame(at: $0, speaking: 4.5..<9) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, c, b], from: 0, seconds: 9)

        let out = h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0))
        let checker = check(h, b.member)
        #expect(checker.errors.isEmpty, "\(checker.errors)")
        #expect(checker.incompleteFrames == 0)
        #expect(checker.decodedFrames > 150, "decoded \(checker.decodedFrames)")
        #expect(checker.keyframes >= 2, "one to start, one at the switch to C")
        let pids = checker.pictureIDs
        #expect(zip(pids, pids.dropFirst()).allSatisfy { ($1 &- $0) & 0x7FFF == 1 }, "picture IDs continuous: \(pids.prefix(5))...")
        let seqs = out.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 })
        let ts = out.map(\.header.timestamp)
        #expect(zip(ts, ts.dropFirst()).allSatisfy { Int32(bitPattern: $1 &- $0) >= 0 })
        // The first packet of the slot is a keyframe start (S=1, PID=0, P=0).
        let first = try #require(out.first)
        let d = first.packet.withUnsafeBytes { VP8Descriptor.parse(UnsafeRawBufferPointer(rebasing: $0[first.header.payloadRange])) }
        #expect(d.successValue?.isKeyframeStart == true)
        #expect(c.plisReceived >= 1, "the node asked C for a keyframe when its slot switched")
        let map = h.talkerEvents(for: "B").last?.2.first { $0.kind == .video }
        #expect(map?.participant == "C")
    }

    /// The key frame C sends when B's slot is to switch to it loses its first packet on the way; the node asks for
    /// it (NACK) and C's RTX repair comes back after the rest of the key frame. That late start must not be where
    /// the slot switches (what follows it refers to a picture B never gets whole), nor count as the key frame
    /// the node asked for: the node asks again, and B's slot switches at a key frame in order and decodes.
    @Test func aRepairedKeyFrameStartNeitherSwitchesASlotNorAnswersTheKeyFrameRequest() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a), sc = SpeechScript(Voices.c, seed: 5), quiet = SpeechScript([])
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0.2..<4) }
        let c = SimulatedParticipant(try h.join("C", publishVideo: true, options: .init(repair: true)), video: true, seed: 2) {
            sc.frame(at: $0, speaking: 4.5..<12)
        }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        var lost: [UInt8]?
        h.uplink = { conn, plain in
            guard conn == c.member.publish.connection, lost == nil, c.keyframesSent > 1 else { return true }
            let start = plain.withUnsafeBytes { raw -> Bool in
                guard case .success(let hd) = RTPHeader.parse(raw), hd.payloadType == 96 else { return false }
                return VP8Descriptor.parse(UnsafeRawBufferPointer(rebasing: raw[hd.payloadRange])).successValue?.isKeyframeStart == true
            }
            if start { lost = plain }
            return !start
        }
        var t = 0.0
        while lost == nil, t < 9 {
            h.run([a, c, b], from: t, seconds: 0.02)
            t += 0.02
        }
        let keyframeStart = try #require(lost, "C sent a key frame for B's slot")
        h.run([a, c, b], from: t, seconds: 0.04)  // the rest of that key frame, and C's next frame
        t += 0.04
        #expect(h.room.counters.nacksSent >= 1)
        // C's repair on its RTX stream (RFC 4588): the original sequence number first.
        let hd = try #require(keyframeStart.withUnsafeBytes { RTPHeader.parse($0).successValue })
        var rtx = c.member.video
        rtx.ssrc = c.member.video.ssrc + 1
        rtx.payloadType = 97
        rtx.timestamp = hd.timestamp
        h.send(rtx.packet([UInt8(hd.sequenceNumber >> 8), UInt8(hd.sequenceNumber & 0xFF)] + Array(keyframeStart[hd.payloadRange]),
                          marker: hd.marker), from: c.member.publish)
        #expect(h.room.counters.repairsIn == 1)
        let keyframes = c.keyframesSent
        h.run([a, c, b], from: t, seconds: 2)
        #expect(c.keyframesSent > keyframes, "the node asked C again, and C sent another key frame")
        #expect(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video }?.participant == "C")
        let checker = check(h, b.member)
        #expect(checker.errors.isEmpty, "\(checker.errors)")
        #expect(checker.incompleteFrames == 0, "no picture begun at the repaired start")
        #expect(checker.keyframes >= 2 && checker.decodedFrames > 120, "\(checker.keyframes) key frames, \(checker.decodedFrames) decoded")
    }

    @Test func videoMutedParticipantsDoNotOccupyVideoSlots() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 11), quiet = SpeechScript([], seed: 12)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0.2..<10) }
        let c = SimulatedParticipant(try h.join("C", publishVideo: true), video: true, seed: 2) { quiet.frame(at: $0, speaking: 0..<0) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 2, videoSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, c, b], from: 0, seconds: 3)
        #expect(h.talkerEvents(for: "B").last?.1.first { $0.video }?.participant == "A")
        // A turns its camera off (stops sending video): after the stale time its slot goes to C.
        a.sendsVideo = false
        h.run([a, c, b], from: 3, seconds: 4)
        let last = try #require(h.talkerEvents(for: "B").last)
        #expect(last.1.first { $0.participant == "A" }?.video == false)
        #expect(last.2.first { $0.kind == .video }?.participant == "C")
    }

    @Test func hardMutingTheDominantStopsEveryPacketAndVideoResumesOnlyFromAKeyframe() throws {
        // media-core check 12, whatever the client sends (it keeps sending with its level extension).
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 11), quiet = SpeechScript([], seed: 12)
        let m = SimulatedParticipant(try h.join("M", role: .moderator)) { quiet.frame(at: $0, speaking: 0..<0) }
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0.2..<20) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 2, videoSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([m, a, b], from: 0, seconds: 3)
        #expect(h.dominantSpeakers.last?.1 == "A")

        #expect(throws: RoomError(.hardMuteAudioUnauthorized, .unauthorized, "B is not a moderator")) {
            try h.room.moderation.hardMute(by: "B", target: "A", audio: true, video: nil, now: h.now, into: h.batch)
        }
        try h.room.moderation.hardMute(by: "M", target: "A", audio: true, video: true, now: h.now, into: h.batch)
        h.flush()
        #expect(h.dominantSpeakers.last?.1 == nil, "A leaves candidacy at once")
        h.clearReceived()
        h.run([m, a, b], from: 3, seconds: 3)
        #expect(h.audio(to: b.member, from: a, slots: 2).isEmpty, "no packet of A egresses while muted")
        let silence = (0..<2).flatMap { h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(UInt32($0))) }
            .filter { Array($0.packet[$0.header.payloadRange]) == [0xF8, 0xFF, 0xFE] }
        #expect(silence.count >= 1 && silence.count <= h.room.configuration.silenceFramesOnMute, "a few silence frames, then nothing: \(silence.count)")
        #expect(h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).isEmpty)
        #expect(h.room.counters.drops[.hardMuted] > 200)

        try h.room.moderation.hardMute(by: "M", target: "A", audio: false, video: false, now: h.now, into: h.batch)
        h.flush()
        h.clearReceived()
        h.run([m, a, b], from: 6, seconds: 3)
        let resumed = h.audio(to: b.member, from: a, slots: 2)
        #expect(resumed.count > 100)
        #expect(resumed.first?.header.marker == true, "audio resumes with the marker bit")
        let video = h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0))
        let first = try #require(video.first)
        let d = first.packet.withUnsafeBytes { VP8Descriptor.parse(UnsafeRawBufferPointer(rebasing: $0[first.header.payloadRange])) }
        #expect(d.successValue?.isKeyframeStart == true, "video resumes only from a keyframe")
    }

    @Test func aKeyframeThatArrivedBeforeTheSubscribersKeysIsAskedForAgain() throws {
        // The node maps a subscriber's slots (and asks their sources for keyframes) when it answers the
        // offer, but can send the subscriber nothing until DTLS has given its SRTP keys. The keyframe that
        // answers the PLI comes in between and reaches nobody; a publisher like Chromium sends no other
        // keyframe unless asked, so the slot would wait forever.
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 11), quiet = SpeechScript([], seed: 12)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0.2..<20) }
        h.run([a], from: 0, seconds: 2)
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1, keySubscription: false)) { quiet.frame(at: $0, speaking: 0..<0) }
        #expect(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video }?.participant == "A", "B's video slot is A's")
        let keyframesBefore = a.keyframesSent
        h.run([a, b], from: 2, seconds: 0.5)  // the handshake takes half a second
        #expect(a.keyframesSent > keyframesBefore, "A answered the PLI while B had no keys")
        try h.keySubscription(of: b.member)
        h.run([a, b], from: 2.5, seconds: 2)
        let checker = check(h, b.member)
        #expect(checker.keyframes >= 1 && checker.decodedFrames > 40,
                "B decodes A's video once keyed: \(checker.keyframes) keyframes, \(checker.decodedFrames) frames decoded")
        #expect(checker.errors.isEmpty, "\(checker.errors)")
    }

    @Test func hardMuteDropsPacketsWithoutTheLevelExtensionToo() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 11), quiet = SpeechScript([], seed: 12)
        _ = try h.join("M", role: .moderator)
        let a = SimulatedParticipant(try h.join("A", levelExtension: false), levelExtension: false) { sa.frame(at: $0, speaking: 0..<20) }
        let b = SimulatedParticipant(try h.join("B")) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        try h.room.moderation.hardMute(by: "M", target: "A", audio: true, video: nil, now: h.now, into: h.batch)
        h.flush()
        h.clearReceived()
        h.run([a, b], from: 2, seconds: 2)
        #expect(h.audio(to: b.member, from: a).isEmpty)
        #expect(h.room.counters.drops[.hardMuted] >= 90)
        let stats = h.room.stats()
        #expect(stats.first { $0.participant == "A" }?.drops[.hardMuted] == h.room.counters.drops[.hardMuted],
                "the stats name whose packets were dropped")
        #expect(stats.first { $0.participant == "B" }?.drops[.hardMuted] == nil)
    }
}
