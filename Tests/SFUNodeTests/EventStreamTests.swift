import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWebSocket
import SFUClient
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
}
