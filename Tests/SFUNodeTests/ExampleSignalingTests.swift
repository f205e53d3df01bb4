import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
@testable import ExampleSignaling
import SFUClient
@testable import SFUNode
import Synchronization
import Testing

/// The example signaling server - the integration the README tells people to copy - against a node over a real
/// socket (issue 40): the server, not the browser, decides who moderates, and a browser waiting to be let into
/// a knock-enabled room learns nothing of the room until a moderator approves it.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ExampleSignalingTests {
    static let key = "m0derator-key"

    /// One browser's WebSocket: what the server sends it, read as it comes.
    final class Browser: Sendable {
        let outbox: AsyncStream<String>.Continuation
        private let received = Mutex<[String]>([])

        init() {
            let (stream, outbox) = AsyncStream.makeStream(of: String.self)
            self.outbox = outbox
            Task { [weak self] in
                for await text in stream { self?.received.withLock { $0.append(text) } }
            }
        }

        deinit { outbox.finish() }

        /// What it received so far, as JSON objects.
        var messages: [[String: Any]] {
            received.withLock { $0 }.map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        }
        func of(_ type: String) -> [[String: Any]] { messages.filter { $0["type"] as? String == type } }
        /// The node events relayed to it.
        var events: [[String: Any]] { of("event").compactMap { $0["event"] as? [String: Any] } }

        /// Waits (at most 5 s) until `condition` holds of what it received.
        @discardableResult
        func wait(_ condition: (Browser) -> Bool) async throws -> Bool {
            for _ in 0..<500 {
                if condition(self) { return true }
                try await Task.sleep(for: .milliseconds(10))
            }
            return condition(self)
        }
    }

    /// A server in front of a fresh node, its event relay running, for `body`.
    static func withServer(_ body: @escaping @Sendable (SignalingServer, ControlClient) async throws -> Void) async throws {
        let node = try LiveAPITests.node()
        defer { node.stop() }
        let app = ControlAPI.application(node: node, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            var c = SignalingServer.Configuration()
            c.node = URL(string: "http://127.0.0.1:\(client.port!)")!
            c.moderatorKey = key
            let server = SignalingServer(configuration: c)
            let relay = Task { await server.relayEvents() }
            defer { relay.cancel() }
            // The relay follows the node's events before any browser joins.
            for _ in 0..<100 where node.events.consumerCount == 0 { try await Task.sleep(for: .milliseconds(20)) }
            try await body(server, ControlClient(base: c.node))
        }
    }

    /// Joins `browser` with the message `fields` (room "r"); returns its participant id.
    static func join(_ server: SignalingServer, _ browser: Browser, _ fields: String) async -> String? {
        await server.handle(#"{"type":"join","room":"r",\#(fields)}"#, from: nil, outbox: browser.outbox)
    }

    static func role(_ api: ControlClient, _ id: String) async throws -> String? {
        let state = try await api.require("GET", "v1/rooms/r").json
        return (state["participants"] as? [[String: Any]])?.first { $0["participant"] as? String == id }?["role"] as? String
    }

    @Test func aBrowserCannotChooseItsRoleTheServersModeratorKeyDecides() async throws {
        try await Self.withServer { server, api in
            let mallory = Browser(), carol = Browser(), eve = Browser()
            let m = try #require(await Self.join(server, mallory, #""name":"Mallory","role":"moderator""#))
            #expect(try await Self.role(api, m) == "participant", "a browser asking for the role is a participant")
            let c = try #require(await Self.join(server, carol, #""name":"Carol","moderator_key":"\#(Self.key)""#))
            #expect(try await Self.role(api, c) == "moderator")
            #expect(await Self.join(server, eve, #""name":"Eve","role":"moderator","moderator_key":"guess""#) == nil)
            for b in [mallory, carol] { try await b.wait { !$0.of("joined").isEmpty } }
            try await eve.wait { !$0.of("error").isEmpty }
            #expect(mallory.of("joined").first?["role"] as? String == "participant")
            #expect(carol.of("joined").first?["role"] as? String == "moderator")
            #expect(eve.of("joined").isEmpty && (eve.of("error").first?["msg"] as? String)?.contains("moderator key") == true)
            // The participant's moderator commands are the node's to refuse (5003 and its kin).
            let r = try await server.command(["action": "lock", "locked": true], by: m)
            #expect(r.status == 403, "\(r.status) \(r.json)")
        }
    }

    @Test func aBrowserWaitingToBeLetInLearnsNothingOfTheRoomUntilApproved() async throws {
        try await Self.withServer { server, api in
            let carol = Browser(), alice = Browser(), dave = Browser()
            let c = try #require(await Self.join(server, carol, #""name":"Carol","knock":true,"role":"moderator","moderator_key":"\#(Self.key)""#))
            let a = try #require(await Self.join(server, alice, #""name":"Alice""#))
            _ = try await server.command(["action": "approve", "target": a], by: c)
            let d = try #require(await Self.join(server, dave, #""name":"Dave""#))
            // The room goes on while Dave waits: a lock, a hard mute, a pin.
            _ = try await server.command(["action": "lock", "locked": true], by: c)
            _ = try await server.command(["action": "mute", "target": a, "audio": true], by: c)
            _ = try await server.command(["action": "pin", "target": a], by: c)
            // Carol is told of the pin, the last of them: had Dave been told anything, he would have been by now.
            #expect(try await carol.wait { $0.events.contains { $0["type"] as? String == "pins" } })
            let joined = try #require(dave.of("joined").first)
            #expect(joined["awaited"] as? Bool == true && joined["dominant_speaker"] is NSNull)
            #expect(dave.of("roster").isEmpty, "no roster while waiting")
            let told = dave.events
            #expect(told.allSatisfy { $0["participant"] as? String == d }, "only events about Dave himself: \(told)")
            #expect(!told.isEmpty, "Dave is told that he waits")
            // Let in: told so, then the room.
            let approved = try await server.command(["action": "approve", "target": d], by: c)
            #expect(approved.status == 200)
            #expect(try await dave.wait { !$0.of("approved").isEmpty && $0.of("roster").last != nil })
            #expect(dave.of("approved").count == 1)
            let roster = try #require(dave.of("roster").last?["room"] as? [String: Any])
            #expect((roster["pinned"] as? [String]) == [a] && roster["locked"] as? Bool == true)
            _ = api
        }
    }
}
