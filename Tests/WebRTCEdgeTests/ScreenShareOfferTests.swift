import Foundation
import SFU
import Testing
@testable import WebRTCEdge

/// Screen share in offers (issue 14): a publish offer's second video m-line is a screen share when the
/// signaling server names its mid, or the offer marks it (`a=content:slides`, RFC 4796; a media stream id
/// beginning with "screen"); a subscribe offer's video m-lines named the same way are screen slots.
@Suite struct ScreenShareOfferTests {
    let local = LocalTransport(ice: ICECredentials(ufrag: "nodeUfrg", password: "nodePasswordNodePassword"),
                               fingerprint: SDPTests.cert.fingerprint, candidates: [TransportAddress("127.0.0.1:10000")!])

    /// Chromium's publish offer with a second video m-line (mid 2, its own SSRCs and stream id), as a browser
    /// offers a camera and a display capture; `extra` is added to the second section.
    static func cameraAndScreen(stream: String = "d7bf8a71-182a-4c19-8d32-7f61c0ed5432", extra: String = "") throws -> String {
        let text = try fixture("chrome-publish")
        let video = try #require(text.range(of: "m=video"))
        var second = String(text[video.lowerBound...])
            .replacingOccurrences(of: "a=mid:1", with: "a=mid:2")
            .replacingOccurrences(of: "921684939", with: "921684940")
            .replacingOccurrences(of: "4258420536", with: "4258420537")
            .replacingOccurrences(of: "d7bf8a71-182a-4c19-8d32-7f61c0ed5432", with: stream)
        if !second.hasSuffix("\r\n") { second += "\r\n" }
        return text.replacingOccurrences(of: "a=group:BUNDLE 0 1", with: "a=group:BUNDLE 0 1 2") + second + extra
    }

    @Test func aSecondVideoNamedByTheSignalingServerIsAScreenShare() throws {
        let r = try OfferAnswer.answerPublish(try Self.cameraAndScreen(), local: local, screenShareMids: ["2"])
        let video = r.tracks.filter { $0.codec.kind == .video }
        #expect(video.map(\.source) == [.camera, .screen])
        #expect(video.map(\.ssrc) == [921_684_939, 921_684_940])
        #expect(video.map(\.rtxSSRC) == [4_258_420_536, 4_258_420_537])
        let answered = try SessionDescription.parse(r.answer.text).media.filter { $0.kind == "video" }
        #expect(answered.map(\.port).allSatisfy { $0 != 0 } && answered.map(\.mid) == ["1", "2"])
        #expect(r.answer.text.contains("a=group:BUNDLE 0 1 2"))
    }

    @Test func anUnmarkedSecondVideoIsRejectedAsBefore() throws {
        let r = try OfferAnswer.answerPublish(try Self.cameraAndScreen(), local: local)
        #expect(r.tracks.filter { $0.codec.kind == .video }.map(\.source) == [.camera])
        let answered = try SessionDescription.parse(r.answer.text).media.filter { $0.kind == "video" }
        #expect(answered.map(\.port).last == 0, "port 0: the client knows the node does not take it")
    }

    @Test func theOfferMayMarkItsScreenShareItself() throws {
        let slides = try OfferAnswer.answerPublish(try Self.cameraAndScreen(extra: "a=content:slides\r\n"), local: local)
        #expect(slides.tracks.filter { $0.codec.kind == .video }.map(\.source) == [.camera, .screen], "RFC 4796 presentation content")
        let named = try OfferAnswer.answerPublish(try Self.cameraAndScreen(stream: "screen-1f0c"), local: local)
        #expect(named.tracks.filter { $0.codec.kind == .video }.map(\.source) == [.camera, .screen], "a stream named screen...")
    }

    @Test func twoScreenSharesAreNotTaken() throws {
        let r = try OfferAnswer.answerPublish(try Self.cameraAndScreen(), local: local, screenShareMids: ["1", "2"])
        #expect(r.tracks.filter { $0.codec.kind == .video }.map(\.source) == [.screen], "one screen share per participant")
    }

    @Test func aSubscribersVideoLinesNamedAsScreenAreScreenSlots() throws {
        let offer = try fixture("chrome-subscribe")
        let r = try OfferAnswer.answerSubscribe(offer, local: local, screenShareMids: ["4"]) { _, _, i in UInt32(100 + i) }
        let video = r.slots.filter { $0.codec.kind == .video }
        #expect(video.map(\.mid) == ["3", "4"])
        #expect(video.map(\.source) == [.camera, .screen])
        #expect(r.slots.filter { $0.codec.kind == .audio }.allSatisfy { $0.source == .camera }, "audio slots are not screen slots")
    }
}
