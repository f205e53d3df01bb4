import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// Layer caps per slot on virtual time: a VP9 source with two spatial and three temporal layers, and a
/// subscriber whose downlink falls below it and comes back (its REMB). The slot sends fewer layers rather than
/// no video, one continuous stream, and takes them back, the spatial one at a key frame it asks for.
@Suite struct LayerCapScenarioTests {
    nonisolated(unsafe) static let quiet = SpeechScript([], seed: 12)

    func remb(_ h: RoomHarness, _ bps: UInt64, from m: RoomHarness.Member) {
        var buf = [UInt8](repeating: 0, count: 32)
        let n = buf.withUnsafeMutableBytes { REMB(senderSSRC: 0xB0B, bitrate: bps, ssrcs: [1]).write(into: $0) }!
        h.send(Array(buf[0..<n]), from: m.subscribe)
    }

    /// The VP9 descriptors of what the subscriber's video slot received, with the RTP headers.
    func received(_ h: RoomHarness, _ m: RoomHarness.Member) -> [(header: RTPHeader, vp9: VP9Descriptor)] {
        h.slotPackets(m, ssrcOffset: SlotSSRC.video(0)).compactMap { p in
            p.packet.withUnsafeBytes { raw in
                VP9Descriptor.parse(UnsafeRawBufferPointer(rebasing: raw[p.header.payloadRange])).successValue.map { (p.header, $0) }
            }
        }
    }

    @Test func aFallingDownlinkTakesLayersAwayBeforeTheVideoAndGivesThemBack() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 3)
        let aMember = try h.join("A", video: PayloadFormat(codec: .vp9, payloadType: 98))
        let a = SimulatedParticipant(aMember) { sa.frame(at: $0, speaking: 0.2..<30) }
        let video = CraftedVideoSender(aMember, codec: .vp9, payloadType: 98, pictureID: 500)
        video.temporalLayers = 3
        video.spatialLayers = 2
        video.packetsPerFrame = 1
        video.packetBytes = 1000  // about 217 kbit/s a spatial layer: TL0 54, TL1 54, TL2 108
        let bMember = try h.join("B", video: nil, videoSlots: 1, slotFormats: [PayloadFormat(codec: .vp9, payloadType: 120)])
        let b = SimulatedParticipant(bMember) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        func run(from start: Double, seconds: Double, rembBps: UInt64) {
            for k in 0..<Int(seconds * 4) {
                h.run([a, b], crafted: [video], from: start + Double(k) / 4, seconds: 0.25)
                remb(h, rembBps, from: bMember)
            }
        }
        run(from: 0, seconds: 4, rembBps: 2_000_000)
        let free = received(h, bMember)
        #expect(Set(free.compactMap(\.vp9.spatialLayer)) == [0, 1] && Set(free.compactMap(\.vp9.temporalLayer)) == [0, 1, 2],
                "a free downlink gets every layer")

        // 170 kbit/s, 40 of them for audio: the base spatial layer at half the frame rate (TL0 + TL1) fits.
        h.clearReceived()
        run(from: 4, seconds: 5, rembBps: 170_000)
        let capped = received(h, bMember).filter { $0.header.timestamp != 0 }
        let lastUncapped = capped.lastIndex { $0.vp9.spatialLayer != 0 || ($0.vp9.temporalLayer ?? 0) > 1 } ?? -1
        let settled = Array(capped[(lastUncapped + 1)...])
        #expect(lastUncapped < 30, "the caps apply at the next REMB, within a few pictures")
        #expect(settled.count > 40 && settled.allSatisfy { $0.vp9.spatialLayer == 0 && ($0.vp9.temporalLayer ?? 0) <= 1 },
                "only spatial layer 0, temporal layers 0 and 1")
        #expect(settled.allSatisfy { $0.header.marker }, "each picture's last packet sent carries the marker")
        let pids = settled.compactMap(\.vp9.pictureID)
        #expect(zip(pids, pids.dropFirst()).allSatisfy { ($1 &- $0) & 0x7FFF == 1 }, "picture IDs closed up over the pictures left out")
        let tl0s = settled.filter { $0.vp9.temporalLayer == 0 }.compactMap(\.vp9.tl0PicIdx)
        #expect(zip(tl0s, tl0s.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "TL0PICIDX untouched: no base picture is left out")
        let seqs = capped.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "no sequence gap for the receiver to NACK")
        #expect(h.talkerEvents(for: "B").last?.2.first { $0.kind == .video }?.participant == "A", "B keeps A's video")
        #expect(h.room.counters.drops[.layerNotSent] > 100)

        // Free again: every layer back, the upper spatial one from a key frame the node asks for.
        let plis = video.plisReceived
        h.clearReceived()
        run(from: 9, seconds: 6, rembBps: 2_000_000)
        let back = received(h, bMember)
        let firstUpper = try #require(back.firstIndex { $0.vp9.spatialLayer == 1 }, "spatial layer 1 comes back")
        let keyframe = try #require(back[..<firstUpper].last { $0.vp9.spatialLayer == 0 && $0.vp9.startOfLayerFrame })
        #expect(!keyframe.vp9.interPicturePredicted, "at a key frame")
        #expect(video.plisReceived > plis)
        #expect(back.suffix(20).contains { $0.vp9.temporalLayer == 2 })
        let all = back.map(\.header.sequenceNumber)
        #expect(zip(all, all.dropFirst()).allSatisfy { $1 == $0 &+ 1 })
    }

    /// A packet of a layer B's slot leaves out (spatial layer 1) is lost on the way from A. The slot cannot
    /// know the layer of a packet it never saw, so its output keeps the place, and B sees a gap and NACKs it.
    /// A's RTX repair (RFC 4588) then comes back, late: the slot leaves it out, and sends under its number a
    /// padding-only packet (RFC 3550 section 5.1), which a receiver takes as the packet and stops asking for
    /// (libwebrtc's packet buffer inserts it as padding). That packet lost on the way to B is sent again when
    /// NACKed, within the bounds of a retransmission; later pictures flow on.
    @Test func aLateRepairOfALayerTheSlotLeavesOutIsReplacedByPadding() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 3)
        let aMember = try h.join("A", video: PayloadFormat(codec: .vp9, payloadType: 98, rtxPayloadType: 99))
        let a = SimulatedParticipant(aMember) { sa.frame(at: $0, speaking: 0.2..<30) }
        let video = CraftedVideoSender(aMember, codec: .vp9, payloadType: 98, pictureID: 500)
        video.temporalLayers = 3
        video.spatialLayers = 2
        video.packetsPerFrame = 1
        video.packetBytes = 1000
        // AES-CM: padding resent under a number of this RTX-less slot is allowed only there (not under GCM).
        let bMember = try h.join("B", video: nil, videoSlots: 1, slotFormats: [PayloadFormat(codec: .vp9, payloadType: 120)], options: .init(subscribeProfile: .aesCM128HmacSHA1_80))
        let b = SimulatedParticipant(bMember) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        var t = 0.0
        func run(seconds: Double, rembBps: UInt64 = 170_000) {
            for _ in 0..<Int(seconds * 4) {
                h.run([a, b], crafted: [video], from: t, seconds: 0.25)
                t += 0.25
                remb(h, rembBps, from: bMember)
            }
        }
        run(seconds: 4, rembBps: 2_000_000)
        run(seconds: 3)

        var lost: [UInt8]?
        h.uplink = { conn, plain in
            guard conn == aMember.publish.connection, lost == nil else { return true }
            let upper = plain.withUnsafeBytes { raw -> Bool in
                guard case .success(let hd) = RTPHeader.parse(raw), hd.payloadType == 98 else { return false }
                return VP9Descriptor.parse(UnsafeRawBufferPointer(rebasing: raw[hd.payloadRange])).successValue?.spatialLayer == 1
            }
            if upper { lost = plain }
            return !upper
        }
        h.clearReceived()
        run(seconds: 0.25)
        let dropped = try #require(lost)
        let sent = h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0)).map(\.header.sequenceNumber)
        let holes = zip(sent, sent.dropFirst()).filter { $1 != $0 &+ 1 }
        try #require(holes.count == 1 && holes[0].1 == holes[0].0 &+ 2, "one number kept for the lost packet: \(sent)")
        let hole = holes[0].0 &+ 1
        #expect(received(h, bMember).allSatisfy { $0.vp9.spatialLayer == 0 }, "B's slot leaves spatial layer 1 out")
        let slotSSRC = bMember.audio.ssrc - 1 + SlotSSRC.video(0)
        func nack() {
            var buf = [UInt8](repeating: 0, count: 32)
            let n = buf.withUnsafeMutableBytes { GenericNACK.write(sender: 0xB0B, media: slotSSRC, sequences: [hole], into: $0) }!
            h.send(Array(buf[0..<n]), from: bMember.subscribe)
        }
        func filled() -> [(header: RTPHeader, packet: [UInt8])] {
            h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0)).filter { $0.header.sequenceNumber == hole }
        }
        nack()
        #expect(filled().isEmpty, "nothing yet: the repair may be of a layer B is sent")

        // A's repair comes back; the padding under the hole's number is lost on the way to B, once.
        var paddingLost = false
        h.network = { dest, d in
            guard dest == bMember.subscribe.connection, !paddingLost, d.count > 12, UInt16(d[2]) << 8 | UInt16(d[3]) == hole,
                  d[8..<12].elementsEqual(withUnsafeBytes(of: slotSSRC.bigEndian) { Array($0) }) else { return true }
            paddingLost = true
            return false
        }
        let hd = try #require(dropped.withUnsafeBytes { RTPHeader.parse($0).successValue })
        var rtx = RTPStreamWriter(ssrc: aMember.video.ssrc + 1, payloadType: 99, timestamp: hd.timestamp)
        h.send(rtx.packet([UInt8(hd.sequenceNumber >> 8), UInt8(hd.sequenceNumber & 0xFF)] + Array(dropped[hd.payloadRange]),
                          marker: hd.marker), from: aMember.publish)
        #expect(h.room.counters.repairsIn == 1)
        #expect(paddingLost, "the slot sent something under the hole's number")
        let mediaBefore = h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0)).count { $0.header.payloadLength > 0 }
        run(seconds: 0.25)
        #expect(filled().isEmpty)
        nack()
        let padding = try #require(filled().first, "sent again when NACKed")
        #expect(padding.header.payloadLength == 0 && padding.header.paddingLength > 0, "padding only")
        #expect(padding.header.payloadType == 120 && !padding.header.marker)

        // However often it is NACKed, only as often as a retransmission would be (B's SRTP takes the first copy
        // and refuses the others as replays).
        for _ in 0..<8 {
            run(seconds: 0.25)
            nack()
        }
        #expect(h.room.counters.gapsFilled == 1 + UInt64(h.room.limits.maxResendsPerPacket), "\(h.room.counters.gapsFilled) sent")
        #expect(h.room.counters.drops[.resendLimit] > 0)

        let all = h.slotPackets(bMember, ssrcOffset: SlotSSRC.video(0))
        let media = all.filter { $0.header.payloadLength > 0 }
        #expect(media.count - mediaBefore > 20, "later pictures flow on (half of 25 a second): \(media.count - mediaBefore) in 2.25 s")
        let numbers = Set(all.map(\.header.sequenceNumber))
        let first = all[0].header.sequenceNumber, last = media.last!.header.sequenceNumber
        #expect((0...(last &- first)).allSatisfy { numbers.contains(first &+ $0) }, "no number left unsent")
    }
}
