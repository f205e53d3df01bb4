import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import SFUClient
import SFUNode
import Testing
import WebRTCEdge

/// The signaling side's API client (`SFUClient.ControlClient`) against a node over a real socket.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ControlClientTests {
    /// Runs `body` with a client of a fresh node that has room "r" with participant "a".
    func withClient(_ body: @escaping @Sendable (ControlClient) async throws -> Void) async throws {
        let node = try LiveAPITests.node()
        defer { node.stop() }
        let app = ControlAPI.application(node: node, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            let api = ControlClient(base: URL(string: "http://127.0.0.1:\(client.port!)")!)
            try await api.require("POST", "v1/rooms", ["room": "r"])
            try await api.require("POST", "v1/rooms/r/participants", ["participant": "a"])
            try await body(api)
        }
    }

    static func acceptedMids(_ reply: ControlClient.Reply) throws -> [String] {
        let answer = try SessionDescription.parse(try #require(reply.json["sdp"] as? String))
        return answer.media.filter { $0.port != 0 }.compactMap(\.mid)
    }

    @Test func aPublishOfferThatNamesItsScreenShareSendsACameraAndAScreen() async throws {
        try await withClient { api in
            let reply = try await api.offer(.publish, room: "r", participant: "a", sdp: ControlAPITests.cameraAndScreenOffer(),
                                            screenShareMids: ["2"])
            #expect(reply.json["change"] as? String == "created")
            #expect(try Self.acceptedMids(reply) == ["1", "2"])
            let state = try await api.require("GET", "v1/rooms/r")
            let member = (state.json["participants"] as? [[String: Any]])?.first
            #expect((member?["publishes"] as? [String: Bool])?["screen"] == true)
        }
    }

    @Test func aPublishOfferThatNamesNoScreenShareHasItsSecondVideoRejected() async throws {
        try await withClient { api in
            let reply = try await api.offer(.publish, room: "r", participant: "a", sdp: ControlAPITests.cameraAndScreenOffer())
            #expect(try Self.acceptedMids(reply) == ["1"])
        }
    }

    @Test func aRefusedOfferThrowsWithTheNodesCode() async throws {
        try await withClient { api in
            let refusal = await #expect(throws: APIRefusal.self) {
                try await api.offer(.subscribe, room: "r", participant: "nobody", sdp: ControlAPITests.offer(publish: false))
            }
            #expect(refusal?.status == 404 && refusal?.result == 5126)
        }
    }
}
