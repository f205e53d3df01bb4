import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// Rooms with H.264 (RFC 6184) and VP9 (RFC 9628) publishers next to VP8 ones, on virtual time: one slot carries
/// sources of different codecs under the subscriber's payload type for each, switching at key frames, and a
/// subscriber that cannot decode a source is told so and sent nothing of it.
@Suite struct CodecScenarioTests {
    nonisolated(unsafe) static let quiet = SpeechScript([], seed: 12)
    /// The subscriber's formats: VP8 under 98 (RTX 99), H.264 Constrained Baseline 3.1 under 110 (RTX 111) -
    /// payload types other than the publishers', so that the rewrite shows.
    static let vp8 = PayloadFormat(codec: .vp8, payloadType: 98, rtxPayloadType: 99)
    static let h264 = PayloadFormat(codec: .h264, payloadType: 110, rtxPayloadType: 111, h264: H264ProfileLevelID(hex: "42e01f"))

    /// Speech in the given stretches of the scenario, room noise elsewhere.
    static func speaking(_ s: SpeechScript, _ ranges: [Range<Double>]) -> (Double) -> ArraySlice<Int16>? {
        { t in ranges.contains { $0.contains(t) } ? s.frame(at: t, speaking: 0..<1000) : s.frame(at: t, speaking: 0..<0) }
    }

    func descriptor(_ p: (header: RTPHeader, packet: [UInt8]), _ codec: Codec) -> VideoDescriptor? {
        p.packet.withUnsafeBytes { VideoDescriptor.parse(codec, payload: UnsafeRawBufferPointer(rebasing: $0[p.header.payloadRange])).successValue }
    }

    /// Consecutive equal values collapsed: the payload types a slot went through, in order.
    func runs(_ values: [UInt8]) -> [UInt8] { values.reduce(into: []) { r, v in if r.last != v { r.append(v) } } }

    @Test func aSlotFollowsTheSpeakerAcrossH264AndVP8SwitchingPayloadTypeAtKeyFrames() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 3), sc = SpeechScript(Voices.c, seed: 5)
        let aMember = try h.join("A", video: PayloadFormat(codec: .h264, payloadType: 100, rtxPayloadType: 101),
                                 h264: H264ProfileLevelID(hex: "42e01f"))
        let a = SimulatedParticipant(aMember, audio: Self.speaking(sa, [0.2..<4, 9.5..<14]))
        let aVideo = CraftedVideoSender(aMember, codec: .h264, payloadType: 100)
        let c = SimulatedParticipant(try h.join("C", publishVideo: true), video: true, seed: 2, audio: Self.speaking(sc, [4.5..<9]))
        let bMember = try h.join("B", video: nil, videoSlots: 1, slotFormats: [Self.vp8, Self.h264])
        let b = SimulatedParticipant(bMember) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, c, b], crafted: [aVideo], from: 0, seconds: 14)

        let out = h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0))
        let types = out.map(\.header.payloadType)
        #expect(Set(types) == [98, 110], "only the subscriber's payload types: \(Set(types))")
        #expect(runs(types).suffix(3) == [110, 98, 110], "A's H.264, then C's VP8, then A's again: \(runs(types))")
        // Each run starts at a key frame of its codec; the stream stays one: sequence numbers +1, time forward.
        for i in out.indices where i == 0 || out[i].header.payloadType != out[i - 1].header.payloadType {
            let codec: Codec = out[i].header.payloadType == 110 ? .h264 : .vp8
            #expect(descriptor(out[i], codec)?.isKeyframeStart == true, "packet \(i) starts \(codec) at a key frame")
        }
        let seqs = out.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "sequence numbers continuous across codecs")
        let ts = out.map(\.header.timestamp)
        #expect(zip(ts, ts.dropFirst()).allSatisfy { Int32(bitPattern: $1 &- $0) >= 0 }, "timestamps never go back")
        // The VP8 stretch decodes as a receiver would decode it; the H.264 packets go out as A sent them.
        let checker = VP8StreamChecker()
        for p in out where p.header.payloadType == 98 { checker.receive(p.packet) }
        #expect(checker.errors.isEmpty && checker.decodedFrames > 50, "\(checker.decodedFrames) decoded, \(checker.errors)")
        let firstH264 = try #require(out.first { $0.header.payloadType == 110 })
        #expect(Array(firstH264.packet[firstH264.header.payloadRange]) == CraftedVideoSender.h264Frame(keyframe: true, index: 0, packets: 3)[0],
                "the key frame's STAP-A (SPS, PPS) as A sent it")
        #expect(aVideo.plisReceived >= 1 && c.plisReceived >= 1, "each switch asked the new source for a key frame")
        let codecs = h.talkerEvents(for: "B").compactMap { $0.2.first { $0.kind == .video }?.codec }
        #expect(codecs.map(\.codec).reduce(into: [Codec]()) { r, c in if r.last != c { r.append(c) } }.suffix(3) == [.h264, .vp8, .h264])
        #expect(codecs.allSatisfy { $0.decodable })
    }

    @Test func vp9PictureIDsAndTL0PicIdxStayContinuousAcrossSourceSwitches() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 3), sc = SpeechScript(Voices.c, seed: 5)
        let vp9 = PayloadFormat(codec: .vp9, payloadType: 98, rtxPayloadType: 99)
        let aMember = try h.join("A", video: vp9)
        let cMember = try h.join("C", video: vp9)
        let a = SimulatedParticipant(aMember, audio: Self.speaking(sa, [0.2..<4]))
        let c = SimulatedParticipant(cMember, audio: Self.speaking(sc, [4.5..<9]))
        // Far apart numbering, C's about to wrap its 15 bits.
        let aVideo = CraftedVideoSender(aMember, codec: .vp9, payloadType: 98, pictureID: 1000, tl0PicIdx: 10)
        let cVideo = CraftedVideoSender(cMember, codec: .vp9, payloadType: 98, pictureID: 32_700, tl0PicIdx: 250)
        let bMember = try h.join("B", video: nil, videoSlots: 1, slotFormats: [PayloadFormat(codec: .vp9, payloadType: 120)])
        let b = SimulatedParticipant(bMember) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, c, b], crafted: [aVideo, cVideo], from: 0, seconds: 9)

        let out = h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0))
        #expect(out.allSatisfy { $0.header.payloadType == 120 })
        let starts = out.compactMap { p -> VP9Descriptor? in
            guard case .vp9(let d)? = descriptor(p, .vp9), d.startOfLayerFrame else { return nil }
            return d
        }
        #expect(starts.filter { !$0.interPicturePredicted }.count >= 2, "a key frame to start, one at the switch to C")
        let pids = starts.compactMap(\.pictureID), tl0s = starts.compactMap(\.tl0PicIdx)
        #expect(pids.count > 150 && pids.count == starts.count)
        #expect(zip(pids, pids.dropFirst()).allSatisfy { ($1 &- $0) & 0x7FFF == 1 }, "picture IDs +1 per picture: \(pids.prefix(4))...")
        #expect(zip(tl0s, tl0s.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "TL0PICIDX +1 per base-layer picture")
        #expect(starts.allSatisfy { $0.pictureIDIs15Bit }, "the picture ID keeps its 15-bit width")
        let slot = try #require(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video })
        #expect(slot.participant == "C" && slot.codec == RoomEvent.SlotCodec(codec: .vp9, decodable: true))
        #expect(cVideo.plisReceived >= 1)
    }

    @Test func aVP8OnlySubscriberIsToldAnH264SourceIsUndecodableAndSentNothingOfIt() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 3), sc = SpeechScript(Voices.c, seed: 5)
        let aMember = try h.join("A", video: PayloadFormat(codec: .h264, payloadType: 100, rtxPayloadType: 101),
                                 h264: H264ProfileLevelID(hex: "42e01f"))
        let a = SimulatedParticipant(aMember, audio: Self.speaking(sa, [0.2..<5]))
        let aVideo = CraftedVideoSender(aMember, codec: .h264, payloadType: 100)
        let c = SimulatedParticipant(try h.join("C", publishVideo: true), video: true, seed: 2, audio: Self.speaking(sc, [5.5..<10]))
        let vp8Only = try h.join("B", video: nil, videoSlots: 1, slotFormats: [Self.vp8])
        let both = try h.join("D", video: nil, videoSlots: 1, slotFormats: [Self.vp8, Self.h264])
        let quiet = [vp8Only, both].map { m in SimulatedParticipant(m) { Self.quiet.frame(at: $0, speaking: 0..<0) } }
        h.run([a, c] + quiet, crafted: [aVideo], from: 0, seconds: 5)

        let slot = try #require(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video })
        #expect(slot.participant == "A" && slot.codec == RoomEvent.SlotCodec(codec: .h264, decodable: false),
                "the slot map names the talker and says B cannot decode it: \(slot)")
        #expect(h.slotPackets(vp8Only, ssrcOffset: SlotSSRC.video(0)).isEmpty, "nothing of A's H.264 reaches B")
        #expect(h.slotPackets(vp8Only, ssrcOffset: SlotSSRC.audio(0)).count > 100, "B still hears A")
        let toD = h.slotPackets(both, ssrcOffset: SlotSSRC.video(0))
        #expect(toD.count > 200 && toD.allSatisfy { $0.header.payloadType == 110 }, "D, which takes H.264, gets A's video")
        #expect(h.talkerEvents(for: "D").last?.2.first { $0.kind == .video }?.codec == RoomEvent.SlotCodec(codec: .h264, decodable: true))

        // C, in VP8, takes the floor: B's slot shows C, from a key frame.
        h.run([a, c] + quiet, crafted: [aVideo], from: 5, seconds: 5)
        let later = try #require(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video })
        #expect(later.participant == "C" && later.codec == RoomEvent.SlotCodec(codec: .vp8, decodable: true))
        let toB = h.slotPackets(vp8Only, ssrcOffset: SlotSSRC.video(0))
        let first = try #require(toB.first)
        #expect(toB.allSatisfy { $0.header.payloadType == 98 } && descriptor(first, .vp8)?.isKeyframeStart == true)
    }

    @Test func anH264ProfileTheSlotDoesNotOfferIsUndecodable() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 3)
        // A sends Main profile; B's slot takes Constrained Baseline only.
        let aMember = try h.join("A", video: PayloadFormat(codec: .h264, payloadType: 100), h264: H264ProfileLevelID(hex: "4d001f"))
        let a = SimulatedParticipant(aMember, audio: Self.speaking(sa, [0.2..<4]))
        let aVideo = CraftedVideoSender(aMember, codec: .h264, payloadType: 100)
        let bMember = try h.join("B", video: nil, videoSlots: 1, slotFormats: [Self.h264])
        let b = SimulatedParticipant(bMember) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], crafted: [aVideo], from: 0, seconds: 3)
        #expect(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video }?.codec == RoomEvent.SlotCodec(codec: .h264, decodable: false))
        #expect(h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0)).isEmpty)
    }

    @Test func aConstrainedHighPublisherIsDecodableByAHighSlotAndConstrainedBaselineGoesUnderItsOwnFormat() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 3), sc = SpeechScript(Voices.c, seed: 5)
        // A sends Constrained High, as Safari does; C Constrained Baseline. B's slot offers Baseline, High and
        // Constrained Baseline: a High decoder takes Constrained High (H.264 Annex A.2), and C's stream,
        // which all three decode, goes under the format that names its own profile.
        let aMember = try h.join("A", video: PayloadFormat(codec: .h264, payloadType: 100), h264: H264ProfileLevelID(hex: "640c1f"))
        let a = SimulatedParticipant(aMember, audio: Self.speaking(sa, [0.2..<4]))
        let aVideo = CraftedVideoSender(aMember, codec: .h264, payloadType: 100)
        let cMember = try h.join("C", video: PayloadFormat(codec: .h264, payloadType: 100), h264: H264ProfileLevelID(hex: "42e01f"))
        let c = SimulatedParticipant(cMember, audio: Self.speaking(sc, [4.5..<8]))
        let cVideo = CraftedVideoSender(cMember, codec: .h264, payloadType: 100)
        let formats = [PayloadFormat(codec: .h264, payloadType: 120, h264: H264ProfileLevelID(hex: "42001f")),
                       PayloadFormat(codec: .h264, payloadType: 122, h264: H264ProfileLevelID(hex: "64001f")), Self.h264]
        let bMember = try h.join("B", video: nil, videoSlots: 1, slotFormats: formats)
        let b = SimulatedParticipant(bMember) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, c, b], crafted: [aVideo, cVideo], from: 0, seconds: 4)
        let slot = try #require(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video })
        #expect(slot.participant == "A" && slot.codec == RoomEvent.SlotCodec(codec: .h264, decodable: true), "\(slot)")
        let fromA = h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0))
        #expect(fromA.count > 100 && fromA.allSatisfy { $0.header.payloadType == 122 }, "A's video under B's High format")

        h.run([a, c, b], crafted: [aVideo, cVideo], from: 4, seconds: 4)
        #expect(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video }?.participant == "C")
        #expect(runs(h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0)).map(\.header.payloadType)) == [122, 110],
                "C's Constrained Baseline under B's Constrained Baseline format, not the Baseline one listed first")
    }

    @Test func aNACKForAnH264PacketIsAnsweredUnderTheRTXPayloadTypeOfH264() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 3)
        let aMember = try h.join("A", video: PayloadFormat(codec: .h264, payloadType: 100, rtxPayloadType: 101),
                                 h264: H264ProfileLevelID(hex: "42e01f"))
        let a = SimulatedParticipant(aMember, audio: Self.speaking(sa, [0.2..<4]))
        let aVideo = CraftedVideoSender(aMember, codec: .h264, payloadType: 100)
        let bMember = try h.join("B", video: nil, videoSlots: 1, slotFormats: [Self.vp8, Self.h264])
        let b = SimulatedParticipant(bMember) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], crafted: [aVideo], from: 0, seconds: 2)
        let sent = try #require(h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0)).last)
        let base = bMember.audio.ssrc - 1
        var buf = [UInt8](repeating: 0, count: 32)
        let n = buf.withUnsafeMutableBytes { GenericNACK.write(sender: 0xB0B, media: base + SlotSSRC.video(0), sequences: [sent.header.sequenceNumber], into: $0) }!
        h.clearReceived()
        h.send(Array(buf[0..<n]), from: bMember.subscribe)
        let rtx = h.rtp(to: bMember.subscribe.connection).filter { $0.header.ssrc == base + 0x300 }
        #expect(rtx.count == 1 && rtx.first?.header.payloadType == 111, "H.264's RTX payload type, not VP8's 99")
        let osn = try #require(rtx.first).packet.withUnsafeBytes { $0.u16(rtx[0].header.payloadOffset) }
        #expect(osn == sent.header.sequenceNumber)
        #expect(Array(rtx[0].packet[(rtx[0].header.payloadOffset + 2)...]) == Array(sent.packet[sent.header.payloadRange]))
    }
}
