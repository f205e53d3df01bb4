import Foundation
import SFUClient
import Testing
@testable import ExampleSignaling

extension SignalingServer {
    /// A browser in `room`, the room on `node` (as a placement would have said).
    func adopt(_ participant: String, room: String, node: String, outbox: AsyncStream<String>.Continuation) {
        browsers[participant] = Browser(participant: participant, name: participant, room: room, outbox: outbox)
        roomNodes[room] = ControlClient(base: URL(string: "http://\(node).example:8080")!, key: nil)
        roomNodeIDs[room] = node
    }

    var knownBrowsers: Set<String> { Set(browsers.keys) }
    func roomNode(_ room: String) -> String? { roomNodeIDs[room] }
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
        #expect(await server.roomNode("r") == "b")
        await server.relay(try #require(NodeEvent(text: #"{"type":"node_lost","room":"r","node":"b","participants":2,"home":true,"reason":"heartbeat_timeout"}"#)))
        #expect(await server.knownBrowsers == ["cy"])
        #expect(await server.roomNode("r") == nil)
        #expect(await server.roomNode("q") == "c")
        for who in ["ann", "bob"] {
            var it = try #require(streams[who]).makeAsyncIterator()
            let first = try #require(await it.next())
            let o = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any]
            #expect(o?["type"] as? String == "rejoin" && o?["reason"] as? String == "node_lost", "\(first)")
        }
    }
}
