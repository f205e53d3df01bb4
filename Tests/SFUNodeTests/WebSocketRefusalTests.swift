import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
@testable import SFUNode
import Testing

/// A WebSocket opening the API refuses is answered like any refused request (issue 40): the status and
/// `{"result", "msg"}` docs/openapi.yaml promises, not the bare 400 Hummingbird's WebSocket layer writes for
/// every upgrade it does not make. Over a real socket: the upgrade path is the server's, not the router's.
@Suite(.serialized, .timeLimit(.minutes(1))) struct WebSocketRefusalTests {
    /// The headers of a WebSocket opening (RFC 6455 section 4.1), and any others.
    static func opening(_ extra: [HTTPField.Name: String] = [:]) -> HTTPFields {
        var h = HTTPFields()
        h[.upgrade] = "websocket"
        h[.connection] = "Upgrade"
        h[.secWebSocketKey] = "dGhlIHNhbXBsZSBub25jZQ=="
        h[.secWebSocketVersion] = "13"
        for (k, v) in extra { h[k] = v }
        return h
    }

    struct Answer {
        var status: Int
        var result: Int?
        var msg: String
    }

    /// Opens each of `openings` (path, extra headers; GET unless `method`) on the node's API and reads the answers.
    static func open(_ node: Node, _ openings: [(String, [HTTPField.Name: String])], method: HTTPRequest.Method = .get) async throws -> [Answer] {
        let app = ControlAPI.application(node: node, logger: Logger(label: "test"))
        return try await app.test(.live) { client in
            var out: [Answer] = []
            for (path, extra) in openings {
                // A connection each: a refusal closes its connection.
                let r = try await TestClient.withClient(host: "localhost", port: client.port!) { c in
                    try await c.execute(TestClient.Request(path, method: method, headers: opening(extra)))
                }
                let json = (try? JSONSerialization.jsonObject(with: Data(buffer: r.body ?? ByteBuffer()))) as? [String: Any] ?? [:]
                out.append(Answer(status: Int(r.status.code), result: json["result"] as? Int, msg: json["msg"] as? String ?? ""))
            }
            return out
        }
    }

    @Test func anOpeningWithoutTheRightKeyIsA401WithItsCode() async throws {
        let node = try ControlAPITests.node(key: "s3cret")
        defer { node.stop() }
        let r = try await Self.open(node, [
            ("/v1/events", [:]),
            ("/v1/events?room=r", [.authorization: "Bearer wrong"]),
            ("/v1/relay", [.authorization: "Bearer wrong"]),
        ])
        for (i, a) in r.enumerated() {
            #expect(a.status == 401 && a.result == 6013, "\(i): \(a.status)/\(a.result ?? -1) \(a.msg)")
        }
    }

    @Test func aRelayOpeningOnANodeInNoClusterIsA404With6021() async throws {
        let node = try ControlAPITests.node(key: "s3cret")
        defer { node.stop() }
        let r = try await Self.open(node, [("/v1/relay", [.authorization: "Bearer s3cret"])])
        #expect(r[0].status == 404 && r[0].result == 6021, "\(r[0].status)/\(r[0].result ?? -1) \(r[0].msg)")
    }

    /// The rest of the class: a refused origin, and a route that is no WebSocket route (its handler is not run
    /// from an opening, whose body the upgrade path never reads).
    @Test func anOpeningFromAnotherOriginOrToAnHTTPRouteIsRefusedWithItsCode() async throws {
        let node = try ControlAPITests.node()
        defer { node.stop() }
        let r = try await Self.open(node, [
            ("/v1/events", [.origin: "http://evil.example"]),
            ("/v1/rooms", [:]),
        ])
        #expect(r[0].status == 403 && r[0].result == 6016, "\(r[0].status)/\(r[0].result ?? -1) \(r[0].msg)")
        #expect(r[1].status == 404 && r[1].result == 6011, "\(r[1].status)/\(r[1].result ?? -1) \(r[1].msg)")
        let drain = try await Self.open(node, [("/v1/node/drain", [.contentType: "application/json"])], method: .post)
        #expect(drain[0].status == 404 && drain[0].result == 6011, "\(drain[0].status)/\(drain[0].result ?? -1) \(drain[0].msg)")
        #expect(!node.isDraining, "an opening never runs an HTTP route")
    }
}
