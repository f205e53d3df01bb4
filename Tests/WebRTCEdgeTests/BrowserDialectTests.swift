import Foundation
import SFU
import Testing
@testable import WebRTCEdge

/// How the other browsers write their offers, each from a fixture in its dialect: Firefox's simulcast (rids
/// with SSRCs and FID groups beside them, transport-cc on its RTX payload types, extmaps with a direction,
/// RED and ULPFEC), Safari's (H.264 profiles first, one in packetization-mode 0, H.265, RED for audio, no REMB),
/// session-level extmaps, `a=setup:active`, and an offer with no candidates at all (no trickle, gathered or not).
@Suite struct BrowserDialectTests {
    let local = LocalTransport(ice: ICECredentials(ufrag: "nodeUfrg", password: "nodePasswordNodePassword"),
                               fingerprint: SDPTests.cert.fingerprint, candidates: [TransportAddress("127.0.0.1:10000")!])

    @Test(arguments: ["firefox-simulcast-publish", "safari-publish"])
    func theyParseAndSerialiseUnchanged(_ name: String) throws {
        let d = try SessionDescription.parse(try fixture(name))
        #expect(d.bundleMids == d.media.compactMap(\.mid))
        #expect(try SessionDescription.parse(d.text) == d)
    }

    @Test func firefoxSimulcastIsBoundByRidWhateverItsSSRCLinesSay() throws {
        let r = try OfferAnswer.answerPublish(try fixture("firefox-simulcast-publish"), local: local)
        let layers = r.tracks.filter { $0.codec == .vp8 }
        #expect(layers.map(\.simulcast?.rid) == ["a", "b", "c"], "one track per rid, in the a=simulcast order")
        #expect(layers.allSatisfy { $0.ssrc == nil }, "Firefox's a=ssrc lines name no rid: the layers bind by the RID extension")
        #expect(layers.allSatisfy { $0.simulcast?.ridExtensionID == 10 && $0.simulcast?.repairedRidExtensionID == 11 })
        #expect(layers.allSatisfy { $0.rtxPayloadType == 124 && $0.transportCCExtensionID == 7 && $0.nack })
        let video = try #require(try SessionDescription.parse(r.answer.text).media.first { $0.kind == "video" })
        #expect(video.attribute("simulcast") == "recv a;b;c")
        #expect(video.formats == ["120", "124"], "VP8 and its RTX; VP9, H.264, RED and ULPFEC left out")
        #expect(!video.values("rtcp-fb").contains { $0.hasPrefix("124 ") }, "no feedback answered on the RTX payload type")
        let audio = try #require(r.tracks.first { $0.codec == .opus })
        #expect(audio.payloadType == 109 && audio.audioLevelExtensionID == 1 && audio.ssrc == 2_210_334_455)
        let answerAudio = try SessionDescription.parse(r.answer.text).media[0]
        #expect(answerAudio.extmaps[2] == nil, "csrc-audio-level (2/recvonly) is not answered")
        #expect(answerAudio.values("extmap").allSatisfy { !$0.contains("/") || $0.contains("://") }, "\(answerAudio.values("extmap"))")
    }

    @Test func firefoxH264SimulcastWithOneRidIsOneLayer() throws {
        // Firefox asked for H.264 alone and one encoding: a=simulcast with a single rid.
        var text = try fixture("firefox-simulcast-publish")
        text = text.replacingOccurrences(of: "m=video 9 UDP/TLS/RTP/SAVPF 120 124 121 125 126 127 97 98 123 122 119", with: "m=video 9 UDP/TLS/RTP/SAVPF 126 127")
            .replacingOccurrences(of: "a=rid:b send\n", with: "").replacingOccurrences(of: "a=rid:c send\n", with: "")
            .replacingOccurrences(of: "a=simulcast:send a;b;c", with: "a=simulcast:send a")
        let offer = try SessionDescription.parse(text)
        let r = try OfferAnswer.answerPublish(offer, local: local)
        let video = r.tracks.filter { $0.codec == .h264 }
        #expect(video.count == 1 && video[0].simulcast?.rid == "a" && video[0].payloadType == 126 && video[0].rtxPayloadType == 127)
        #expect(video[0].h264?.profile == .constrainedBaseline)
        #expect(try SessionDescription.parse(r.answer.text).media[1].attribute("simulcast") == "recv a")
    }

    @Test func safariIsAnsweredWithWhatItSendsAndNoREMB() throws {
        let text = try fixture("safari-publish")
        let offer = try SessionDescription.parse(text)
        let r = try OfferAnswer.answerPublish(offer, local: local)
        let audio = try #require(r.tracks.first { $0.codec == .opus })
        #expect(audio.payloadType == 111 && audio.redPayloadType == 63 && audio.audioLevelExtensionID == 1)
        let video = try #require(r.tracks.first { $0.codec.kind == .video })
        #expect(video.ssrc == 2_233_445_566 && video.rtxSSRC == 3_344_556_677)
        #expect(!video.remb && video.transportCCExtensionID == 3, "Safari offers transport-cc and no goog-remb: the node estimates from transport-cc")
        let answerVideo = try #require(try SessionDescription.parse(r.answer.text).media.first { $0.kind == "video" })
        let answered = answerVideo.formats.compactMap { UInt8($0) }
        #expect(!answered.contains(100), "H.264 in packetization-mode 0 is not taken")
        #expect(!answered.contains(104) && !answered.contains(107), "neither H.265 nor video RED")
        #expect(!answerVideo.values("rtcp-fb").contains { $0.hasSuffix("goog-remb") }, "no REMB answered to a client that did not offer it")
        if video.codec == .h264 {
            #expect(video.h264 != nil && [96, 98].contains(video.payloadType), "a packetization-mode 1 profile: \(video.payloadType)")
        } else {
            #expect(video.codec == .vp8 && video.payloadType == 102 && video.rtxPayloadType == 125)
        }
    }

    @Test func sessionLevelExtmapsApplyToEveryMediaSection() throws {
        // The extensions written once at session level instead of per m-line (RFC 8285 section 5).
        var lines = try fixture("chrome-publish").components(separatedBy: "\r\n")
        let extmaps = lines.filter { $0.hasPrefix("a=extmap:") }
        let perMedia = Dictionary(grouping: extmaps, by: { $0 }).filter { $0.value.count > 1 }.keys
        lines.removeAll { perMedia.contains($0) }
        let at = lines.firstIndex { $0.hasPrefix("m=") }!
        lines.insert(contentsOf: perMedia.sorted(), at: at)
        let offer = try SessionDescription.parse(lines.joined(separator: "\r\n"))
        #expect(!perMedia.isEmpty && offer.attributes.contains { $0.key == "extmap" })
        let r = try OfferAnswer.answerPublish(offer, local: local)
        let original = try OfferAnswer.answerPublish(try fixture("chrome-publish"), local: local)
        #expect(r.tracks.map(\.transportCCExtensionID) == original.tracks.map(\.transportCCExtensionID))
        #expect(r.tracks.map(\.midExtensionID) == original.tracks.map(\.midExtensionID))
        #expect(r.tracks.allSatisfy { $0.transportCCExtensionID != nil }, "the extensions written at session level are read")
    }

    @Test func anActiveOfferAndOneWithoutCandidatesAreAnswered() throws {
        // No trickle and nothing gathered: no a=candidate, a=end-of-candidates, c=IN IP4 0.0.0.0; setup active.
        let text = try fixture("chrome-publish")
            .components(separatedBy: "\r\n").filter { !$0.hasPrefix("a=candidate:") }.joined(separator: "\r\n")
            .replacingOccurrences(of: "a=setup:actpass", with: "a=setup:active")
        #expect(!text.contains("a=candidate:"))
        let r = try OfferAnswer.answerPublish(text, local: local)
        #expect(r.remote.relayCandidates.isEmpty)
        let answer = try SessionDescription.parse(r.answer.text)
        #expect(answer.media.allSatisfy { $0.attribute("setup") == "passive" && $0.values("candidate").count == 1 })
        // Passive is the node's own role: an offer that wants the node to be the DTLS client is refused.
        let passive = text.replacingOccurrences(of: "a=setup:active", with: "a=setup:passive")
        #expect(throws: SDPError.self) { try OfferAnswer.answerPublish(passive, local: local) }
    }
}
