import Foundation
import SFU
import Testing
@testable import WebRTCEdge

/// Simulcast publish offers (RFC 8853, RFC 8851, RFC 8852): what Chromium sends with three `sendEncodings`
/// (rid-based, SSRCs learned from the RID extension) and what older clients send (`a=ssrc-group:SIM`).
@Suite struct SimulcastOfferTests {
    let local = LocalTransport(ice: ICECredentials(ufrag: "nodeUfrg", password: "nodePasswordNodePassword"),
                               fingerprint: SDPTests.cert.fingerprint, candidates: [TransportAddress("127.0.0.1:10000")!])

    /// Chromium's publish offer (the fixture) as it reads with simulcast on: no SSRC lines for video, a rid
    /// per encoding and the simulcast list, in the offer's video section.
    static func chromiumSimulcast(_ lines: String = "a=rid:q send\r\na=rid:h send\r\na=rid:f send\r\na=simulcast:send q;h;f\r\n") throws -> String {
        let text = try fixture("chrome-publish")
        let video = try #require(text.range(of: "m=video"))
        var head = String(text[..<video.lowerBound]), tail = String(text[video.lowerBound...])
        tail = tail.split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("a=ssrc") }.joined(separator: "\r\n")
        if !tail.hasSuffix("\r\n") { tail += "\r\n" }
        head += tail + lines
        return head
    }

    @Test func aChromiumSimulcastOfferIsAnsweredWithTheLayersItSends() throws {
        let r = try OfferAnswer.answerPublish(try Self.chromiumSimulcast(), local: local)
        let layers = r.tracks.filter { $0.codec == .vp8 }
        #expect(layers.map(\.simulcast?.rid) == ["q", "h", "f"], "one track per encoding, in the offer's order")
        #expect(layers.map(\.simulcast?.index) == [0, 1, 2])
        #expect(layers.allSatisfy { $0.ssrc == nil && $0.mid == "1" && $0.midExtensionID == 4 })
        #expect(layers.allSatisfy { $0.simulcast?.ridExtensionID == 10 && $0.simulcast?.repairedRidExtensionID == 11 })
        #expect(layers.allSatisfy { $0.rtxPayloadType == 97 && $0.nack && $0.transportCCExtensionID == 3 })
        let video = try #require(try SessionDescription.parse(r.answer.text).media.first { $0.kind == "video" })
        #expect(video.values("rid") == ["q recv", "h recv", "f recv"])
        #expect(video.attribute("simulcast") == "recv q;h;f")
        #expect(video.extmaps[10] == SimulcastOffer.ridURI && video.extmaps[11] == SimulcastOffer.repairedRidURI)
        #expect(video.direction == .recvonly)
    }

    @Test func pausedStreamsAndAlternativesTakeTheirFirstRidAndAtMostThreeAreAnswered() throws {
        let lines = "a=rid:a send\r\na=rid:b send\r\na=rid:c send\r\na=rid:d send\r\na=simulcast:send ~a;b,c;c;d\r\n"
        let r = try OfferAnswer.answerPublish(try Self.chromiumSimulcast(lines), local: local)
        #expect(r.tracks.filter { $0.codec == .vp8 }.map(\.simulcast?.rid) == ["a", "b", "c"])
        let video = try #require(try SessionDescription.parse(r.answer.text).media.first { $0.kind == "video" })
        #expect(video.attribute("simulcast") == "recv a;b;c", "the client sends no stream the answer does not name")
    }

    @Test(arguments: [
        ("a=rid:q send\r\na=simulcast:send q;x\r\n", "no a=rid:x send"),
        ("a=rid:q send\r\na=rid:h send\r\n", "without a=simulcast"),
        ("a=rid:q!? send\r\na=simulcast:send q!?\r\n", "invalid rid"),
        ("a=rid:q recv\r\na=simulcast:send q\r\n", "no a=rid:q send"),
    ])
    func simulcastOffersTheNodeCannotFollowAreRefusedWithAReason(_ lines: String, _ reason: String) throws {
        let text = try Self.chromiumSimulcast(lines)
        do {
            _ = try OfferAnswer.answerPublish(text, local: local)
            Issue.record("accepted \(lines)")
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }

    @Test func ridBasedSimulcastWithoutTheRIDExtensionIsRefused() throws {
        let text = try Self.chromiumSimulcast().replacingOccurrences(of: "a=extmap:10 \(SimulcastOffer.ridURI)\r\n", with: "")
        #expect(throws: SDPError.self) { try OfferAnswer.answerPublish(text, local: local) }
    }

    @Test func anSSRCGroupSIMOfferGivesEachLayerItsSSRCAndRTX() throws {
        let lines = "a=ssrc-group:SIM 11 22 33\r\na=ssrc-group:FID 11 111\r\na=ssrc-group:FID 22 222\r\na=ssrc-group:FID 33 333\r\n"
            + "a=ssrc:11 cname:x\r\na=ssrc:22 cname:x\r\na=ssrc:33 cname:x\r\na=ssrc:111 cname:x\r\na=ssrc:222 cname:x\r\na=ssrc:333 cname:x\r\n"
        let r = try OfferAnswer.answerPublish(try Self.chromiumSimulcast(lines), local: local)
        let layers = r.tracks.filter { $0.codec == .vp8 }
        #expect(layers.map(\.ssrc) == [11, 22, 33] && layers.map(\.rtxSSRC) == [111, 222, 333])
        #expect(layers.map(\.simulcast?.index) == [0, 1, 2] && layers.allSatisfy { $0.simulcast?.rid == nil })
    }

    @Test func withoutTheRepairedRIDExtensionTheAnswerLeavesRTXOut() throws {
        let text = try Self.chromiumSimulcast().replacingOccurrences(of: "a=extmap:11 \(SimulcastOffer.repairedRidURI)\r\n", with: "")
        let r = try OfferAnswer.answerPublish(text, local: local)
        #expect(r.tracks.filter { $0.codec == .vp8 }.allSatisfy { $0.rtxPayloadType == nil })
        let video = try #require(try SessionDescription.parse(r.answer.text).media.first { $0.kind == "video" })
        #expect(!video.rtpmaps.values.contains { $0.name == "rtx" }, "an RTX stream nothing could bind is not negotiated")
    }
}
