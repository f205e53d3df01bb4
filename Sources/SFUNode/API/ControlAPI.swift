import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import SFU
import WebRTCEdge

/// The control API (HTTP/1.1, JSON, versioned under /v1) that a signaling server calls. Success is
/// `{"result": 0, ...}`; a refusal is a 4xx with `{"result": code, "msg": "..."}` (403 not allowed, 404
/// unknown room or participant, 409 wrong state, 400 malformed request naming the field, 401 bad API key,
/// 413 body too large).
public enum ControlAPI {
    public typealias Context = BasicWebSocketRequestContext

    /// The HTTP server of the control API: HTTP/1.1 with WebSocket upgrade for `/v1/events`.
    /// `address`: where it listens (`api.listen`'s first address by default; a dual-stack node runs one
    /// application per address, `applications`).
    public static func application(node: Node, cluster: ClusterMembership? = nil, logger: Logger,
                                   address: TransportAddress? = nil) -> some ApplicationProtocol {
        let address = address ?? node.configuration.apiListen
        return Application(
            router: router(node: node, cluster: cluster),
            server: .http1WebSocketUpgrade(webSocketRouter: router(node: node, cluster: cluster), configuration: webSocketConfiguration),
            configuration: .init(address: .hostname(address.host, port: Int(address.port)), serverName: "sfu"),
            logger: logger
        )
    }

    /// Relay messages may be up to `RelayMessage.maxBytes` (the default frame limit is 16 KiB).
    static var webSocketConfiguration: HTTP1WebSocketUpgradeChannel.Configuration {
        HTTP1WebSocketUpgradeChannel.Configuration(ws: WebSocketServerConfiguration(maxFrameSize: RelayMessage.maxBytes))
    }

    public static func router(node: Node, cluster: ClusterMembership? = nil) -> Router<Context> {
        let router = Router(context: Context.self)
        router.add(middleware: LogRequestsMiddleware(.debug))
        router.add(middleware: ErrorMiddleware(node: node))
        router.add(middleware: BrowserGuard(allowedOrigins: Set(node.configuration.apiAllowedOrigins),
                                            loopbackHostOnly: node.configuration.apiKey == nil))
        if let key = node.configuration.apiKey { router.add(middleware: BearerKey(key: key)) }

        addClusterRoutes(router, node: node, cluster: cluster)
        router.get("/metrics") { _, _ in
            let text = await node.metrics.render(node)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        addEvents(router, node: node)
        addRelay(router, cluster: cluster)

        router.post("/v1/rooms") { request, _ in
            let b = try await decode(CreateRoomRequest.self, request)
            var c = RoomConfiguration()
            c.maxActiveTalkers = node.configuration.roomMaxActiveTalkers
            c.streamBandwidthKbps = node.configuration.roomStreamBandwidthKbps
            c.levelSource = node.configuration.roomLevelSource
            c.screenShare = node.configuration.roomScreenShare
            c.videoDegradation = node.configuration.roomVideoDegradation
            c.detector = node.configuration.roomDetector
            c.sustainedSpeech = node.configuration.roomSustainedSpeech
            c.onsetReplay = node.configuration.roomOnsetReplay
            c.onsetPause = node.configuration.roomOnsetPause
            b.settings.apply(to: &c)
            try await node.createRoom(b.room, configuration: c)
            // A room this node took over from a home that died goes on with the moderation that home saved.
            if let cluster, !cluster.isFenced {
                do { try await cluster.homeModeration.adopt(room: b.room) } catch {
                    cluster.logger.warning("could not load the room's saved moderation", metadata: ["room": "\(b.room)", "error": "\(error)"])
                }
            }
            // A room recorded from its start: a recording that cannot start does not undo the room (the log
            // and the room's state say so; a moderator may start one later).
            if b.autoRecording {
                do { _ = try await node.startRecording(room: b.room, by: nil) } catch {
                    node.logger.warning("auto_recording could not start", metadata: ["room": "\(b.room)", "error": "\(error)"])
                }
            }
            return ok(RoomName(room: b.room), status: .created)
        }
        router.get("/v1/rooms") { _, _ in ok(RoomNames(rooms: node.roomNames)) }
        router.get("/v1/rooms/:room") { _, context in
            let snapshot = try await node.withRoom(try room(context)) { room, _, _ in room.snapshot() }
            return ok(RoomState(snapshot: snapshot))
        }
        router.patch("/v1/rooms/:room") { request, context in
            let settings = try await decode(UpdateRoomRequest.self, request).settings
            try await node.withRoom(try room(context)) { room, core, now in
                try room.update(now: now, into: core.batch) { settings.apply(to: &$0) }
            }
            return ok(Done())
        }
        router.delete("/v1/rooms/:room") { _, context in
            try await node.destroyRoom(try room(context))
            return ok(Done())
        }
        router.get("/v1/rooms/:room/stats") { _, context in
            let (stats, counters) = try await node.withRoom(try room(context)) { room, _, _ in (room.stats(), room.counters) }
            return ok(RoomStats(stats, counters))
        }

        router.post("/v1/rooms/:room/participants") { request, context in
            let b = try await decode(AdmitRequest.self, request)
            try await node.withRoom(try room(context)) { room, _, now in
                try room.admit(b.participant, name: b.name, role: b.role, talkerCount: b.talkerCount, now: now)
            }
            return ok(ParticipantName(participant: b.participant), status: .created)
        }
        router.patch("/v1/rooms/:room/participants/:p") { request, context in
            let b = try await decode(UpdateParticipantRequest.self, request)
            let p = try participant(context)
            try await node.withRoom(try room(context)) { room, core, now in
                // A body that changes nothing still names a participant, who must be in the room.
                guard room.contains(participant: p) else { throw RoomError(.undefinedClientIDs, .notFound, "unknown participant \(p)") }
                if b.changesTalkerCount { try room.downlinks.setTalkerCount(p, b.talkerCount, now: now, into: core.batch) }
                if let muted = b.videoMuted { try room.setVideoMuted(p, muted, now: now, into: core.batch) }
            }
            return ok(Done())
        }
        router.delete("/v1/rooms/:room/participants/:p") { request, context in
            let b = try await decode(RemoveParticipantRequest.self, request)
            let closed = try await node.removeParticipant(room: try room(context), participant: try participant(context), by: b.by)
            return ok(ClosedConnections(closed: closed))
        }

        // One transport per direction over a participant's life: the worker core decides whether an offer
        // creates it, renegotiates it, restarts its ICE or replaces it (`change` in the answer).
        router.post("/v1/rooms/:room/participants/:p/publish") { request, context in
            let offer = try await decode(OfferRequest.self, request)
            let a = try await node.publish(room: try room(context), participant: try participant(context), offer: offer.sdp,
                                           screenShareMids: offer.screenShareMids)
            return ok(Answer(sdp: a.sdp, change: a.change.rawValue))
        }
        router.post("/v1/rooms/:room/participants/:p/subscribe") { request, context in
            let offer = try await decode(OfferRequest.self, request)
            let a = try await node.subscribe(room: try room(context), participant: try participant(context), offer: offer.sdp,
                                             screenShareMids: offer.screenShareMids)
            return ok(Answer(sdp: a.sdp, change: a.change.rawValue))
        }

        router.post("/v1/rooms/:room/hard-mute") { request, context in
            let b = try await decode(RoomHardMuteRequest.self, request)
            try await node.moderate(room: try room(context), by: b.by, .roomHardMute(audio: b.audio))
            return ok(Done())
        }
        router.post("/v1/rooms/:room/participants/:p/hard-mute") { request, context in
            let b = try await decode(ParticipantHardMuteRequest.self, request)
            let p = try participant(context)
            try await node.moderate(room: try room(context), by: b.by, .hardMute(target: p, audio: b.audio, video: b.video))
            return ok(Done())
        }
        router.post("/v1/rooms/:room/pins") { request, context in
            let b = try await decode(PinsRequest.self, request)
            let command: ModerationCommand = switch b.change {
            case .add(let ids): .pin(ids)
            case .remove(let ids): .unpin(ids)
            }
            return ok(Pinned(pinned: try await node.moderate(room: try room(context), by: b.by, command).pinned))
        }
        router.post("/v1/rooms/:room/floor") { request, context in
            let b = try await decode(FloorRequest.self, request)
            let outcome = try await node.moderate(room: try room(context), by: b.by, .floor(b.action, target: b.target))
            return ok(Hands(raised: outcome.raisedHands, approved: outcome.approvedHands))
        }
        router.post("/v1/rooms/:room/lock") { request, context in
            let b = try await decode(LockRequest.self, request)
            try await node.moderate(room: try room(context), by: b.by, .lock(b.locked))
            return ok(Locked(locked: b.locked))
        }
        // A subscriber's render size for one video slot: the simulcast layer sent is no larger than covers it.
        router.put("/v1/rooms/:room/participants/:p/slots/:mid") { request, context in
            let b = try await decode(RenderSizeRequest.self, request)
            let p = try participant(context)
            let mid = try Identifier.check(context.parameters.require("mid"), field: "mid")
            try await node.withRoom(try room(context)) { room, core, now in
                try room.downlinks.setRenderLimit(p, mid: mid, b.limit, now: now, into: core.batch)
            }
            return ok(Done())
        }
        // Knock-enabled rooms: a moderator lets awaited participants in, or turns them away (their transports close).
        router.post("/v1/rooms/:room/awaited/approve") { request, context in
            let b = try await decode(AwaitedRequest.self, request)
            let approved = try await node.withRoom(try room(context)) { room, core, now in
                try room.moderation.approve(by: b.by, b.participants, now: now, into: core.batch)
            }
            return ok(Approved(approved: approved))
        }
        router.post("/v1/rooms/:room/awaited/deny") { request, context in
            let b = try await decode(AwaitedRequest.self, request)
            let name = try room(context)
            let denied = try await node.withCore(of: name) { core, now in try core.denyAwaited(room: name, by: b.by, b.participants, now: now) }
            return ok(Denied(denied: denied.denied, closed: denied.closed))
        }
        // Recording as individual streams (EnableX startRecord / stopRecord): moderators only.
        router.post("/v1/rooms/:room/recording/start") { request, context in
            let b = try await decode(RecordingRequest.self, request)
            let started = try await node.startRecording(room: try room(context), by: b.by)
            return ok(RecordingStarted(recording: started.id, directory: started.directory))
        }
        router.post("/v1/rooms/:room/recording/stop") { request, context in
            let b = try await decode(RecordingRequest.self, request)
            let manifest = try await node.stopRecording(room: try room(context), by: b.by)
            return ok(RecordingStopped(recording: manifest?.recording ?? "", files: manifest?.streams.map(\.file) ?? []))
        }
        // Live streaming over RTMP (EnableX startStreaming / stopStreaming): moderators only.
        router.post("/v1/rooms/:room/streaming/start") { request, context in
            let b = try await decode(StreamingRequest.self, request)
            let id = try await node.startStreaming(room: try room(context), by: b.by, .init(rtmpURL: b.rtmpURL, viewURL: b.viewURL))
            return ok(StreamingAnswer(stream: id))
        }
        router.post("/v1/rooms/:room/streaming/stop") { request, context in
            let b = try await decode(RecordingRequest.self, request)
            return ok(StreamingAnswer(stream: try await node.stopStreaming(room: try room(context), by: b.by)))
        }
        router.post("/v1/rooms/:room/participants/:p/role") { request, context in
            let b = try await decode(RoleRequest.self, request)
            let p = try participant(context)
            try await node.moderate(room: try room(context), by: b.by, .role(target: p, b.role))
            return ok(Done())
        }
        return router
    }

    // MARK: Helpers

    static func room(_ context: Context) throws -> String { try Identifier.check(context.parameters.require("room"), field: "room") }
    static func participant(_ context: Context) throws -> String { try Identifier.check(context.parameters.require("p"), field: "participant") }

    /// Reads and decodes a request body (at most `FieldReader.maxBytes`; empty reads as `{}`).
    static func decode<T: RequestBody>(_ type: T.Type, _ request: Request) async throws -> T {
        var r = request
        let buffer: ByteBuffer
        do { buffer = try await r.collectBody(upTo: FieldReader.maxBytes) } catch {
            throw APIError(.payloadTooLarge, code: 6012, "the body is larger than \(FieldReader.maxBytes) bytes")
        }
        let data = buffer.readableBytes == 0 ? Data("{}".utf8) : Data(buffer.readableBytesView)
        do { return try JSONDecoder().decode(T.self, from: data) } catch let e as APIError { throw e } catch {
            throw APIError(.badRequest, code: 6010, "malformed JSON body")
        }
    }

    static func ok<Body: JSONFields>(_ body: Body, status: HTTPResponse.Status = .ok) -> Response {
        response(status, Success(body: body))
    }

    /// Written by `JSONWriter`, not `JSONEncoder`: the same bytes at a fraction of the cost (see JSONWriter).
    static func response<Body: JSONFields>(_ status: HTTPResponse.Status, _ body: Body) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body.jsonBytes)))
    }
}

/// Turns every refusal into the API's error shape; counts the ones a cap caused.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let node: Node

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let e as HTTPError where e.status == .notFound {
            return ControlAPI.response(.notFound, Refusal(result: 6011, msg: "no such route: \(request.method) \(request.uri.path)"))
        } catch {
            if let limit = (error as? RoomError)?.limit { node.countRefusal(limit) }
            let e = APIError.from(error)
            return ControlAPI.response(HTTPResponse.Status(code: e.status.rawValue), Refusal(result: e.code, msg: e.message))
        }
    }
}

/// Keeps web pages from driving the API through a browser. A browser sends `Origin` with every cross-origin
/// request (and every WebSocket opening): an `Origin` not listed in `api.allowed_origins` is refused (403,
/// 6016). Non-browser clients send none, except swift-websocket's client (`SFUClient.EventStream`), which
/// always sends `ws://<host>` on its WebSocket opening and cannot be told not to: only that passes unlisted
/// (`isOwnWebSocketOrigin`); no browser sends a ws:// or wss:// origin at all. A request with a body must say
/// `Content-Type: application/json` (415, 6015), so a cross-origin "simple" request (text/plain, form data),
/// which a browser sends without asking first, never runs. Without an API key (loopback only) the `Host`
/// must be a loopback address or `localhost` (`isLoopback(host:)`), so a page whose DNS name is rebound to
/// 127.0.0.1 (`127.attacker.example`) is refused: its requests are same-origin and carry no `Origin`, and
/// were let through by a "127." prefix test.
struct BrowserGuard<Context: RequestContext>: RouterMiddleware {
    let allowedOrigins: Set<String>
    let loopbackHostOnly: Bool

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        if let origin = request.headers[.origin], !allowedOrigins.contains(origin), !Self.isOwnWebSocketOrigin(origin, request) {
            return ControlAPI.response(.forbidden, Refusal(result: 6016, msg: "origin \(origin.prefix(200)) is not allowed (api.allowed_origins)"))
        }
        if loopbackHostOnly, let host = request.headers[Self.hostField] ?? request.head.authority, !Self.isLoopback(host: host) {
            return ControlAPI.response(.forbidden, Refusal(result: 6016, msg: "host \(host.prefix(200)) is not a loopback name (set api.key to serve others)"))
        }
        if request.method == .post || request.method == .patch || request.method == .put {
            let type = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            guard type == "application/json" else {
                return ControlAPI.response(.unsupportedMediaType, Refusal(result: 6015, msg: "the body must be JSON with Content-Type: application/json"))
            }
        }
        return try await next(request, context)
    }

    /// The Origin swift-websocket's client sends: on a WebSocket opening, `ws://` or `wss://` and the name of
    /// the request's own Host (without its port). It used to be any ws:// or wss:// origin, on any request.
    static func isOwnWebSocketOrigin(_ origin: String, _ request: Request) -> Bool {
        guard request.headers[.upgrade]?.lowercased() == "websocket", let host = request.headers[hostField] ?? request.head.authority else {
            return false
        }
        var name = Substring(host)
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") { name = name[...close] } else if let colon = name.firstIndex(of: ":") {
            name = name[..<colon]
        }
        guard !name.isEmpty else { return false }
        let o = origin.lowercased(), n = name.lowercased()
        let bare = n.hasPrefix("[") ? String(n.dropFirst().dropLast()) : n
        return [n, bare].contains { o == "ws://" + $0 || o == "wss://" + $0 }
    }

    /// HTTP/1.1's Host, where a request kept it as a field rather than as its authority.
    static var hostField: HTTPField.Name { HTTPField.Name("Host")! }

    /// Whether `host` (a Host header or authority) names loopback in a form a DNS name cannot take, each with
    /// an optional `:port` (1-5 digits, 1-65535):
    /// - `localhost`, in any case (browsers resolve it to loopback themselves, never by DNS);
    /// - an IPv4 address in 127.0.0.0/8 written as four decimal octets 0-255 without leading zeros, the
    ///   form browsers send (they rewrite `127.1`, `0x7f.0.0.1` and `0177.0.0.1` to it): shorthand and
    ///   other spellings are refused, whatever `inet_aton` would make of them;
    /// - `[::1]` exactly (bare `::1` is not a valid Host: RFC 3986 brackets IPv6 literals).
    /// Anything else is refused, above all a name that only begins like an address (`127.attacker.example`,
    /// `127.0.0.1.evil.example`): its owner decides where it resolves.
    static func isLoopback(host: String) -> Bool {
        let u = Array(host.utf8)
        let name: ArraySlice<UInt8>, rest: ArraySlice<UInt8>
        if u.first == UInt8(ascii: "["), let close = u.firstIndex(of: UInt8(ascii: "]")) {
            (name, rest) = (u[...close], u[(close + 1)...])
        } else if let colon = u.firstIndex(of: UInt8(ascii: ":")) {
            (name, rest) = (u[..<colon], u[colon...])
        } else {
            (name, rest) = (u[...], [])
        }
        if !rest.isEmpty {
            guard rest.first == UInt8(ascii: ":"), isPort(rest.dropFirst()) else { return false }
        }
        return name.elementsEqual("[::1]".utf8) || name.map(lowercased).elementsEqual("localhost".utf8) || isLoopbackIPv4(name)
    }

    private static func lowercased(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c + 0x20 : c }

    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// 1-5 decimal digits, 1-65535.
    private static func isPort(_ digits: ArraySlice<UInt8>) -> Bool {
        guard (1...5).contains(digits.count), digits.allSatisfy(isDigit) else { return false }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return (1...65535).contains(value)
    }

    /// `127.a.b.c`: four parts, each 1-3 digits, 0-255, no leading zero.
    private static func isLoopbackIPv4(_ name: ArraySlice<UInt8>) -> Bool {
        let parts = name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        var octets: [Int] = []
        for p in parts {
            guard (1...3).contains(p.count), p.allSatisfy(isDigit), p.count == 1 || p.first != UInt8(ascii: "0") else { return false }
            let value = p.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard value <= 255 else { return false }
            octets.append(value)
        }
        return octets[0] == 127
    }
}

/// When an API key is configured, every request needs `Authorization: Bearer <key>`.
struct BearerKey<Context: RequestContext>: RouterMiddleware {
    let key: String

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        let given = request.headers[.authorization] ?? ""
        guard given.hasPrefix("Bearer "), constantTimeEqual(Array(given.utf8.dropFirst(7)), Array(key.utf8)) else {
            return ControlAPI.response(.unauthorized, Refusal(result: 6013, msg: "missing or wrong API key (Authorization: Bearer <key>)"))
        }
        return try await next(request, context)
    }

    func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
