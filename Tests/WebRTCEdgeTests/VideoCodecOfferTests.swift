import Foundation
import SFU
import Testing
@testable import WebRTCEdge

/// Offers with VP9 and H.264 (RFC 9628, RFC 6184): a publisher's video is answered in the first format the node
/// forwards in the publisher's order; a subscriber's video slot keeps every such format, each with its RTX.
@Suite struct VideoCodecOfferTests {
    let local = LocalTransport(ice: ICECredentials(ufrag: "nodeUfrg", password: "nodePasswordNodePassword"),
                               fingerprint: SDPTests.cert.fingerprint, candidates: [TransportAddress("127.0.0.1:10000")!])

    /// A real offer whose first video m-line lists only `formats`, as `setCodecPreferences` leaves it: the
    /// rtpmap, fmtp and rtcp-fb lines of every other payload type are gone.
    static func restrictingVideo(_ name: String, to formats: [UInt8]) throws -> String {
        let text = try fixture(name)
        var out: [Substring] = []
        var inVideo = false, seenVideo = false
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("m=") {
                inVideo = line.hasPrefix("m=video") && !seenVideo
                if inVideo {
                    seenVideo = true
                    out.append(Substring(line.split(separator: " ").prefix(3).joined(separator: " ") + " " + formats.map(String.init).joined(separator: " ")))
                    continue
                }
            }
            if inVideo, let pt = payloadTypeOf(line), !formats.contains(pt) { continue }
            out.append(line)
        }
        return out.joined(separator: "\r\n")
    }

    static func payloadTypeOf(_ line: Substring) -> UInt8? {
        for prefix in ["a=rtpmap:", "a=fmtp:", "a=rtcp-fb:"] where line.hasPrefix(prefix) {
            return UInt8(line.dropFirst(prefix.count).prefix { $0.isNumber })
        }
        return nil
    }

    /// One sendonly or recvonly video m-line and nothing else.
    static func videoOnly(_ direction: String, _ lines: String) -> String {
        """
        v=0\r
        o=- 1 1 IN IP4 0.0.0.0\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0\r
        a=fingerprint:sha-256 \((0..<32).map { _ in "AB" }.joined(separator: ":"))\r
        a=ice-ufrag:abcd\r
        a=ice-pwd:abcdefghijklmnopqrstuvwxyz\r
        a=setup:actpass\r

        """ + lines.replacingOccurrences(of: "DIR", with: direction) + "c=IN IP4 0.0.0.0\r\na=mid:0\r\na=DIR\r\na=rtcp-mux\r\na=ssrc:4321 cname:x\r\n"
            .replacingOccurrences(of: "DIR", with: direction)
    }

    func video(_ answer: SessionDescription) throws -> MediaDescription {
        try #require(answer.media.first { $0.kind == "video" && $0.port != 0 })
    }

    @Test func anH264OnlyOfferIsAnsweredWithH264InPacketizationMode1AndItsFmtp() throws {
        // Chromium with H.264 preferred alone: 42001f in modes 1 and 0, then 42e01f in modes 1 and 0.
        let text = try Self.restrictingVideo("chrome-publish", to: [102, 103, 104, 107, 108, 109, 114, 115])
        let r = try OfferAnswer.answerPublish(text, local: local)
        let track = try #require(r.tracks.first { $0.codec.kind == .video })
        #expect(track.codec == .h264 && track.payloadType == 102 && track.rtxPayloadType == 103)
        #expect(track.h264 == H264ProfileLevelID(hex: "42001f"), "the publisher's profile, to match subscribers against")
        #expect(track.nack && track.transportCCExtensionID != nil)
        let m = try video(try SessionDescription.parse(r.answer.text))
        #expect(m.formats == ["102", "103"], "one format and its RTX: the publisher's first in packetization-mode 1")
        #expect(m.rtpmaps[102]?.name == "h264" && m.rtpmaps[103]?.name == "rtx")
        #expect(m.fmtps[102] == "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f", "the offer's fmtp, kept")
        #expect(m.fmtps[103] == "apt=102")
        #expect(["nack", "nack pli", "ccm fir", "transport-cc"].allSatisfy { m.values("rtcp-fb").contains("102 \($0)") })
    }

    @Test func packetizationMode0FormatsAreSkippedForTheFirstInMode1() throws {
        let text = try Self.restrictingVideo("chrome-publish", to: [104, 107, 108, 109])
        let track = try #require(try OfferAnswer.answerPublish(text, local: local).tracks.first { $0.codec.kind == .video })
        #expect(track.codec == .h264 && track.payloadType == 108 && track.rtxPayloadType == 109)
        #expect(track.h264?.profile == .constrainedBaseline)
    }

    @Test func aVP9OfferIsAnsweredWithVP9Profile0() throws {
        let text = try Self.restrictingVideo("chrome-publish", to: [100, 101, 98, 99])
        let r = try OfferAnswer.answerPublish(text, local: local)
        let track = try #require(r.tracks.first { $0.codec.kind == .video })
        #expect(track.codec == .vp9 && track.payloadType == 98 && track.rtxPayloadType == 99, "profile 2 (10-bit) is passed over")
        let m = try video(try SessionDescription.parse(r.answer.text))
        #expect(m.formats == ["98", "99"] && m.fmtps[98] == "profile-id=0" && m.rtpmaps[98]?.name == "vp9")
    }

    @Test func thePublishersOrderDecidesAmongForwardedCodecs() throws {
        let h264First = try Self.restrictingVideo("chrome-publish", to: [108, 109, 96, 97, 98, 99])
        #expect(try OfferAnswer.answerPublish(h264First, local: local).tracks.first { $0.codec.kind == .video }?.codec == .h264)
        let vp9First = try Self.restrictingVideo("chrome-publish", to: [98, 99, 108, 109, 96, 97])
        #expect(try OfferAnswer.answerPublish(vp9First, local: local).tracks.first { $0.codec.kind == .video }?.codec == .vp9)
    }

    @Test func anOfferOfH264OnlyInPacketizationMode0IsRefusedWithTheReason() throws {
        let offer = Self.videoOnly("sendonly", """
            m=video 9 UDP/TLS/RTP/SAVPF 104\r
            a=rtpmap:104 H264/90000\r
            a=fmtp:104 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f\r

            """)
        do {
            _ = try OfferAnswer.answerPublish(offer, local: local)
            Issue.record("accepted H.264 in packetization-mode 0")
        } catch {
            #expect(error.reason.contains("packetization-mode 0") && error.reason.contains("RFC 6184 section 6.3"), "\(error)")
        }
        // Next to audio, the video m-line alone is declined (port 0) and the audio is published.
        let withAudio = try Self.restrictingVideo("chrome-publish", to: [104, 107])
        let r = try OfferAnswer.answerPublish(withAudio, local: local)
        #expect(r.tracks.map(\.codec) == [.opus])
        #expect(try SessionDescription.parse(r.answer.text).media.first { $0.kind == "video" }?.port == 0)
    }

    @Test func aSubscriberSlotKeepsEveryForwardedFormatWithItsRTX() throws {
        var next: UInt32 = 0x7000
        let r = try OfferAnswer.answerSubscribe(try fixture("chrome-subscribe"), local: local) { _, _, _ in next += 1; return next }
        let slot = try #require(r.slots.first { $0.codec.kind == .video })
        // VP8, VP9 profile 0, then H.264 in mode 1 only (42001f, 42e01f, 4d001f, f4001f), in the offer's order:
        // not VP9 profiles 1-3, H.264 mode 0, AV1, RED, ULPFEC or FlexFEC.
        #expect(slot.formats.map(\.codec) == [.vp8, .vp9, .h264, .h264, .h264, .h264])
        #expect(slot.formats.map(\.payloadType) == [96, 98, 102, 108, 116, 41])
        let byPT = Dictionary(uniqueKeysWithValues: slot.formats.map { ($0.payloadType, $0) })
        #expect(byPT[96]?.rtxPayloadType == 97 && byPT[98]?.rtxPayloadType == 99 && byPT[102]?.rtxPayloadType == 103)
        #expect(byPT[108]?.h264?.profile == .constrainedBaseline && byPT[116]?.h264?.profile == .main)
        #expect(byPT[41]?.h264?.profile == .high444)
        #expect(slot.rtxSSRC != nil)
        let m = try video(try SessionDescription.parse(r.answer.text))
        for f in slot.formats {
            #expect(m.formats.contains("\(f.payloadType)") && m.formats.contains("\(f.rtxPayloadType!)"))
            #expect(m.fmtps[f.rtxPayloadType!] == "apt=\(f.payloadType)")
            #expect(m.values("rtcp-fb").contains("\(f.payloadType) nack pli"))
        }
        #expect(m.fmtps[102] == "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f")
        #expect(!m.formats.contains("104") && !m.formats.contains("100"), "mode 0 and VP9 profile 2 are not answered")
    }

    @Test func aSubscriberOfferingVP8AndH264GetsBoth() throws {
        let offer = Self.videoOnly("recvonly", """
            m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103\r
            a=rtpmap:96 VP8/90000\r
            a=rtpmap:97 rtx/90000\r
            a=fmtp:97 apt=96\r
            a=rtpmap:102 H264/90000\r
            a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r
            a=rtpmap:103 rtx/90000\r
            a=fmtp:103 apt=102\r

            """)
        let r = try OfferAnswer.answerSubscribe(offer, local: local) { _, _, i in UInt32(100 + i) }
        let slot = try #require(r.slots.first)
        #expect(slot.formats == [PayloadFormat(codec: .vp8, payloadType: 96, rtxPayloadType: 97),
                                 PayloadFormat(codec: .h264, payloadType: 102, rtxPayloadType: 103, h264: H264ProfileLevelID(hex: "42e01f"))])
        let m = try video(try SessionDescription.parse(r.answer.text))
        #expect(m.formats == ["96", "97", "102", "103"] && m.direction == .sendonly)
    }

    @Test func aSlotTakesAtMostEightFormats() throws {
        let pts = Array(UInt8(96)...UInt8(107))
        let lines = "m=video 9 UDP/TLS/RTP/SAVPF \(pts.map(String.init).joined(separator: " "))\r\n"
            + pts.map { "a=rtpmap:\($0) VP8/90000\r\n" }.joined()
        let r = try OfferAnswer.answerSubscribe(Self.videoOnly("recvonly", lines), local: local) { _, _, i in UInt32(100 + i) }
        #expect(r.slots.first?.formats.count == SlotDescription.maxFormats)
    }
}
