import Foundation
import SFU
import Testing
@testable import WebRTCEdge

func fixture(_ name: String) throws -> String {
    let url = try #require(Bundle.module.url(forResource: name, withExtension: "sdp", subdirectory: "Fixtures"))
    return try String(contentsOf: url, encoding: .utf8)
}

@Suite struct SDPTests {
    static let cert = try! DTLSCertificate()
    let local = LocalTransport(ice: ICECredentials(ufrag: "nodeUfrg", password: "nodePasswordNodePassword"),
                               fingerprint: SDPTests.cert.fingerprint,
                               candidates: [TransportAddress("127.0.0.1:10000")!, TransportAddress("203.0.113.7:10000")!])

    @Test(arguments: ["chrome-publish", "chrome-subscribe", "firefox-publish", "firefox-subscribe", "aiortc-publish", "aiortc-subscribe"])
    func realOffersParse(_ name: String) throws {
        let d = try SessionDescription.parse(try fixture(name))
        #expect(!d.media.isEmpty)
        #expect(d.bundleMids == d.media.compactMap(\.mid))
        #expect(try SessionDescription.parse(d.text) == d, "serialising and parsing again changes nothing")
    }

    @Test func chromePublishOfferBindsOpusAndVP8WithRTX() throws {
        let offerText = try fixture("chrome-publish")
        let offer = try SessionDescription.parse(offerText)
        let r = try OfferAnswer.answerPublish(offerText, local: local)
        let audio = try #require(r.tracks.first { $0.codec == .opus })
        let video = try #require(r.tracks.first { $0.codec == .vp8 })
        #expect(audio.payloadType == 111 && audio.ssrc == offer.media[0].ssrcs.first)
        #expect(audio.audioLevelExtensionID == offer.media[0].extmaps.first { $0.value == OfferAnswer.audioLevelURI }?.key)
        let fid = try #require(offer.media[1].fidGroups.first)
        #expect(video.ssrc == fid.media && video.rtxSSRC == fid.rtx)
        #expect(offer.media[1].rtpmaps[video.payloadType]?.name == "vp8")
        #expect(r.remote.fingerprint == DTLSFingerprint(sdp: offer.media[0].attribute("fingerprint")!))
        let answer = try SessionDescription.parse(r.answer.text)
        #expect(answer.attribute("ice-lite") != nil || answer.attributes.contains { $0.key == "ice-lite" })
        #expect(answer.bundleMids == ["0", "1"])
        for m in answer.media {
            #expect(m.direction == .recvonly)
            #expect(m.attribute("setup") == "passive" && m.has("rtcp-mux"))
            #expect(m.attribute("fingerprint") == local.fingerprint.description)
            #expect(m.values("candidate").count == 2)
        }
        let red = try #require(audio.redPayloadType)
        #expect(answer.media[0].formats == ["\(red)", "111"], "RED first so Chromium sends Opus with redundancy; G.722, PCMU and the rest are not accepted")
        #expect(answer.media[0].values("fmtp").contains("\(red) 111/111"))
        #expect(Set(answer.media[0].extmaps.values) == [OfferAnswer.audioLevelURI, OfferAnswer.midURI, OfferAnswer.transportCCURI])
        #expect(answer.media[1].formats.count == 2, "VP8 and its RTX")
        let fb = answer.media[1].values("rtcp-fb")
        for f in ["nack", "nack pli", "ccm fir", "goog-remb", "transport-cc"] { #expect(fb.contains("\(video.payloadType) \(f)"), "\(f)") }
        #expect(answer.media[1].extmaps.values.contains(OfferAnswer.transportCCURI))
        #expect(audio.transportCCExtensionID != nil && video.transportCCExtensionID != nil, "Chromium offers transport-cc: the node feeds it back")
        #expect(video.nack && video.remb && video.rtxPayloadType != nil)
        #expect(!answer.media[1].formats.contains { offer.media[1].rtpmaps[UInt8($0)!]?.name == "ulpfec" || offer.media[1].rtpmaps[UInt8($0)!]?.name == "red" },
                "video RED and ULPFEC are declined")
    }

    @Test(arguments: ["aiortc-publish", "firefox-publish"])
    func otherClientsPublishOffersBindTheirTracks(_ name: String) throws {
        let r = try OfferAnswer.answerPublish(try fixture(name), local: local)
        #expect(r.tracks.map(\.codec) == [.opus, .vp8])
        #expect(r.tracks[0].audioLevelExtensionID != nil)
        #expect(r.tracks[1].rtxSSRC != nil)
        #expect(try SessionDescription.parse(r.answer.text).bundleMids?.count == 2)
    }

    @Test(arguments: ["chrome-subscribe", "firefox-subscribe", "aiortc-subscribe"])
    func subscribeOfferBecomesSlots(_ name: String) throws {
        var next: UInt32 = 0x5000
        let r = try OfferAnswer.answerSubscribe(try fixture(name), local: local) { _, _, _ in next += 1; return next }
        #expect(r.slots.filter { $0.codec == .opus }.count == 3)
        #expect(r.slots.filter { $0.codec == .vp8 }.count == 2)
        #expect(Set(r.slots.map(\.ssrc)).count == 5)
        let answer = try SessionDescription.parse(r.answer.text)
        var streams = Set<String>()
        for (m, slot) in zip(answer.media.filter { $0.port != 0 }, r.slots) {
            #expect(m.direction == .sendonly)
            #expect(m.ssrcs == [slot.ssrc] + (slot.rtxSSRC.map { [$0] } ?? []))
            if let rtx = slot.rtxSSRC { #expect(m.fidGroups.first! == (slot.ssrc, rtx)) }
            #expect(m.mid == slot.mid)
            streams.insert(String(m.attribute("msid")!.split(separator: " ")[0]))
        }
        #expect(streams.count == r.slots.count, "every slot is its own stream: no lip sync across slots")
        #expect(r.slots.filter { $0.codec == .vp8 }.allSatisfy { $0.rtxSSRC != nil && $0.rtxPayloadType != nil }, "video slots have RTX")
        #expect(r.slots.filter { $0.codec == .vp8 }.allSatisfy { $0.absSendTimeExtensionID != nil || $0.transportCCExtensionID != nil },
                "video carries abs-send-time (REMB) or the transport-wide sequence number (transport-cc)")
    }

    @Test func subscriberExtensionIdsAboveFourteenAreNotNegotiated() throws {
        // Issue 23: abs-send-time offered as 17 was answered, then written in the one-byte form as 17 << 4 = id 1
        // (this subscriber's MID); 15 would be the one-byte stop marker. The node writes only one-byte ids
        // (1-14): an extension numbered above 14 is left out of the answer, one numbered 1-14 is kept.
        let offer = try fixture("chrome-subscribe")
            .replacingOccurrences(of: "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time", with: "a=extmap:17 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time")
            .replacingOccurrences(of: "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level", with: "a=extmap:15 urn:ietf:params:rtp-hdrext:ssrc-audio-level")
            .replacingOccurrences(of: "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01", with: "a=extmap:14 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01")
        var next: UInt32 = 0x5000
        let r = try OfferAnswer.answerSubscribe(offer, local: local) { _, _, _ in next += 1; return next }
        #expect(r.slots.allSatisfy { $0.absSendTimeExtensionID == nil && $0.audioLevelExtensionID == nil })
        #expect(r.slots.allSatisfy { $0.transportCCExtensionID == 14 })
        let answer = try SessionDescription.parse(r.answer.text)
        for m in answer.media where m.port != 0 {
            #expect(m.extmaps.keys.allSatisfy { OutgoingRTP.oneByteIDs.contains($0) }, "answered ids: \(m.extmaps.keys.sorted())")
            #expect(m.extmaps[14] != nil)
        }
    }

    @Test func payloadTypesThatReadAsRTCPAndMidsThatAreNotTokensAreNotTaken() throws {
        // 64-95 with the marker bit read as RTCP packet types 192-223 under rtcp-mux (RFC 5761 section 4).
        let pt80 = Self.minimal.replacingOccurrences(of: "111", with: "80")
        #expect(throws: SDPError.self) { try OfferAnswer.answerPublish(pt80, local: local) }
        // A mid is a token (RFC 8866 section 9): 'a/rtx' is not, and would share a key with slot a's RTX.
        let slash = try fixture("chrome-subscribe").replacingOccurrences(of: "a=mid:1\r\n", with: "a=mid:0/rtx\r\n")
        var next: UInt32 = 0x5000
        let r = try OfferAnswer.answerSubscribe(slash, local: local) { _, _, _ in next += 1; return next }
        #expect(!r.slots.contains { $0.mid.contains("/") })
        #expect(try SessionDescription.parse(r.answer.text).media.filter { $0.port == 0 }.count == 1, "that m-line is rejected")
    }

    @Test func anExtensionListedTwiceIsReadAndAnsweredUnderItsLowestID() throws {
        let twice = try fixture("chrome-publish").replacingOccurrences(
            of: "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n",
            with: "a=extmap:9 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\na=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n")
        #expect(twice.contains("a=extmap:9 "), "the fixture lists the level extension")
        for _ in 0..<4 {
            let r = try OfferAnswer.answerPublish(twice, local: local)
            #expect(r.tracks[0].audioLevelExtensionID == 1)
            let audio = try SessionDescription.parse(r.answer.text).media[0]
            #expect(audio.values("extmap").filter { $0.hasSuffix("ssrc-audio-level") } == ["1 urn:ietf:params:rtp-hdrext:ssrc-audio-level"])
        }
    }

    @Test func aPausedTransceiverIsAnsweredInactiveNotRejectedAndAnOfferOfOnlyPausedOnesIsTaken() throws {
        // A browser that sets its microphone's transceiver inactive re-offers it inactive: a rejected answer
        // (port 0) would stop the transceiver for good, and an offer with nothing else to send was refused
        // (issue 23's hostile attack 17 found it), keeping the track the client had stopped.
        let paused = Self.minimal.replacingOccurrences(of: "a=sendonly", with: "a=inactive")
        let r = try OfferAnswer.answerPublish(paused, local: local)
        #expect(r.tracks.isEmpty)
        let m = try #require(try SessionDescription.parse(r.answer.text).media.first)
        #expect(m.port != 0 && m.direction == .inactive && m.mid == "0", "kept, inactive")
        #expect(try SessionDescription.parse(r.answer.text).bundleMids == ["0"])
        var next: UInt32 = 0x5000
        let sub = try OfferAnswer.answerSubscribe(try fixture("chrome-subscribe").replacingOccurrences(of: "a=recvonly", with: "a=inactive"),
                                                  local: local) { _, _, _ in next += 1; return next }
        #expect(sub.slots.isEmpty)
        #expect(try SessionDescription.parse(sub.answer.text).media.allSatisfy { $0.port != 0 && $0.direction == .inactive })
    }

    static let minimal = """
        v=0\r
        o=- 1 1 IN IP4 0.0.0.0\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0\r
        a=fingerprint:sha-256 \((0..<32).map { _ in "AB" }.joined(separator: ":"))\r
        a=ice-ufrag:abcd\r
        a=ice-pwd:abcdefghijklmnopqrstuvwxyz\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r
        c=IN IP4 0.0.0.0\r
        a=mid:0\r
        a=sendonly\r
        a=rtcp-mux\r
        a=setup:actpass\r
        a=rtpmap:111 opus/48000/2\r
        a=ssrc:1234 cname:x\r

        """

    @Test func minimalOfferIsAnswered() throws {
        let r = try OfferAnswer.answerPublish(Self.minimal, local: local)
        #expect(r.tracks == [TrackDescription(codec: .opus, ssrc: 1234, payloadType: 111)])
    }

    @Test(arguments: [
        ("", "empty description"),
        ("hello", "not a <type>=<value> line"),
        ("v=1\r\n", "must start with v=0"),
        ("v=0\r\nm=audio\r\n", "m= needs"),
        ("v=0\r\nq=what\r\n", "unknown line type"),
    ])
    func malformedDescriptionsNameTheLine(_ text: String, _ reason: String) {
        do {
            _ = try SessionDescription.parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.reason.contains(reason), "\(error)")
            #expect(text.isEmpty || error.line >= 1)
        }
    }

    @Test(arguments: [
        ("a=fingerprint:sha-256", "a=fingerprint:sha-1 AB:CD\r\na=x", "sha-256"),
        ("a=setup:actpass", "a=setup:passive", "DTLS server"),
        ("a=rtcp-mux\r\n", "", "rtcp-mux"),
        ("a=group:BUNDLE 0", "a=group:LS 0", "BUNDLE"),
        ("a=ice-pwd:abcdefghijklmnopqrstuvwxyz", "a=ice-pwd:short", "ICE ufrag"),
        ("a=ssrc:1234 cname:x\r\n", "", "MID header extension"),
        ("opus/48000/2", "PCMU/8000", "no sendonly"),
    ])
    func unsupportedOffersAreRefusedWithAReason(_ find: String, _ replace: String, _ reason: String) {
        let text = Self.minimal.replacingOccurrences(of: find, with: replace)
        do {
            _ = try OfferAnswer.answerPublish(text, local: local)
            Issue.record("accepted an offer with \(replace)")
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }

    /// Inputs the fuzzers found crashing the parser (an empty split indexed at [0]).
    @Test(arguments: ["a=ssrc:\r\n", "a=ssrc: \r\n", "a=extmap:/ urn:x\r\n", "a=extmap:/\r\n"])
    func emptyAttributeValuesDoNotCrash(_ line: String) {
        let text = Self.minimal + line
        _ = try? OfferAnswer.answerPublish(text, local: local)
        _ = try? OfferAnswer.answerSubscribe(text, local: local) { _, _, _ in 1 }
    }

    @Test func portWithoutDigitsIsRefused() {
        #expect(throws: SDPError.self) { try SessionDescription.parse("v=0\r\nm=audio / UDP/TLS/RTP/SAVPF 0\r\n") }
    }

    @Test func withoutSSRCsTracksAreBoundByMid() throws {
        let text = Self.minimal.replacingOccurrences(of: "a=ssrc:1234 cname:x\r\n", with: "a=extmap:4 \(OfferAnswer.midURI)\r\n")
        let r = try OfferAnswer.answerPublish(text, local: local)
        #expect(r.tracks == [TrackDescription(codec: .opus, ssrc: nil, payloadType: 111, mid: "0", midExtensionID: 4)])
        #expect(r.answer.media[0].extmaps[4] == OfferAnswer.midURI, "the answer keeps the MID extension")
    }

    @Test func oversizedDescriptionIsRefused() {
        let huge = "v=0\r\n" + String(repeating: "a=x\r\n", count: 20_000)
        #expect(throws: SDPError.self) { try SessionDescription.parse(huge) }
    }
}
