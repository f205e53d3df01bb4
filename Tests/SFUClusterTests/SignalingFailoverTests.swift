import Foundation
import SFUClient
import Testing
@testable import ExampleSignaling

extension SignalingServer {
    /// A browser in `room`, the room on `node` (as a placement would have said).
    func adopt(_ participant: String, room: String, node: String, outbox: AsyncStream<String>.Continuation) {
        let url = URL(string: "http://\(node).example:8080")!
        browsers[participant] = Browser(participant: participant, name: participant, room: room, outbox: outbox,
                                        node: ControlClient(base: url, key: nil), nodeID: node, nodeURL: url)
    }

    var knownBrowsers: Set<String> { Set(browsers.keys) }
    /// The nodes the room's browsers are on.
    func roomNodes(_ room: String) -> Set<String> { Set(browsers.values.filter { $0.room == room }.map(\.nodeID)) }
}

/// The example signaling server's side of a node failure: the browsers of a room on the dead node are told to
/// rejoin (and forgotten, so that their next join is placed anew); nobody else is disturbed.
@Suite struct SignalingFailoverTests {
    @Test func browsersOfARoomOnALostNodeAreToldToRejoinAndOthersAreNot() async throws {
        let server = SignalingServer(configuration: .init())
        var streams: [String: AsyncStream<String>] = [:]
        for (who, room, node) in [("ann", "r", "b"), ("bob", "r", "b"), ("cy", "q", "c")] {
            let (stream, outbox) = AsyncStream.makeStream(of: String.self)
            streams[who] = stream
            await server.adopt(who, room: room, node: node, outbox: outbox)
        }
        // Another node's loss says nothing about this room's node.
        await server.relay(try #require(NodeEvent(text: #"{"type":"node_lost","room":"r","node":"x","participants":0,"home":true,"reason":"heartbeat_timeout"}"#)))
        #expect(await server.knownBrowsers == ["ann", "bob", "cy"])
        #expect(await server.roomNodes("r") == ["b"])
        await server.relay(try #require(NodeEvent(text: #"{"type":"node_lost","room":"r","node":"b","participants":2,"home":true,"reason":"heartbeat_timeout"}"#)))
        #expect(await server.knownBrowsers == ["cy"])
        #expect(await server.roomNodes("r").isEmpty)
        #expect(await server.roomNodes("q") == ["c"])
        for who in ["ann", "bob"] {
            var it = try #require(streams[who]).makeAsyncIterator()
            let first = try #require(await it.next())
            let o = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any]
            #expect(o?["type"] as? String == "rejoin" && o?["reason"] as? String == "node_lost", "\(first)")
        }
    }

    /// A room across two nodes: the loss of one has only the browsers placed there rejoin.
    @Test func inARoomAcrossNodesOnlyTheLostNodesBrowsersRejoin() async throws {
        let server = SignalingServer(configuration: .init())
        var streams: [String: AsyncStream<String>] = [:]
        for (who, node) in [("ann", "b"), ("bob", "c"), ("cy", "c")] {
            let (stream, outbox) = AsyncStream.makeStream(of: String.self)
            streams[who] = stream
            await server.adopt(who, room: "r", node: node, outbox: outbox)
        }
        await server.relay(try #require(NodeEvent(text: #"{"type":"node_lost","room":"r","node":"c","participants":2,"home":false,"reason":"heartbeat_timeout"}"#)))
        #expect(await server.knownBrowsers == ["ann"])
        #expect(await server.roomNodes("r") == ["b"])
        for who in ["bob", "cy"] {
            var it = try #require(streams[who]).makeAsyncIterator()
            let first = try #require(await it.next())
            #expect(first.contains("rejoin"), "\(first)")
        }
    }
}
