import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// RTX (RFC 4588), RED (RFC 2198) and the publisher-side NACK schedule.
@Suite struct RepairPayloadTests {
    @Test func anRTXPacketBecomesTheOriginalAgain() throws {
        // RTX: PT 97, seq 7, SSRC 0xBBBB, OSN 0x1234, payload 9 8 7, two bytes of padding.
        var p: [UInt8] = [0xA0, 97, 0, 7, 0, 0, 0, 1, 0, 0, 0xBB, 0xBB, 0x12, 0x34, 9, 8, 7, 0, 2]
        let h = try #require(p.withUnsafeBytes { RTPHeader.parse($0).successValue })
        let n = try #require(p.withUnsafeMutableBytes { RTXPayload.restore($0, header: h, payloadType: 96, ssrc: 0xAAAA) })
        #expect(Array(p[0..<n]) == [0x80, 96, 0x12, 0x34, 0, 0, 0, 1, 0, 0, 0xAA, 0xAA, 9, 8, 7])
        // Padding only: a probe, not a retransmission.
        var pad: [UInt8] = [0xA0, 97, 0, 8, 0, 0, 0, 1, 0, 0, 0xBB, 0xBB, 0, 0, 0, 4]
        let hp = try #require(pad.withUnsafeBytes { RTPHeader.parse($0).successValue })
        #expect(pad.withUnsafeMutableBytes { RTXPayload.restore($0, header: hp, payloadType: 96, ssrc: 0xAAAA) } == nil)
    }

    @Test func redFindsThePrimaryBlockAndRewritesPayloadTypes() throws {
        // One redundant block (PT 111, ts offset 960, length 3) then the primary (PT 111).
        var red: [UInt8] = [0x80 | 111, 0x0F, 0x00, 0x03, 111, 0xA, 0xB, 0xC, 0x78, 0x80, 0x01]
        let r = try #require(red.withUnsafeBytes { REDPayload.parse($0).successValue })
        #expect(r.blocks == 2 && r.primary == 8..<11 && r.primaryPayloadType == 111)
        red.withUnsafeMutableBytes { r.rewritePayloadTypes(109, in: $0) }
        #expect(red[0] == 0x80 | 109 && red[4] == 109)
        // Primary only; lengths beyond the payload; too many blocks.
        #expect(([111, 1, 2] as [UInt8]).withUnsafeBytes { REDPayload.parse($0).successValue?.primary } == 1..<3)
        #expect(([0xEF, 0, 0, 9, 111, 1] as [UInt8]).withUnsafeBytes { REDPayload.parse($0).failureValue } == .badLength)
        #expect([UInt8](repeating: 0xEF, count: 40).withUnsafeBytes { REDPayload.parse($0).failureValue } != nil)
    }

    @Test func missingPacketsAreAskedForEveryRoundTripUntilTheyArriveOrAgeOut() {
        var g = NackGenerator()
        let t0 = MonoTime.seconds(10)
        #expect(g.received(100, now: t0) == .none)
        #expect(g.received(104, now: t0) == .nacking)
        #expect(g.due(now: t0, rtt: .milliseconds(50)) == [101, 102, 103])
        #expect(g.due(now: t0 + .milliseconds(30), rtt: .milliseconds(50)).isEmpty, "not again within the round trip")
        g.received(102, now: t0 + .milliseconds(40))
        #expect(g.due(now: t0 + .milliseconds(60), rtt: .milliseconds(50)) == [101, 103])
        #expect(g.recovered == 1)
        var asked = 0
        for k in 2...30 { asked += g.due(now: t0 + .milliseconds(Int64(k) * 60), rtt: .milliseconds(50)).count }
        #expect(asked == 2 * 8, "ten tries each, then given up")
        #expect(g.missingCount == 0)
        #expect(g.received(1000, now: t0 + .seconds(3)) == .tooWide, "a wide gap asks for a keyframe instead")
    }
}
