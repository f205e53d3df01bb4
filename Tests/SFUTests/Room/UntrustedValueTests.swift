import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// Values a client chooses, at the edges of their ranges: each either stays within what the arithmetic on it
/// can take or is refused, and nothing a client sends costs the node more than a bounded amount of work
/// (issue 23's classes of bug). The first two trapped (killing every room on the node) before.
@Suite struct UntrustedValueTests {
    /// A transport-cc feedback of no packets (RFC draft-holmer-rmcat-transport-wide-cc-extensions-01 section 3.1)
    /// with reference time `raw` (24 bits).
    static func emptyFeedback(reference raw: Int64) -> [UInt8] {
        let r = UInt32(truncatingIfNeeded: raw) & 0xFF_FFFF
        return [0x8F, 205, 0x00, 0x04, 0, 0, 0x0B, 0x0B, 0, 0, 0x5A, 0x5A, 0, 1, 0, 0,
                UInt8(r >> 16), UInt8((r >> 8) & 0xFF), UInt8(r & 0xFF), 7]
    }

    @Test func aTransportCCReferenceWalkedTowardsOverflowIsRefused() throws {
        // Each feedback may step the 24-bit reference time half a wrap forward; 17 million of them walked it to
        // where `reference * 64_000` overflowed. Start just short of that point.
        var h = SendHistory(firstSequence: 0)
        let near = Int64.max / 64_000 - 4
        h.lastReference = near
        let bytes = Self.emptyFeedback(reference: near + 8)
        let result: TransportCCFeedback.Header? = bytes.withUnsafeBytes { p in
            var pkt: RTCPPacket?
            _ = RTCPCompound.forEach(p) { pkt = $0 }
            return pkt.flatMap { h.resolve(p, $0) }
        }
        #expect(result == nil, "refused")
        #expect(h.lastReference == near, "and it moved nothing")
        // An ordinary step within the limit is still taken.
        h.lastReference = 1000
        let ok: TransportCCFeedback.Header? = Self.emptyFeedback(reference: 1002).withUnsafeBytes { p in
            var pkt: RTCPPacket?
            _ = RTCPCompound.forEach(p) { pkt = $0 }
            return pkt.flatMap { h.resolve(p, $0) }
        }
        #expect(ok != nil && h.lastReference == 1002)
    }

    @Test func anAbsSendTimeWalkedTowardsOverflowStartsAgain() {
        // Each packet may step abs-send-time half a wrap; 288 million walked the base until its conversion to
        // nanoseconds overflowed. Start just short of where the old conversion did.
        var est = ReceiveSideEstimator()
        est.packet(absSendTime: 0, arrival: .milliseconds(1), size: 100)
        est.sendTimeBase = Int64.max / 3814 - 100
        est.packet(absSendTime: 0x10, arrival: .milliseconds(2), size: 100)
        #expect(abs(est.sendTimeBase) <= 0x10, "re-anchored at 0, not converted past Int64")
        // The conversion is exact: one second of 2^-18 s units is 10^9 ns.
        est.sendTimeBase = 0
        est.packet(absSendTime: 0x10 + (1 << 18), arrival: .milliseconds(1002), size: 100)
        #expect(est.sendTimeBase == 1 << 18)
    }

    @Test func aDatagramOfManySenderReportsIsForwardedOnce() throws {
        // One SRTCP datagram can hold dozens of sender reports for the publisher's SSRC; each was rewritten and
        // protected for every slot the track feeds.
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 1), quiet = SpeechScript([], seed: 2)
        let a = SimulatedParticipant(try h.join("A")) { sa.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 1)
        var compound: [UInt8] = []
        for k in 0..<40 {
            let sr = SenderReport(ssrc: a.member.audio.ssrc, ntpTimestamp: 0xE000_0000_8000_0000 + UInt64(k),
                                  rtpTimestamp: a.member.audio.timestamp, packetCount: 100, octetCount: 1000)
            var buf = [UInt8](repeating: 0, count: 64)
            let n = try #require(buf.withUnsafeMutableBytes { sr.write(into: $0) })
            compound += buf[0..<n]
        }
        h.clearReceived()
        h.send(compound, from: a.member.publish)
        #expect(h.rtcp(to: b.member.subscribe.connection).count == 1, "one report forwarded, not forty")
        #expect(h.room.counters.drops[.rtcpThrottled] == 39)
        h.advance(by: 150)
        h.clearReceived()
        h.send(Array(compound[0..<28]), from: a.member.publish)
        #expect(h.rtcp(to: b.member.subscribe.connection).count == 1, "the next one, 150 ms later, goes through")
    }

    @Test func aRepairNamingANumberFarAheadDoesNotMoveTheStream() throws {
        // The original sequence number inside an RTX packet moved the track's unwrapper: one naming a number
        // 2^15 - 1 ahead made every later packet of the publisher read as old.
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 1), quiet = SpeechScript([], seed: 2)
        let a = SimulatedParticipant(try h.join("A", publishVideo: true, options: .init(repair: true)), video: true, seed: 1) {
            sa.frame(at: $0, speaking: 0..<30)
        }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1, options: .init(repair: true))) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, b], from: 0, seconds: 2)
        let track = try #require(h.room.tracks.byIndex.values.first { $0.ssrc == a.member.video.ssrc })
        let highest = try #require(track.unwrapper.highest)
        var rtx = RTPStreamWriter(ssrc: a.member.video.ssrc + 1, payloadType: 97)
        let ahead = UInt16(truncatingIfNeeded: highest + 32_000)
        h.send(rtx.packet([UInt8(ahead >> 8), UInt8(ahead & 0xFF), 0x90, 0x80, 0x80, 0x01, 0x11, 0x00, 1, 2, 3]), from: a.member.publish)
        #expect(track.unwrapper.highest == highest, "the repair moved nothing")
        #expect(h.room.counters.drops[.duplicateRepair] >= 1)
        h.clearReceived()
        h.run([a, b], from: 2, seconds: 1)
        #expect(h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)).count > 20, "the stream goes on")
    }

    @Test func aSubscriptionWhoseSlotsWouldShareAnSSRCOrUseATwoByteIDIsRefused() throws {
        let h = try RoomHarness()
        _ = try h.join("B", audioSlots: 0)
        let conn = ConnectionID(900)
        // A slot's RTX SSRC equal to another slot's media SSRC (a mid 'a/rtx' beside a mid 'a' once did this).
        let colliding = [
            SlotDescription(codec: .vp8, mid: "v0", ssrc: 0x100, payloadType: 98, rtxPayloadType: 99, rtxSSRC: 0x101),
            SlotDescription(codec: .vp8, mid: "v1", ssrc: 0x101, payloadType: 98),
        ]
        #expect(throws: RoomError.self) { try h.room.sessions.attachSubscriber("B", connection: conn, slots: colliding, now: h.now, into: h.batch) }
        let twoByte = [SlotDescription(codec: .opus, mid: "a0", ssrc: 0x200, payloadType: 109, audioLevelExtensionID: 15)]
        #expect(throws: RoomError.self) { try h.room.sessions.attachSubscriber("B", connection: conn, slots: twoByte, now: h.now, into: h.batch) }
    }
}
