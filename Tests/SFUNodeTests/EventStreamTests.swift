import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWebSocket
import Logging
import SFUClient
import SFUNode
import WebRTCEdge
import Synchronization
import Testing

/// The signaling side's event stream client (`SFUClient.EventStream`) against servers that misbehave.
@Suite struct EventStreamTests {
    /// A server that accepts the WebSocket and then says nothing, answers no ping and never closes: a node
    /// killed without a FIN, a NAT that forgot the flow, or frames lost behind the 101. The stream must find
    /// out by itself and connect again (it used to wait forever).
    @Test func aStreamWhoseServerFallsSilentConnectsAgain() async throws {
        let opened = Atomic<Int>(0)
        let release = Atomic<Bool>(false)
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.ws("/v1/events") { _, _ in .upgrade([:]) } onUpgrade: { _, _, _ in
            opened.add(1, ordering: .relaxed)
            // Never reads the inbound stream (so pings go unanswered), never writes, never closes.
            while !release.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(20)) }
        }
        let app = Application(router: Router(), server: .http1WebSocketUpgrade(webSocketRouter: router),
                              configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let stream = EventStream(api: URL(string: "http://127.0.0.1:\(client.port!)")!, pingInterval: .milliseconds(200))
            let task = Task { await stream.run { _ in } }
            // Two unanswered ping periods, the close, the stream's 1 s pause, the new connection: about 1.5 s.
            for _ in 0..<200 where opened.load(ordering: .relaxed) < 2 { try await Task.sleep(for: .milliseconds(50)) }
            task.cancel()
            release.store(true, ordering: .relaxed)
            #expect(opened.load(ordering: .relaxed) >= 2, "the stream noticed the silent connection and opened another")
        }
    }

    /// Issue 23: after `events_reset` the stream resumes from the reset's `next_seq` and `stream`, not from the
    /// dead resume point; later events move the point on; a refused query forgets it. Against a scripted
    /// server that records each connection's query and closes only once the message was handled (a close
    /// right behind the frames can lose them in the client's upgrade, see LiveAPITests.rawWebSocket).
    @Test func aResetMovesTheResumePointToTheNodesNewNumbering() async throws {
        let script = [
            #"{"type":"events_reset","reason":"since_ahead","since":18446744073709551615,"next_seq":7,"stream":"00000000000000ab","room":null,"time":1}"#,
            #"{"type":"lock","room":"r","seq":7,"stream":"00000000000000ab","locked":true,"by":"m","time":2}"#,
            #"{"type":"error","room":null,"result":6010,"msg":"query parameter 'stream' must be 16 hex digits","time":3}"#,
            #"{"type":"lock","room":"r","seq":1,"stream":"00000000000000cd","locked":false,"by":"m","time":4}"#,
        ]
        let queries = Shared<[String]>([]), handled = Shared<[NodeEvent]>([])
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.ws("/v1/events") { _, _ in .upgrade([:]) } onUpgrade: { _, outbound, context in
            let n = queries.withLock { $0.append(context.request.uri.query ?? ""); return $0.count }
            guard n <= script.count else { return }
            try await outbound.write(.text(script[n - 1]))
            for _ in 0..<250 where handled.withLock({ $0.count }) < n { try await Task.sleep(for: .milliseconds(20)) }
        }
        let app = Application(router: Router(), server: .http1WebSocketUpgrade(webSocketRouter: router),
                              configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let stream = EventStream(api: URL(string: "http://127.0.0.1:\(client.port!)")!, since: .max)
            let task = Task { await stream.run { e in handled.withLock { $0.append(e) } } }
            for _ in 0..<300 where queries.withLock({ $0.count }) < 5 { try await Task.sleep(for: .milliseconds(20)) }
            task.cancel()
        }
        let q = queries.withLock { $0 }
        #expect(q.count >= 5, "\(q)")
        #expect(q.first == "since=18446744073709551615", "the first connection resumes where it was told (no stream known)")
        #expect(q.dropFirst().first == "since=6&stream=00000000000000ab", "after the reset: just before next_seq, in the new stream")
        #expect(q.dropFirst(2).first == "since=7&stream=00000000000000ab", "after an event: that event")
        #expect(q.dropFirst(3).first == "", "after a refused query: no resume point")
        #expect(q.dropFirst(4).first == "since=1&stream=00000000000000cd")
        #expect(handled.withLock { $0.map(\.type) }.prefix(2) == ["events_reset", "lock"], "the reset reaches the consumer")
    }

    /// Against a real node: a resume point from before a restart (`since` far past the node's counter, a
    /// stream of another process) is reset, the consumer hears of it, and then gets the new events.
    @Test func aConsumerResumingAcrossANodeRestartIsToldAndThenFollowsTheNewNumbering() async throws {
        var c = NodeConfiguration()
        c.workers = 1
        c.mediaListen = TransportAddress("127.0.0.1:0")!
        c.apiListen = TransportAddress("127.0.0.1:0")!
        let node = try Node(configuration: c)
        node.start()
        defer { node.stop() }
        let got = Shared<[NodeEvent]>([])
        try await ControlAPI.application(node: node, logger: Logger(label: "test")).test(.live) { client in
            let stream = EventStream(api: URL(string: "http://127.0.0.1:\(client.port!)")!, since: 1_000_000, stream: "0123456789abcdef")
            let task = Task { await stream.run { e in got.withLock { $0.append(e) } } }
            for _ in 0..<250 where got.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(20)) }
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            _ = try await client.execute(uri: "/v1/rooms", method: .post, headers: headers, body: ByteBuffer(string: #"{"room":"r"}"#))
            _ = try await client.execute(uri: "/v1/rooms/r/participants", method: .post, headers: headers,
                                         body: ByteBuffer(string: #"{"participant":"a"}"#))
            for _ in 0..<250 where got.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(20)) }
            task.cancel()
        }
        let events = got.withLock { $0 }
        #expect(events.first?.type == "events_reset" && events.first?["reason"] as? String == "stream_changed")
        #expect(events.first?.stream == node.events.stream && events.first?.seq == nil)
        #expect(events.dropFirst().first?.type == "participant_state" && events.dropFirst().first?.seq == 1)
        #expect(events.dropFirst().first?.stream == node.events.stream)
    }
}

/// A value several tasks read and write (a class, so closures share it rather than capture a copy).
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ v: Value) { value = Mutex(v) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}
