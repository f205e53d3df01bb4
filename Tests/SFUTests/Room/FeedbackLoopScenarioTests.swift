import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// The feedback loops with clients (issue 13), through the real room on virtual time: transport-cc both
/// ways, NACK and RTX both ways, RED, REMB caps to publishers, probing and ABWD over a shaped downlink.
@Suite struct FeedbackLoopScenarioTests {
    nonisolated(unsafe) static let quiet = SpeechScript([], seed: 3)

    func rtcp(_ packets: [[UInt8]], type: RTCPPacketType, format: UInt8) -> [(packet: [UInt8], range: Range<Int>)] {
        packets.flatMap { p in
            var out: [(packet: [UInt8], range: Range<Int>)] = []
            _ = p.withUnsafeBytes { RTCPCompound.forEach($0) { pkt in
                if pkt.packetType == type.rawValue, pkt.countOrFormat == format { out.append((p, pkt.range)) }
            } }
            return out
        }
    }

    func transportFeedback(_ packets: [[UInt8]]) -> [TransportCCFeedback] {
        rtcp(packets, type: .transportFeedback, format: FeedbackFormat.transportCC).compactMap { p, range in
            p.withUnsafeBytes { raw in TransportCCFeedback.parse(raw, RTCPPacket(packetType: raw[range.lowerBound + 1], countOrFormat: raw[range.lowerBound] & 0x1F, range: range)) }
        }
    }

    @Test func aPublisherGetsTransportWideFeedbackAboutEveryPacketItSent() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true, options: .init(transportCC: true)), video: true, seed: 1) {
            s.frame(at: $0, speaking: 0..<30)
        }
        var dropped: Set<UInt16> = []
        var n = 0
        h.uplink = { conn, plain in
            guard conn == a.member.publish.connection else { return true }
            n += 1
            guard n % 25 == 0 else { return true }
            plain.withUnsafeBytes { p in
                if case .success(let hd) = RTPHeader.parse(p), let r = hd.extensions(in: p).find(5) { dropped.insert(p.u16(r.lowerBound)) }
            }
            return false  // every 25th packet is lost on the way
        }
        h.run([a], from: 0, seconds: 3)
        let feedback = transportFeedback(h.rtcp(to: a.member.publish.connection))
        #expect(feedback.count >= 20 && feedback.count <= 40, "about every 100 ms: \(feedback.count) in 3 s")
        let reported = feedback.flatMap(\.packets)
        let received = Set(reported.filter { $0.arrivalOffsetMicros != nil }.map(\.sequenceNumber))
        let lost = Set(reported.filter { $0.arrivalOffsetMicros == nil }.map(\.sequenceNumber))
        #expect(received.count >= n - dropped.count - 5, "\(received.count) of \(n - dropped.count) arrivals reported")
        #expect(lost.isSubset(of: dropped) && !lost.isEmpty, "only what was dropped is reported lost")
        #expect(received.isDisjoint(with: dropped))
    }

    @Test func publishersAreToldWhenTheirPacketsArrivedNotWhenABusyWorkerGotToThem() throws {
        // Ten packets reach the socket 5 ms apart while the worker is busy, then are handled in one pass.
        let h = try RoomHarness()
        let a = try h.join("A", publishVideo: true, options: .init(transportCC: true))
        var writer = a.audio
        let start = h.now
        h.advance(by: 60)
        for i in 0..<10 {
            let plain = writer.packet([0xF8, 0xFF, 0xFE], level: 30, transportSequence: UInt16(100 + i))
            writer.timestamp &+= 960
            h.sendRaw(a.publish.protect(plain), from: a.publish.connection, arrival: start + .milliseconds(Int64(i) * 5))
        }
        h.advance(by: 200)
        let arrivals = transportFeedback(h.rtcp(to: a.publish.connection)).flatMap(\.packets).compactMap(\.arrivalOffsetMicros)
        #expect(arrivals.count == 10)
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 == 5_000 }, "the feedback carries the 5 ms between arrivals: \(gaps)")
    }

    @Test func aLostPublisherPacketIsNACKedAndItsRepairReachesTheSubscriber() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true, options: .init(repair: true)), video: true, seed: 1) {
            s.frame(at: $0, speaking: 0..<30)
        }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        var lostPacket: [UInt8]?
        h.uplink = { conn, plain in
            guard conn == a.member.publish.connection, lostPacket == nil, plain.count > 200,
                  plain.withUnsafeBytes({ RTPHeader.parse($0).successValue?.payloadType }) == 96 else { return true }
            lostPacket = plain
            return false
        }
        h.clearReceived()
        h.run([a, b], from: 2, seconds: 0.3)
        h.uplink = nil
        let lost = try #require(lostPacket)
        let lostSeq = UInt16(lost[2]) << 8 | UInt16(lost[3])
        let nacked = rtcp(h.rtcp(to: a.member.publish.connection), type: .transportFeedback, format: FeedbackFormat.nack).flatMap { p, range in
            p.withUnsafeBytes { raw in
                var seqs: [UInt16] = []
                _ = GenericNACK.forEachLost(raw, RTCPPacket(packetType: 205, countOrFormat: 1, range: range)) { seqs.append($0) }
                return seqs
            }
        }
        #expect(nacked.contains(lostSeq), "the node asked for \(lostSeq): \(nacked)")
        #expect(h.room.counters.nacksSent >= 1)
        // The publisher answers on its RTX stream (RFC 4588): OSN first, its RTX payload type and SSRC.
        let hd = try #require(lost.withUnsafeBytes { RTPHeader.parse($0).successValue })
        var rtx = a.member.video
        rtx.ssrc = a.member.video.ssrc + 1
        rtx.payloadType = 97
        rtx.timestamp = hd.timestamp
        let repair = rtx.packet([UInt8(lostSeq >> 8), UInt8(lostSeq & 0xFF)] + Array(lost[hd.payloadRange]), marker: hd.marker)
        h.send(repair, from: a.member.publish)
        h.send(repair.enumerated().map { $0.offset == 3 ? $0.element &+ 1 : $0.element }, from: a.member.publish)  // again: a duplicate
        h.run([a, b], from: 2.3, seconds: 0.5)
        #expect(h.room.counters.repairsIn == 1 && h.room.counters.drops[.duplicateRepair] == 1)
        let checker = VP8StreamChecker()
        for p in h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).sorted(by: { Int16(bitPattern: $0.header.sequenceNumber &- $1.header.sequenceNumber) < 0 }) {
            checker.receive(p.packet)
        }
        #expect(checker.errors.isEmpty && checker.incompleteFrames == 0, "the repair filled the hole at the subscriber")
    }

    @Test func redReachesSubscribersThatTakeItWholeAndOthersAsPlainOpus() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", options: .init(red: true))) { s.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, options: .init(red: true))) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        let c = SimulatedParticipant(try h.join("C", audioSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b, c], from: 0, seconds: 3)
        #expect(h.dominantSpeakers.first?.1 == "A", "the level comes from the primary block")
        let toB = h.slotPackets(b.member, ssrcOffset: SlotSSRC.audio(0))
        let toC = h.slotPackets(c.member, ssrcOffset: SlotSSRC.audio(0))
        #expect(toB.count > 100 && toC.count > 100)
        #expect(toB.allSatisfy { $0.header.payloadType == 108 }, "RED under B's payload type")
        let blocks = toB.compactMap { p in p.packet.withUnsafeBytes { REDPayload.parse(UnsafeRawBufferPointer(rebasing: $0[p.header.payloadRange])).successValue } }
        #expect(blocks.count == toB.count && blocks.allSatisfy { $0.primaryPayloadType == 109 }, "blocks rewritten to B's Opus 109")
        #expect(toC.allSatisfy { $0.header.payloadType == 109 }, "plain Opus to C")
        #expect(h.audio(to: c.member, from: a, slots: 1).count > 100, "C gets A's primary Opus frames")
    }

    @Test func aSubscribersNACKIsAnsweredOnItsSlotsRTXStream() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { s.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1, options: .init(repair: true))) {
            Self.quiet.frame(at: $0, speaking: 0..<0)
        }
        h.run([a, b], from: 0, seconds: 2)
        let sent = try #require(h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).last)
        var buf = [UInt8](repeating: 0, count: 32)
        let base = b.member.audio.ssrc - 1
        let n = buf.withUnsafeMutableBytes { GenericNACK.write(sender: 0xB0B, media: base + SlotSSRC.video(0), sequences: [sent.header.sequenceNumber], into: $0) }!
        h.clearReceived()
        h.send(Array(buf[0..<n]), from: b.member.subscribe)
        let rtx = h.rtp(to: b.member.subscribe.connection).filter { $0.header.ssrc == base + 0x300 }
        #expect(rtx.count == 1 && rtx[0].header.payloadType == 99)
        let osn = rtx[0].packet.withUnsafeBytes { $0.u16(rtx[0].header.payloadOffset) }
        #expect(osn == sent.header.sequenceNumber, "the original sequence number leads the RTX payload")
        #expect(Array(rtx[0].packet[(rtx[0].header.payloadOffset + 2)...]) == Array(sent.packet[sent.header.payloadRange]))
    }

    @Test func publishersAreAskedForNoMoreThanTheirBestPlacedSubscriberTakes() throws {
        let h = try RoomHarness()
        let s = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true, options: .init(repair: true)), video: true, seed: 1) {
            s.frame(at: $0, speaking: 0..<30)
        }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        let c = SimulatedParticipant(try h.join("C", audioSlots: 1, videoSlots: 1)) { Self.quiet.frame(at: $0, speaking: 0..<0) }
        func remb(_ bps: UInt64, from m: RoomHarness.Member) {
            var buf = [UInt8](repeating: 0, count: 32)
            let n = buf.withUnsafeMutableBytes { REMB(senderSSRC: 0xB0B, bitrate: bps, ssrcs: [1]).write(into: $0) }!
            h.send(Array(buf[0..<n]), from: m.subscribe)
        }
        h.run([a, b, c], from: 0, seconds: 2)
        remb(400_000, from: b.member)
        remb(700_000, from: c.member)
        h.clearReceived()
        h.run([a, b, c], from: 2, seconds: 2)
        let caps = rtcp(h.rtcp(to: a.member.publish.connection), type: .payloadFeedback, format: FeedbackFormat.applicationLayer).compactMap { p, range in
            p.withUnsafeBytes { REMB.parse($0, RTCPPacket(packetType: 206, countOrFormat: 15, range: range))?.bitrate }
        }
        #expect(!caps.isEmpty)
        #expect(caps.last == 700_000 - 40_000, "the best-placed subscriber's share: its estimate less its audio (\(caps))")
    }

    /// B receives two video slots over a downlink shaped like `tc tbf`; A and C publish 300 kbit/s video
    /// and take turns talking; B's transport-cc feedback is all the node learns its downlink from.
    func shapedCall() throws -> (RoomHarness, [SimulatedParticipant], SimulatedParticipant) {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 1), sc = SpeechScript(Voices.c, seed: 5)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0..<1000) }
        let c = SimulatedParticipant(try h.join("C", publishVideo: true), video: true, seed: 2) { sc.frame(at: $0, speaking: 0..<0) }
        a.videoKbps = 300
        c.videoKbps = 300
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 2, options: .init(transportCC: true, repair: true))) {
            Self.quiet.frame(at: $0, speaking: 0..<0)
        }
        h.shapeDownlink(of: b.member.subscribe.connection, link: SimulatedLink(capacityBps: 2_000_000, propagation: .milliseconds(20)))
        return (h, [a, c, b], b)
    }

    func videos(_ h: RoomHarness, _ b: SimulatedParticipant) -> [(t: Double, n: Int)] {
        h.events.compactMap { t, e in
            if case .bandwidthAlert("B", _, _, let n) = e { return ((t - h.scenarioOrigin).seconds, n) } else { return nil }
        }
    }

    @Test func aTransportCCSubscriberIsProbedUpToWhatItsLinkCarries() throws {
        let (h, people, b) = try shapedCall()
        h.run(people, from: 0, seconds: 15)
        let s = try #require(h.room.participants.lookup("B")?.subscriber)
        let estimate = try #require(s.estimator.estimate)
        #expect(s.estimator is GCCEstimator)
        #expect(estimate > 1_000_000, "probes took the estimate to what a 2 Mbit/s link carries: \(estimate)")
        #expect(h.room.counters.probeBytesSent > 0)
        #expect(s.videoCount.numberOfVideos == 2, "both videos fit: \(videos(h, b))")
    }

    @Test func theVideoCountFallsWithinSecondsOfACapAndComesBackAfterItWithoutFlapping() throws {
        let (h, people, b) = try shapedCall()
        h.run(people, from: 0, seconds: 20)
        let s = try #require(h.room.participants.lookup("B")?.subscriber)
        #expect(s.videoCount.numberOfVideos == 2)
        h.clearEvents()
        h.setDownlinkCapacity(of: b.member.subscribe.connection, bitsPerSecond: 400_000)
        h.run(people, from: 20, seconds: 20)
        let capped = videos(h, b)
        let firstDrop = try #require(capped.first { $0.n < 2 })
        #expect(firstDrop.t - 20 < 3, "fewer videos within 3 s of the cap: \(capped)")
        #expect(s.videoCount.numberOfVideos <= 1, "at most one 300 kbit/s video through 400 kbit/s")
        #expect(capped.count <= 3, "no flapping under the cap: \(capped)")
        h.clearEvents()
        h.setDownlinkCapacity(of: b.member.subscribe.connection, bitsPerSecond: 2_000_000)
        h.run(people, from: 40, seconds: 20)
        let lifted = videos(h, b)
        let back = try #require(lifted.first { $0.n == 2 }, "back to two videos after the cap: \(lifted)")
        #expect(back.t - 40 < 10, "within 10 s of the cap's removal (media-core.md's target): \(lifted)")
        #expect(lifted.filter { $0.n < 2 && $0.t > back.t }.isEmpty, "and it stays: \(lifted)")
        print("video counts after the cap was lifted at 40 s: \(lifted)")
    }
}
