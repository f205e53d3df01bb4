import Foundation
@testable import LoadGen
import SFU
import Testing
import WebRTCEdge

/// The bench's transport-cc subscribers (issue 13): what they offer, what they read from clear headers and
/// the feedback they write.
@Suite struct TransportCCSubscriberTests {
    /// A packet as the node sends it to a transport-cc subscriber: its one header writer, with the
    /// transport-wide sequence number stamped where `write` left room.
    static func nodePacket(id: UInt8, tcc: UInt16, level: Bool = true, padding: Int = 0, payload: Int = 40) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 1500)
        let n = out.withUnsafeMutableBytes { buf -> Int in
            var h = OutgoingRTP(payloadType: 96, sequenceNumber: 7, timestamp: 90_000, ssrc: 0x1234_5678)
            if level { h.audioLevel = (1, 30) }
            h.absSendTime = (3, 0xABCDEF)
            h.transportSequenceID = id
            h.padding = padding
            var w = ByteWriter(buf)
            var at: Int?
            #expect(h.write(&w, transportSequenceOffset: &at))
            w.zeros(payload)
            #expect(h.writePadding(&w))
            if let at { buf[at] = UInt8(tcc >> 8); buf[at + 1] = UInt8(tcc & 0xFF) }
            return w.offset
        }
        return Array(out[0..<n])
    }

    @Test func theTransportWideSequenceIsReadFromTheClearHeader() {
        for (tcc, level, padding) in [(UInt16(0), true, 0), (0xFFFF, false, 0), (4711, true, 255)] {
            let p = Self.nodePacket(id: 5, tcc: tcc, level: level, padding: padding)
            #expect(p.withUnsafeBytes { TransportWideSequence.read($0, id: 5) } == tcc)
            #expect(p.withUnsafeBytes { TransportWideSequence.read($0, id: 4) } == nil, "another id")
        }
        // Truncated inside the extension block, or without one.
        let p = Self.nodePacket(id: 5, tcc: 9)
        #expect(p.withUnsafeBytes { TransportWideSequence.read(UnsafeRawBufferPointer(rebasing: $0[0..<20]), id: 5) } == nil)
        var plain = p
        plain[0] &= ~0x10
        #expect(plain.withUnsafeBytes { TransportWideSequence.read($0, id: 5) } == nil)
        // The two-byte form (RFC 8285 section 4.3), after a CSRC.
        let twoByte: [UInt8] = [0x91, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3,
                                0x10, 0x00, 0, 2, 9, 1, 0x55, 0, 5, 2, 0x12, 0x34]
        #expect(twoByte.withUnsafeBytes { TransportWideSequence.read($0, id: 5) } == 0x1234)
    }

    @Test func aTransportCCSubscriberOffersItAndRTXAndReadsTheAnswer() throws {
        let client = try LoadClient(certificate: DTLSCertificate(commonName: "t"), profile: .subscriber(audio: 2, video: 2, transportCC: true))
        let offer = try SessionDescription.parse(client.offer())
        for m in offer.media {
            #expect(m.extmaps[LoadClient.transportCCOfferID] == OfferAnswer.transportCCURI)
            #expect(m.values("rtcp-fb").contains(m.kind == "audio" ? "111 transport-cc" : "96 transport-cc"))
            if m.kind == "video" { #expect(m.rtpmaps[97]?.name == "rtx" && m.fmtps[97] == "apt=96") }
        }
        // The node's answer keeps both; the client learns the id and the RTX payload type from it.
        let local = LocalTransport(ice: .random(), fingerprint: try DTLSCertificate(commonName: "n").fingerprint,
                                   candidates: [TransportAddress("127.0.0.1:9")!])
        var n: UInt32 = 100
        let answer = try OfferAnswer.answerSubscribe(offer, local: local) { _, _, _ in n += 1; return n }
        #expect(answer.slots.allSatisfy { $0.transportCCExtensionID == LoadClient.transportCCOfferID })
        #expect(answer.slots.filter { $0.codec == .vp8 }.allSatisfy { $0.rtxPayloadType == 97 && $0.rtxSSRC != nil })
        try client.start(answer: answer.answer.text, now: .zero)
        #expect(client.transportCCExtensionID == LoadClient.transportCCOfferID && client.rtxPayloadType == 97)

        let remb = try LoadClient(certificate: DTLSCertificate(commonName: "t"), profile: .subscriber(audio: 1, video: 1))
        let plain = remb.offer()
        #expect(!plain.contains("transport-cc"), "without transport-cc the offer has none")
        #expect(plain.contains("a=rtpmap:97 rtx/90000"), "a receiving video section takes RTX all the same, as browsers' do")
    }

    @Test func theFeedbackForReceivedPacketsParsesWithTheSFUsParser() throws {
        let client = try LoadClient(certificate: DTLSCertificate(commonName: "t"), profile: .subscriber(audio: 1, video: 1, transportCC: true))
        let local = LocalTransport(ice: .random(), fingerprint: try DTLSCertificate(commonName: "n").fingerprint,
                                   candidates: [TransportAddress("127.0.0.1:9")!])
        let answer = try OfferAnswer.answerSubscribe(client.offer(), local: local) { _, kind, _ in kind == .audio ? 0xA0 : 0xB0 }
        try client.start(answer: answer.answer.text, now: .zero)
        // 0xFFFD ... 0x0004 across the wrap, 0xFFFF and 0x0002 lost, one packet per 2 ms from t = 1 s.
        let start = MonoTime.seconds(1)
        let sent: [UInt16] = [0xFFFD, 0xFFFE, 0xFFFF, 0, 1, 2, 3, 4]
        let lost: Set<UInt16> = [0xFFFF, 2]
        for (k, seq) in sent.enumerated() where !lost.contains(seq) {
            Self.nodePacket(id: LoadClient.transportCCOfferID, tcc: seq).withUnsafeBytes {
                client.recordTransportSequence($0, arrival: start + .milliseconds(Int64(2 * k)))
            }
        }
        #expect(client.transportSequencesRecorded == 6)
        #expect(!client.feedbackRecorder.isDue(start + .milliseconds(50)) && client.feedbackRecorder.isDue(start + .milliseconds(120)),
                "every 100 ms")
        var buffer = [UInt8](repeating: 0, count: 1500)
        let n = try #require(buffer.withUnsafeMutableBytes { client.writeTransportFeedback(now: start + .milliseconds(120), into: $0) })
        var feedback: TransportCCFeedback?
        let malformed = buffer.withUnsafeBytes { raw in
            RTCPCompound.forEach(UnsafeRawBufferPointer(rebasing: raw[0..<n])) { pkt in feedback = TransportCCFeedback.parse(raw, pkt) }
        }
        #expect(malformed == nil)
        let fb = try #require(feedback)
        #expect(fb.senderSSRC == client.rtcpSSRC && fb.mediaSSRC == 0xA0)
        #expect(fb.baseSequence == 0xFFFD)
        #expect(fb.packets.map(\.sequenceNumber) == sent)
        #expect(fb.packets.map { $0.arrivalOffsetMicros == nil } == sent.map { lost.contains($0) })
        // Arrival deltas 2 ms apart (250 us resolution), from the 64 ms reference.
        let arrivals = fb.packets.compactMap(\.arrivalOffsetMicros)
        #expect(zip(arrivals, arrivals.dropFirst()).map { $1 - $0 } == [2000, 4000, 2000, 4000, 2000])
        #expect(Int64(fb.referenceTime) * 64_000 + arrivals[0] == 1_000_000)
        #expect(buffer.withUnsafeMutableBytes { client.writeTransportFeedback(now: start + .milliseconds(240), into: $0) } == nil,
                "nothing new: no second feedback")
    }

    /// The feedback's bytes, worked out by hand from the draft's section 3.1 rather than read back with the
    /// node's parser (which shares the writer's reading of the draft).
    @Test func theFeedbackBytesFollowTheDraftsLayout() throws {
        let client = try LoadClient(certificate: DTLSCertificate(commonName: "t"), profile: .subscriber(audio: 1, video: 1, transportCC: true))
        let local = LocalTransport(ice: .random(), fingerprint: try DTLSCertificate(commonName: "n").fingerprint,
                                   candidates: [TransportAddress("127.0.0.1:9")!])
        let answer = try OfferAnswer.answerSubscribe(client.offer(), local: local) { _, kind, _ in kind == .audio ? 0xA0 : 0xB0 }
        try client.start(answer: answer.answer.text, now: .zero)
        func arrive(_ seq: UInt16, atMicros us: Int64) {
            Self.nodePacket(id: LoadClient.transportCCOfferID, tcc: seq).withUnsafeBytes {
                client.recordTransportSequence($0, arrival: MonoTime(nanoseconds: us * 1000))
            }
        }
        func feedback(atMicros us: Int64) -> [UInt8]? {
            var buffer = [UInt8](repeating: 0xEE, count: 1500)
            let n = buffer.withUnsafeMutableBytes { client.writeTransportFeedback(now: MonoTime(nanoseconds: us * 1000), into: $0) }
            return n.map { Array(buffer[0..<$0]) }
        }
        let sender = withUnsafeBytes(of: client.rtcpSSRC.bigEndian, Array.init)

        // 10 at 1.000000 s, 11 lost, 12 at 1.000500 s, 13 at 1.070000 s.
        arrive(10, atMicros: 1_000_000)
        arrive(12, atMicros: 1_000_500)
        arrive(13, atMicros: 1_070_000)
        // Reference 15 x 64 ms = 0.960 s. Deltas: 40 ms = 160 ticks (small), 0.5 ms = 2 (small), 69.5 ms = 278
        // (over 255: large, two bytes). Symbols 1 0 1 2 in one status vector chunk of 2-bit symbols:
        // 1 1 | 01 00 01 10 000000 = 0xD180. 26 bytes, padded to 28: length 6 words.
        let one = try #require(feedback(atMicros: 1_100_000))
        #expect(one == [0x8F, 205, 0x00, 0x06] + sender + [0, 0, 0, 0xA0,
                                                           0x00, 0x0A, 0x00, 0x04,  // base 10, 4 packets
                                                           0x00, 0x00, 0x0F, 0x00,  // reference 15, feedback 0
                                                           0xD1, 0x80,
                                                           0xA0, 0x02, 0x01, 0x16,
                                                           0x00, 0x00])

        // 14...33 each 1 ms apart from 1.2 s: one run-length chunk (0, symbol 01, run 20 = 0x2014), reference
        // 18 (1.152 s), first delta 48 ms = 192 ticks, then 4 ticks each; the feedback count is now 1.
        for k in 0..<20 { arrive(UInt16(14 + k), atMicros: 1_200_000 + Int64(k) * 1000) }
        let two = try #require(feedback(atMicros: 1_300_000))
        #expect(two == [0x8F, 205, 0x00, 10] + sender + [0, 0, 0, 0xA0,
                                                         0x00, 0x0E, 0x00, 20,
                                                         0x00, 0x00, 0x12, 0x01,
                                                         0x20, 0x14, 0xC0] + [UInt8](repeating: 4, count: 19) + [0x00, 0x00])
    }
}
