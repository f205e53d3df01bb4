import SFUMedia
import SFUSimulation
import Testing
@testable import SFUBase

@Suite struct RTCPPacketTests {
    /// An SR with one report block, then SDES with a CNAME (RFC 3550 sections 6.4.1 and 6.5.1).
    let srAndSDES = hex("""
        81 c8 00 0c 00 00 00 01  83 ab 03 a1 eb 02 0b 3a  00 00 94 20 00 00 00 0a  00 00 06 40
        00 00 00 02 05 ff ff fe 00 00 10 00 00 00 00 20 00 00 00 30 00 00 00 40
        81 ca 00 03 00 00 00 01 01 04 61 62 63 64 00 00
        """)

    @Test func splitsCompoundAndParsesSenderReport() throws {
        let (pkts, error) = rtcpPackets(srAndSDES)
        #expect(error == nil)
        #expect(pkts.map(\.packetType) == [200, 202])
        let sr = try #require(srAndSDES.withUnsafeBytes { SenderReport.parse($0, pkts[0]) }.successValue)
        #expect(sr.ssrc == 1)
        #expect(sr.ntpTimestamp == 0x83AB_03A1_EB02_0B3A)
        #expect(sr.rtpTimestamp == 0x9420)
        #expect(sr.packetCount == 10 && sr.octetCount == 1600)
        #expect(sr.reports.count == 1)
        #expect(sr.reports[0].fractionLost == 5)
        #expect(sr.reports[0].cumulativeLost == -2)  // 0xfffffe, sign-extended 24 bits
        #expect(sr.reports[0].extendedHighestSequence == 0x1000)
        let items = try #require(srAndSDES.withUnsafeBytes { SourceDescription.parse($0, pkts[1]) }.successValue)
        #expect(items == [.init(ssrc: 1, type: 1, value: Array("abcd".utf8))])
    }

    @Test func senderReportRoundTrips() throws {
        let sr = SenderReport(ssrc: 7, ntpTimestamp: 1 << 40, rtpTimestamp: 99, packetCount: 3, octetCount: 4,
                              reports: [ReportBlock(ssrc: 9, fractionLost: 1, cumulativeLost: 100, extendedHighestSequence: 5,
                                                    jitter: 6, lastSenderReport: 7, delaySinceLastSenderReport: 8)])
        var buf = [UInt8](repeating: 0, count: 100)
        let n = try #require(buf.withUnsafeMutableBytes { sr.write(into: $0) })
        let bytes = Array(buf[0..<n])
        let (pkts, error) = rtcpPackets(bytes)
        #expect(error == nil && pkts.count == 1)
        #expect(bytes.withUnsafeBytes { SenderReport.parse($0, pkts[0]) }.successValue == sr)
    }

    @Test func receiverReportAndGoodbyeRoundTrip() throws {
        var buf = [UInt8](repeating: 0, count: 200)
        let rr = ReceiverReport(ssrc: 1, reports: [ReportBlock(ssrc: 2, fractionLost: 0, cumulativeLost: 0, extendedHighestSequence: 1,
                                                                jitter: 0, lastSenderReport: 0, delaySinceLastSenderReport: 0)])
        let n1 = try #require(buf.withUnsafeMutableBytes { rr.write(into: $0) })
        let n2 = try #require(buf.withUnsafeMutableBytes { Goodbye.write(ssrcs: [5, 6], into: UnsafeMutableRawBufferPointer(rebasing: $0[n1...])) })
        let bytes = Array(buf[0..<(n1 + n2)])
        let (pkts, error) = rtcpPackets(bytes)
        #expect(error == nil && pkts.count == 2)
        #expect(bytes.withUnsafeBytes { ReceiverReport.parse($0, pkts[0]) }.successValue == rr)
        #expect(bytes.withUnsafeBytes { Goodbye.parse($0, pkts[1]) }.successValue == [5, 6])
    }

    @Test func nackPacksAndUnpacksLostSequences() throws {
        // RFC 4585 section 6.2.1: PID 65534 with BLP covering 65535, 0 (wrap) and 20 in a new pair.
        let lost: [UInt16] = [65534, 65535, 0, 20]
        var buf = [UInt8](repeating: 0, count: 64)
        let n = try #require(buf.withUnsafeMutableBytes { GenericNACK.write(sender: 1, media: 2, sequences: lost, into: $0) })
        let bytes = Array(buf[0..<n])
        #expect(n == 20)  // header + two FCI pairs
        let (pkts, _) = rtcpPackets(bytes)
        var seen: [UInt16] = []
        let h = bytes.withUnsafeBytes { GenericNACK.forEachLost($0, pkts[0]) { seen.append($0) } }
        #expect(h == FeedbackHeader(senderSSRC: 1, mediaSSRC: 2))
        #expect(seen == lost)
    }

    @Test func pliAndFirRoundTrip() throws {
        var buf = [UInt8](repeating: 0, count: 64)
        let n = try #require(buf.withUnsafeMutableBytes { PictureLossIndication.write(sender: 1, media: 0xABCD, into: $0) })
        #expect(Array(buf[0..<n]) == hex("81 ce 00 02 00 00 00 01 00 00 ab cd"))
        let m = try #require(buf.withUnsafeMutableBytes { FullIntraRequest.write(sender: 1, target: 0xABCD, sequenceNumber: 7, into: $0) })
        let fir = Array(buf[0..<m])
        #expect(fir == hex("84 ce 00 04 00 00 00 01 00 00 00 00 00 00 ab cd 07 00 00 00"))
        let (pkts, _) = rtcpPackets(fir)
        let parsed = try #require(fir.withUnsafeBytes { FullIntraRequest.parse($0, pkts[0]) })
        #expect(parsed.1 == [FullIntraRequest.Entry(ssrc: 0xABCD, sequenceNumber: 7)])
    }

    @Test func parsesREMBFromChrome() throws {
        // A REMB as Chrome sends it: exp 4, mantissa 0x3c8e8 -> 248040 * 16 = 3968640 bps, one SSRC.
        let remb = hex("8f ce 00 05 00 00 00 01 00 00 00 00 52 45 4d 42 01 13 c8 e8 12 34 56 78")
        let (pkts, error) = rtcpPackets(remb)
        #expect(error == nil)
        let r = try #require(remb.withUnsafeBytes { REMB.parse($0, pkts[0]) })
        #expect(r.bitrate == 0x3C8E8 << 4)
        #expect(r.ssrcs == [0x1234_5678])
        var buf = [UInt8](repeating: 0, count: 64)
        let n = try #require(buf.withUnsafeMutableBytes { r.write(into: $0) })
        #expect(Array(buf[0..<n]) == remb)
    }

    @Test func parsesTransportWideFeedback() throws {
        // Base seq 100, 4 packets; one run-length chunk "small delta" x2, then a 2-bit vector chunk:
        // [small delta 1, not received 0, ...] -> statuses [1,1,1,0].
        // Chunk 1: 0 01 0000000000010 = run of 2 small deltas -> 0x2002
        // Chunk 2: 1 1 01 00 00 00 00 00 00 -> two-bit vector: small, not received -> 0xD000
        let fb = hex("""
            8f cd 00 06 00 00 00 01 00 00 00 02  00 64 00 04 00 00 10 05
            20 02 d0 00 04 08 0c 00
            """)
        let (pkts, error) = rtcpPackets(fb)
        #expect(error == nil)
        let t = try #require(fb.withUnsafeBytes { TransportCCFeedback.parse($0, pkts[0]) })
        #expect(t.baseSequence == 100 && t.feedbackCount == 5 && t.referenceTime == 0x10)
        #expect(t.packets.map(\.sequenceNumber) == [100, 101, 102, 103])
        #expect(t.packets.map(\.arrivalOffsetMicros) == [1000, 3000, 6000, nil])
    }

    @Test(arguments: [
        ("length beyond datagram", "81 c9 00 09 00 00 00 01", DropReason.badLength),
        ("version 0", "01 c9 00 01 00 00 00 01", .badVersion),
        ("cut header", "81 c9 00", .truncated),
        ("padding on first of two", "a0 c9 00 01 00 00 00 04 80 c9 00 01 00 00 00 01", .badPadding),
        ("padding count too large", "a0 c9 00 01 00 00 00 09", .badPadding),
    ])
    func refusesMalformedCompounds(_ name: String, _ bytes: String, _ reason: DropReason) {
        #expect(rtcpPackets(hex(bytes)).1 == reason, "\(name)")
    }

    @Test func refusesReportCountBeyondBody() throws {
        let lying = hex("9f c9 00 01 00 00 00 01")  // RR claims 31 blocks in an empty body
        let (pkts, error) = rtcpPackets(lying)
        #expect(error == nil)
        #expect(lying.withUnsafeBytes { ReceiverReport.parse($0, pkts[0]) }.failureValue == .badRTCP)
    }
}
