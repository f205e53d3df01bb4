import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import HummingbirdWSTesting
import Logging
import NIOCore
import NIOPosix
import NodeIO
import SFU
import SFUNode
import Synchronization
import Testing
import WebRTCEdge

/// The control API over a real socket: the events WebSocket and `/metrics`.
@Suite(.serialized, .timeLimit(.minutes(1))) struct LiveAPITests {
    static func node(key: String? = nil) throws -> Node {
        var c = NodeConfiguration()
        c.workers = 1
        c.mediaListen = TransportAddress("127.0.0.1:0")!
        c.apiListen = TransportAddress("127.0.0.1:0")!
        c.apiKey = key
        let n = try Node(configuration: c)
        n.start()
        return n
    }

    static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    static func post(_ client: some TestClientProtocol, _ uri: String, _ body: [String: Any]) async throws -> Int {
        let data = try JSONSerialization.data(withJSONObject: body)
        return Int(try await client.execute(uri: uri, method: .post, headers: [.contentType: "application/json"],
                                            body: ByteBuffer(bytes: data)).status.code)
    }

    @Test func theEventsWebSocketStreamsARoomsEventsInOrder() async throws {
        let node = try Self.node()
        defer { node.stop() }
        let app = ControlAPI.application(node: node, logger: Logger(label: "test"))
        let received = try await app.test(.live) { client in
            #expect(try await Self.post(client, "/v1/rooms", ["room": "r"]) == 201)
            #expect(try await Self.post(client, "/v1/rooms", ["room": "other"]) == 201)
            let got = Mutex<[String]>([])
            // since=0: the server subscribes on its side of the upgrade, possibly after the posts below; the
            // history makes the order of the two irrelevant.
            try await client.ws("/v1/events?room=r&since=0") { inbound, outbound, _ in
                Task {
                    _ = try await Self.post(client, "/v1/rooms/other/participants", ["participant": "x"])
                    _ = try await Self.post(client, "/v1/rooms/r/participants", ["participant": "mod", "role": "moderator"])
                    _ = try await Self.post(client, "/v1/rooms/r/participants", ["participant": "a"])
                    _ = try await Self.post(client, "/v1/rooms/r/lock", ["by": "mod", "locked": true])
                }
                for try await message in inbound.messages(maxSize: 1 << 16) {
                    guard case .text(let text) = message else { continue }
                    let count = got.withLock { $0.append(text); return $0.count }
                    if count == 3 { try await outbound.close(.normalClosure, reason: nil); break }
                }
            }
            return got.withLock { $0 }.map(Self.json)
        }
        #expect(received.map { $0["type"] as? String } == ["participant_state", "participant_state", "lock"])
        #expect(received.map { $0["participant"] as? String } == ["mod", "a", nil])
        #expect(received.allSatisfy { $0["room"] as? String == "r" && ($0["time"] as? Int ?? 0) > 1_700_000_000_000 })
        let seqs = received.compactMap { $0["seq"] as? Int }
        #expect(seqs.count == 3 && seqs == seqs.sorted() && Set(seqs).count == 3, "increasing sequence numbers")
        #expect(received[2]["locked"] as? Bool == true && received[2]["by"] as? String == "mod")
    }

    @Test func theEventsRouteAnswersPlainRequestsWith426AndBadQueriesWithAReason() async throws {
        let node = try Self.node()
        defer { node.stop() }
        let app = ControlAPI.application(node: node, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            let plain = try await client.execute(uri: "/v1/events", method: .get)
            #expect(plain.status.code == 426)
            #expect(Self.json(String(buffer: plain.body))["result"] as? Int == 6014)
            // Over a raw connection, not the WebSocket client: the refusal comes right behind the 101, and when the
            // client's event loop is late (a loaded machine) the 101, the frames and the server's FIN reach it in
            // one read. The client's HTTP decoder is removed one event-loop turn after the 101 (swift-nio), the
            // EOF is handled before that turn, and the decoder drops the bytes behind the 101 and the half-close
            // never reaches the WebSocket's inbound stream: the client waited forever (see `rawWebSocket`).
            for (query, parameter) in [("since=soon", "since"), ("roam=r", "roam"), ("since=18446744073709551616", "since"),
                                       ("since=-1", "since"), ("since=1e3", "since"), ("since=1&stream=xyz", "stream"),
                                       ("since=1&stream=%2B123456789abcdef", "stream"), ("since=1&stream=0123456789abcdef0", "stream")] {
                let (status, frames) = try await Self.rawWebSocket(port: client.port!, path: "/v1/events?\(query)")
                #expect(status.hasPrefix("HTTP/1.1 101"), "\(query): \(status)")
                #expect(frames.map(\.opcode) == [0x1, 0x8], "\(query): one text message, then a close frame")
                let got = Self.json(String(decoding: frames.first?.payload ?? [], as: UTF8.self))
                #expect(got["type"] as? String == "error" && got["result"] as? Int == 6010, "\(query): \(got)")
                #expect((got["msg"] as? String)?.contains(parameter) == true)
                let close = frames.count == 2 ? frames[1].payload : []
                #expect(close.count > 2 && Int(close[0]) << 8 | Int(close[1]) == 1008, "\(query): policy violation")
                #expect(String(decoding: close.dropFirst(2), as: UTF8.self).contains(parameter))
            }
        }
    }

    /// Issue 23: `since=18446744073709551615` trapped in the hub and took the node down. Over the real route:
    /// every resume point the node cannot honour gets `events_reset` first and the node stays up; one it can
    /// is served as before.
    @Test func resumePointsTheNodeCannotHonourAreResetAndTheNodeStaysUp() async throws {
        let node = try Self.node()
        defer { node.stop() }
        let app = ControlAPI.application(node: node, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            #expect(try await Self.post(client, "/v1/rooms", ["room": "r"]) == 201)
            #expect(try await Self.post(client, "/v1/rooms/r/participants", ["participant": "a"]) == 201)
            for _ in 0..<200 where node.events.nextSeq < 2 { try await Task.sleep(for: .milliseconds(10)) }  // the pump's 10 ms
            let next = node.events.nextSeq, stream = node.events.stream
            #expect(next >= 2)
            func first(_ query: String) async throws -> [String: Any] {
                let (status, frames) = try await Self.rawWebSocket(port: client.port!, path: "/v1/events?\(query)", frames: 1)
                #expect(status.hasPrefix("HTTP/1.1 101"), "\(query): \(status)")
                return Self.json(String(decoding: frames.first?.payload ?? [], as: UTF8.self))
            }
            var other = Array(stream)
            other[0] = other[0] == "0" ? "1" : "0"
            for (query, reason) in [("since=18446744073709551615", "since_ahead"), ("since=\(next)", "since_ahead"),
                                    ("since=\(next - 1)&stream=\(String(other))", "stream_changed"),
                                    ("since=\(UInt64(Int64.max) + 1)&stream=\(stream.uppercased())", "since_ahead")] {
                let o = try await first(query)
                #expect(o["type"] as? String == "events_reset" && o["reason"] as? String == reason, "\(query): \(o)")
                #expect(o["next_seq"] as? Int == Int(next) && o["stream"] as? String == stream && o["seq"] == nil, "\(query): \(o)")
            }
            // Resumable: the same stream and a since it numbered, the history replayed as before.
            let replayed = try await first("since=0&stream=\(stream)")
            #expect(replayed["type"] as? String == "participant_state" && replayed["seq"] as? Int == 1 && replayed["stream"] as? String == stream)
            // Up to date (since = the newest): no reset, nothing replayed; the first message is the next event.
            async let newest = first("since=\(next - 1)&stream=\(stream)")
            try await Task.sleep(for: .milliseconds(100))
            #expect(try await Self.post(client, "/v1/rooms/r/participants", ["participant": "b"]) == 201)
            let o = try await newest
            #expect(o["type"] as? String == "participant_state" && o["participant"] as? String == "b" && o["seq"] as? Int == Int(next))
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status.code == 200, "the node is up")
        }
    }

    /// Issue 23 over a real socket, where the server reads Host into the request's authority: a page on a name
    /// rebound to 127.0.0.1 (`127.attacker.example`) reads nothing; 127.0.0.1 and localhost still do.
    @Test func aReboundHostIsRefusedOverTheWire() async throws {
        let node = try Self.node()
        defer { node.stop() }
        let app = ControlAPI.application(node: node, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            #expect(try await Self.post(client, "/v1/rooms", ["room": "victim"]) == 201)
            for path in ["/v1/rooms", "/v1/rooms/victim", "/metrics"] {
                for host in ["127.attacker.example", "127.attacker.example:\(client.port!)", "127.0.0.1.evil.example", "127.1", "[::2]"] {
                    let (status, body) = try await Self.rawHTTP(port: client.port!, "GET \(path) HTTP/1.1\r\nHost: \(host)\r\n")
                    #expect(status == 403 && Self.json(body)["result"] as? Int == 6016, "\(path) Host \(host): \(status) \(body.prefix(80))")
                    #expect(!body.contains("victim") || body.contains("not a loopback"), "nothing of the room leaks")
                }
                for host in ["127.0.0.1:\(client.port!)", "localhost:\(client.port!)", "[::1]:\(client.port!)"] {
                    let (status, _) = try await Self.rawHTTP(port: client.port!, "GET \(path) HTTP/1.1\r\nHost: \(host)\r\n")
                    #expect(status == 200, "\(path) Host \(host)")
                }
            }
            // A browser sends no ws:// Origin. swift-websocket's client (EventStream; `client.ws` in the tests above)
            // sends ws://<host> on its WebSocket opening: that alone passes. Anywhere else, or naming another
            // host, a ws:// or wss:// origin is refused like any unlisted origin.
            let p = client.port!
            let (status, body) = try await Self.rawHTTP(port: p, "GET /v1/rooms HTTP/1.1\r\nHost: 127.0.0.1:\(p)\r\nOrigin: ws://127.0.0.1\r\n")
            #expect(status == 403 && Self.json(body)["result"] as? Int == 6016, "a ws:// origin on a plain request: \(status)")
            // An opening the guard refuses is refused as any request is (403 and the 6016 body: `WebSocketRefusals`,
            // WebSocketRefusalTests), never upgraded.
            for origin in ["ws://evil.example", "wss://127.0.0.1.evil", "http://127.0.0.1:8000"] {
                let refused = try await Self.rawWebSocket(port: p, path: "/v1/events", frames: 1, origin: origin)
                #expect(refused.status.hasPrefix("HTTP/1.1 403"), "\(origin): \(refused.status)")
            }
            let own = try await Self.rawWebSocket(port: p, path: "/v1/events?since=18446744073709551615", frames: 1, origin: "ws://localhost")
            #expect(own.status.hasPrefix("HTTP/1.1 101"), "swift-websocket's own origin opens the stream: \(own.status)")
        }
    }

    /// One HTTP/1.1 request written as given (the request line and headers, without the final empty line;
    /// `Connection: close` is added) over a plain TCP connection: the status code and the body.
    static func rawHTTP(port: Int, _ head: String) async throws -> (status: Int, body: String) {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: head + "Connection: close\r\n\r\n"))
            var bytes: [UInt8] = []
            for try await chunk in inbound { bytes += chunk.readableBytesView }
            let text = String(decoding: bytes, as: UTF8.self)
            let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
            let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
            return (status, body)
        }
    }

    /// A WebSocket opening over a plain TCP connection: the upgrade request, then everything the server sends
    /// until it ends its side (its status line and its frames, unmasked as a server's are), then a close frame
    /// back. The byte stream is read as it comes, by one handler installed before the first read, with no
    /// pipeline change after the upgrade: every byte and the end of input reach the reader whenever they arrive.
    /// (HummingbirdWSClient, through swift-nio's client upgrade handler, can lose both when the server's frames
    /// and FIN arrive in the read that carries the 101; see the refusal test above.)
    ///
    /// With `frames`, reading stops once that many frames came (a stream that stays open), and the close
    /// frame goes out then.
    static func rawWebSocket(port: Int, path: String, frames wanted: Int? = nil,
                             origin: String? = nil) async throws -> (status: String, frames: [(opcode: UInt8, payload: [UInt8])]) {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)  // our close frame still goes out after their FIN
            .connect(host: "localhost", port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: localhost:\(port)\r\nUpgrade: websocket\r\n"
                + (origin.map { "Origin: \($0)\r\n" } ?? "")
                + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"))
            var bytes: [UInt8] = []
            func parse() -> (status: String, frames: [(opcode: UInt8, payload: [UInt8])]) {
                let end = bytes.indices.first { bytes[$0...].starts(with: Array("\r\n\r\n".utf8)) } ?? bytes.count
                let status = String(decoding: bytes[..<end].prefix { $0 != 0x0D }, as: UTF8.self)
                var frames: [(opcode: UInt8, payload: [UInt8])] = []
                var i = end + 4
                while i + 2 <= bytes.count {
                    let short = Int(bytes[i + 1] & 0x7F), start = i + 2 + (short == 126 ? 2 : 0)  // 127 (64-bit length): not here
                    guard bytes[i + 1] & 0x80 == 0, short < 127, start <= bytes.count else { break }
                    let length = short == 126 ? Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]) : short
                    guard start + length <= bytes.count else { break }
                    frames.append((bytes[i] & 0x0F, Array(bytes[start..<start + length])))
                    i = start + length
                }
                return (status, frames)
            }
            for try await chunk in inbound {  // ends with the server's FIN
                bytes += chunk.readableBytesView
                if let wanted, parse().frames.count >= wanted { break }
            }
            let (status, frames) = parse()
            // Our close frame (masked, as a client's must be), echoing the server's code: the handshake ends and
            // the server closes the connection without waiting out its close timeout.
            let mask: [UInt8] = [1, 2, 3, 4], code: [UInt8] = frames.last.map { Array($0.payload.prefix(2)) } ?? [0x03, 0xE8]
            try? await outbound.write(ByteBuffer(bytes: [0x88, 0x80 | UInt8(code.count)] + mask + code.enumerated().map { $1 ^ mask[$0 % 4] }))
            return (status, frames)
        }
    }

    @Test func withAnAPIKeyTheEventsWebSocketAndMetricsNeedTheBearerToo() async throws {
        let node = try Self.node(key: "k3y")
        defer { node.stop() }
        let app = ControlAPI.application(node: node, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(metrics.status.code == 401)
            await #expect(throws: (any Error).self, "the upgrade is refused without the key") {
                try await client.ws("/v1/events") { inbound, _, _ in for try await _ in inbound {} }
            }
            var config = WebSocketClientConfiguration()
            config.additionalHeaders[.authorization] = "Bearer k3y"
            let got = Mutex<String?>(nil)
            try await client.ws("/v1/events?since=0", configuration: config) { inbound, outbound, _ in
                Task {
                    var headers = HTTPFields()
                    headers[.authorization] = "Bearer k3y"
                    headers[.contentType] = "application/json"
                    _ = try await client.execute(uri: "/v1/rooms", method: .post, headers: headers, body: ByteBuffer(string: #"{"room":"k"}"#))
                    _ = try await client.execute(uri: "/v1/rooms/k/participants", method: .post, headers: headers,
                                                 body: ByteBuffer(string: #"{"participant":"a"}"#))
                }
                for try await message in inbound.messages(maxSize: 1 << 16) {
                    if case .text(let t) = message { got.withLock { $0 = t } }
                    try await outbound.close(.normalClosure, reason: nil)
                    break
                }
            }
            #expect(Self.json(got.withLock { $0 } ?? "")["type"] as? String == "participant_state")
        }
    }

    @Test func metricsCountRoomsParticipantsAndDroppedDatagramsInPrometheusText() async throws {
        let node = try Self.node()
        defer { node.stop() }
        let app = ControlAPI.application(node: node, logger: Logger(label: "test"))
        let text = try await app.test(.live) { client in
            _ = try await Self.post(client, "/v1/rooms", ["room": "r"])
            _ = try await Self.post(client, "/v1/rooms/r/participants", ["participant": "a"])
            // Garbage from an address the node never validated: counted, never decrypted.
            let garbage = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
            for i in 0..<5 { garbage.send([0x80, 0x60, 0, UInt8(i)] + [UInt8](repeating: 7, count: 40), to: node.workers[0].socket.local) }
            // The worker reads the datagrams when it gets to them: scrape until they are counted (or give up).
            var text = ""
            for _ in 0..<100 {
                let r = try await client.execute(uri: "/metrics", method: .get)
                #expect(r.headers[.contentType]?.hasPrefix("text/plain") == true)
                text = String(buffer: r.body)
                if text.contains(#"sfu_udp_datagrams_received_total{worker="0"} 5"#) { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            return text
        }
        func value(_ series: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last!) }
        }
        #expect(value(#"sfu_rooms{worker="0"}"#) == 1)
        #expect(value(#"sfu_participants{worker="0"}"#) == 1)
        #expect(value(#"sfu_udp_datagrams_received_total{worker="0"}"#) == 5)
        #expect(value(#"sfu_drops_total{worker="0",reason="unvalidated_address"}"#) == 5)
        #expect(value(#"sfu_drops_total{worker="0",reason="srtp_auth_failed"}"#) == 0)
        #expect(text.contains("# TYPE sfu_rtp_packets_forwarded_total counter"))
        #expect((value(#"sfu_worker_busy_seconds_total{worker="0"}"#) ?? -1) >= 0)
    }
}
