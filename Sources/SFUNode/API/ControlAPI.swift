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
    public static func application(node: Node, logger: Logger) -> some ApplicationProtocol {
        let address = node.configuration.apiListen
        return Application(
            router: router(node: node),
            server: .http1WebSocketUpgrade(webSocketRouter: router(node: node)),
            configuration: .init(address: .hostname(address.host, port: Int(address.port)), serverName: "sfu"),
            logger: logger
        )
    }

    public static func router(node: Node) -> Router<Context> {
        let router = Router(context: Context.self)
        router.add(middleware: LogRequestsMiddleware(.debug))
        router.add(middleware: ErrorMiddleware(node: node))
        router.add(middleware: BrowserGuard(allowedOrigins: Set(node.configuration.apiAllowedOrigins),
                                            loopbackHostOnly: node.configuration.apiKey == nil))
        if let key = node.configuration.apiKey { router.add(middleware: BearerKey(key: key)) }

        router.get("/healthz") { _, _ in ok(Health(rooms: node.roomNames.count)) }
        router.get("/metrics") { _, _ in
            let text = await node.metrics.render(node)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        addEvents(router, node: node)

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
            b.settings.apply(to: &c)
            try await node.createRoom(b.room, configuration: c)
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
                if b.changesTalkerCount { try room.setTalkerCount(p, b.talkerCount, now: now, into: core.batch) }
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
            try await node.withRoom(try room(context)) { room, core, now in try room.hardMuteRoom(by: b.by, audio: b.audio, now: now, into: core.batch) }
            return ok(Done())
        }
        router.post("/v1/rooms/:room/participants/:p/hard-mute") { request, context in
            let b = try await decode(ParticipantHardMuteRequest.self, request)
            let p = try participant(context)
            try await node.withRoom(try room(context)) { room, core, now in
                try room.hardMute(by: b.by, target: p, audio: b.audio, video: b.video, now: now, into: core.batch)
            }
            return ok(Done())
        }
        router.post("/v1/rooms/:room/pins") { request, context in
            let b = try await decode(PinsRequest.self, request)
            let pinned = try await node.withRoom(try room(context)) { room, core, now in
                switch b.change {
                case .add(let ids): try room.pin(by: b.by, ids, now: now, into: core.batch)
                case .remove(let ids): try room.unpin(by: b.by, ids, now: now, into: core.batch)
                }
                return room.pinned
            }
            return ok(Pinned(pinned: pinned))
        }
        router.post("/v1/rooms/:room/floor") { request, context in
            let b = try await decode(FloorRequest.self, request)
            let state = try await node.withRoom(try room(context)) { room, core, now in
                try room.floor(by: b.by, action: b.action, target: b.target, now: now, into: core.batch)
                return (room.raisedHands, room.approvedHands)
            }
            return ok(Hands(raised: state.0, approved: state.1))
        }
        router.post("/v1/rooms/:room/lock") { request, context in
            let b = try await decode(LockRequest.self, request)
            try await node.withRoom(try room(context)) { room, _, _ in try room.lock(by: b.by, locked: b.locked) }
            return ok(Locked(locked: b.locked))
        }
        // A subscriber's render size for one video slot: the simulcast layer sent is no larger than covers it.
        router.put("/v1/rooms/:room/participants/:p/slots/:mid") { request, context in
            let b = try await decode(RenderSizeRequest.self, request)
            let p = try participant(context)
            let mid = try Identifier.check(context.parameters.require("mid"), field: "mid")
            try await node.withRoom(try room(context)) { room, core, now in
                try room.setRenderLimit(p, mid: mid, b.limit, now: now, into: core.batch)
            }
            return ok(Done())
        }
        router.post("/v1/rooms/:room/participants/:p/role") { request, context in
            let b = try await decode(RoleRequest.self, request)
            let p = try participant(context)
            try await node.withRoom(try room(context)) { room, core, now in try room.setRole(by: b.by, target: p, role: b.role, now: now, into: core.batch) }
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

/// Keeps web pages from driving the API through a browser. A browser sends `Origin` (http or https) with
/// every cross-origin request: one not listed in `api.allowed_origins` is refused (403, 6016). Non-browser
/// clients send none, or a ws:// one for WebSockets. A request with a body must say `Content-Type:
/// application/json` (415, 6015), so a cross-origin "simple" request (text/plain, form data), which a
/// browser sends without asking first, never runs. Without an API key (loopback only) the `Host` must be a
/// loopback name too, so a page whose DNS name is rebound to 127.0.0.1 cannot call the node as itself.
struct BrowserGuard<Context: RequestContext>: RouterMiddleware {
    let allowedOrigins: Set<String>
    let loopbackHostOnly: Bool

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        if let origin = request.headers[.origin], !allowedOrigins.contains(origin), !origin.hasPrefix("ws://"), !origin.hasPrefix("wss://") {
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

    /// HTTP/1.1's Host, where a request kept it as a field rather than as its authority.
    static var hostField: HTTPField.Name { HTTPField.Name("Host")! }

    /// 127.x.x.x, localhost or [::1], with or without a port.
    static func isLoopback(host: String) -> Bool {
        var name = Substring(host)
        if name.hasPrefix("[") { name = name.dropFirst().prefix { $0 != "]" } } else if let colon = name.lastIndex(of: ":") {
            name = name[..<colon]
        }
        return name == "localhost" || name == "::1" || name.hasPrefix("127.")
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
