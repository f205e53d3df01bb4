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

        router.get("/healthz") { _, _ in ok(["status": "ok", "rooms": node.roomNames.count]) }
        router.get("/metrics") { _, _ in
            let text = await node.metrics.render(node)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        addEvents(router, node: node)

        router.post("/v1/rooms") { request, _ in
            let b = try await body(request, ["room", "mode", "max_active_talkers", "stream_bandwidth", "level_source"])
            let name = try b.identifier("room")
            var c = RoomConfiguration()
            c.maxActiveTalkers = node.configuration.roomMaxActiveTalkers
            c.streamBandwidthKbps = node.configuration.roomStreamBandwidthKbps
            c.levelSource = node.configuration.roomLevelSource
            try RoomSettings(b).apply(to: &c)
            try await node.createRoom(name, configuration: c)
            return ok(["room": name], status: .created)
        }
        router.get("/v1/rooms") { _, _ in ok(["rooms": node.roomNames]) }
        router.get("/v1/rooms/:room") { _, context in
            let snapshot = try await node.withRoom(try room(context)) { room, _, _ in room.snapshot() }
            return ok(json(snapshot))
        }
        router.patch("/v1/rooms/:room") { request, context in
            let settings = try RoomSettings(try await body(request, ["mode", "max_active_talkers", "stream_bandwidth", "level_source"]))
            try await node.withRoom(try room(context)) { room, core, now in
                try room.update(now: now, into: core.batch) { settings.apply(to: &$0) }
            }
            return ok([:])
        }
        router.delete("/v1/rooms/:room") { _, context in
            try await node.destroyRoom(try room(context))
            return ok([:])
        }
        router.get("/v1/rooms/:room/stats") { _, context in
            let (stats, counters) = try await node.withRoom(try room(context)) { room, _, _ in (room.stats(), room.counters) }
            return ok([
                "participants": stats.map(json),
                "packets_received": counters.packetsIn, "packets_forwarded": counters.packetsOut,
                "drops": Dictionary(uniqueKeysWithValues: counters.drops.nonZero.map { ($0.0.description, $0.1) }),
            ])
        }

        router.post("/v1/rooms/:room/participants") { request, context in
            let b = try await body(request, ["participant", "name", "role", "talker_count"])
            let id = try b.identifier("participant")
            let name = try b.displayName("name")
            let role = try b.oneOf("role", Role.self, "moderator or participant") ?? .participant
            let talkers = try b.int("talker_count", 1...12)
            try await node.withRoom(try room(context)) { room, _, now in
                try room.admit(id, name: name, role: role, talkerCount: talkers, now: now)
            }
            return ok(["participant": id], status: .created)
        }
        router.patch("/v1/rooms/:room/participants/:p") { request, context in
            let b = try await body(request, ["talker_count", "video_muted"])
            let p = try participant(context)
            let talkers = try b.int("talker_count", 1...12)
            let changesTalkers = b.fields["talker_count"] != nil
            let videoMuted = try b.bool("video_muted")
            try await node.withRoom(try room(context)) { room, core, now in
                if changesTalkers { try room.setTalkerCount(p, talkers, now: now, into: core.batch) }
                if let videoMuted { try room.setVideoMuted(p, videoMuted, now: now, into: core.batch) }
            }
            return ok([:])
        }
        router.delete("/v1/rooms/:room/participants/:p") { request, context in
            let b = try await body(request, ["by"])
            let name = try room(context), p = try participant(context)
            let by = try b.identifier("by", required: false)
            let closed = try await node.removeParticipant(room: name, participant: p, by: by)
            return ok(["closed_connections": closed])
        }

        // One transport per direction over a participant's life: the worker core decides whether an offer
        // creates it, renegotiates it, restarts its ICE or replaces it (`change` in the answer).
        router.post("/v1/rooms/:room/participants/:p/publish") { request, context in
            let offer = try await body(request, ["sdp"]).requiredString("sdp")
            let a = try await node.publish(room: try room(context), participant: try participant(context), offer: offer)
            return ok(["sdp": a.sdp, "change": a.change.rawValue])
        }
        router.post("/v1/rooms/:room/participants/:p/subscribe") { request, context in
            let offer = try await body(request, ["sdp"]).requiredString("sdp")
            let a = try await node.subscribe(room: try room(context), participant: try participant(context), offer: offer)
            return ok(["sdp": a.sdp, "change": a.change.rawValue])
        }

        router.post("/v1/rooms/:room/hard-mute") { request, context in
            let b = try await body(request, ["by", "audio"])
            let by = try b.identifier("by")
            guard let audio = try b.bool("audio") else { throw APIError(.badRequest, code: 6010, "field 'audio' is required") }
            try await node.withRoom(try room(context)) { room, core, now in try room.hardMuteRoom(by: by, audio: audio, now: now, into: core.batch) }
            return ok([:])
        }
        router.post("/v1/rooms/:room/participants/:p/hard-mute") { request, context in
            let b = try await body(request, ["by", "audio", "video"])
            let by = try b.identifier("by"), p = try participant(context)
            let audio = try b.bool("audio"), video = try b.bool("video")
            try await node.withRoom(try room(context)) { room, core, now in
                try room.hardMute(by: by, target: p, audio: audio, video: video, now: now, into: core.batch)
            }
            return ok([:])
        }
        router.post("/v1/rooms/:room/pins") { request, context in
            let b = try await body(request, ["by", "add", "remove"])
            let by = try b.identifier("by")
            let add = try b.identifiers("add"), remove = try b.identifiers("remove")
            guard (add == nil) != (remove == nil) else { throw APIError(.badRequest, code: 6010, "give exactly one of 'add' or 'remove'") }
            let pinned = try await node.withRoom(try room(context)) { room, core, now in
                if let add { try room.pin(by: by, add, now: now, into: core.batch) }
                if let remove { try room.unpin(by: by, remove, now: now, into: core.batch) }
                return room.pinned
            }
            return ok(["pinned": pinned])
        }
        router.post("/v1/rooms/:room/floor") { request, context in
            let b = try await body(request, ["by", "action", "target"])
            let by = try b.identifier("by")
            guard let action = try b.oneOf("action", FloorAction.self, FloorAction.allCases.map(\.rawValue).joined(separator: ", ")) else {
                throw APIError(.badRequest, code: 6010, "field 'action' is required")
            }
            let target = try b.identifier("target", required: false)
            let state = try await node.withRoom(try room(context)) { room, core, now in
                try room.floor(by: by, action: action, target: target, now: now, into: core.batch)
                return (room.raisedHands, room.approvedHands)
            }
            return ok(["raised_hands": state.0, "approved_hands": state.1])
        }
        router.post("/v1/rooms/:room/lock") { request, context in
            let b = try await body(request, ["by", "locked"])
            let by = try b.identifier("by")
            guard let locked = try b.bool("locked") else { throw APIError(.badRequest, code: 6010, "field 'locked' is required") }
            try await node.withRoom(try room(context)) { room, _, _ in try room.lock(by: by, locked: locked) }
            return ok(["locked": locked])
        }
        router.post("/v1/rooms/:room/participants/:p/role") { request, context in
            let b = try await body(request, ["by", "role"])
            let by = try b.identifier("by"), p = try participant(context)
            guard let role = try b.oneOf("role", Role.self, "moderator or participant") else {
                throw APIError(.badRequest, code: 6010, "field 'role' is required")
            }
            try await node.withRoom(try room(context)) { room, core, now in try room.setRole(by: by, target: p, role: role, now: now, into: core.batch) }
            return ok([:])
        }
        return router
    }

    // MARK: Helpers

    static func room(_ context: Context) throws -> String { try Identifier.check(context.parameters.require("room"), field: "room") }
    static func participant(_ context: Context) throws -> String { try Identifier.check(context.parameters.require("p"), field: "participant") }

    static func body(_ request: Request, _ allowed: Set<String>) async throws -> JSONBody {
        var r = request
        let buffer: ByteBuffer
        do { buffer = try await r.collectBody(upTo: JSONBody.maxBytes) } catch {
            throw APIError(.payloadTooLarge, code: 6012, "the body is larger than \(JSONBody.maxBytes) bytes")
        }
        return try JSONBody(Data(buffer.readableBytesView), allowed: allowed)
    }

    /// Room settings from a create or update body, checked before they reach the worker.
    struct RoomSettings: Sendable {
        var mode: RoomConfiguration.Mode?
        var maxActiveTalkers: Int?
        var streamBandwidth: Int?
        var levelSource: LevelSource?

        init(_ b: JSONBody) throws {
            mode = try b.oneOf("mode", RoomConfiguration.Mode.self, "group or lecture")
            maxActiveTalkers = try b.int("max_active_talkers", 1...12)
            streamBandwidth = try b.int("stream_bandwidth", 1...100_000)
            levelSource = try b.oneOf("level_source", LevelSource.self, "extension, decode or verify")
        }

        func apply(to c: inout RoomConfiguration) {
            if let mode { c.mode = mode }
            if let maxActiveTalkers { c.maxActiveTalkers = maxActiveTalkers }
            if let streamBandwidth { c.streamBandwidthKbps = streamBandwidth }
            if let levelSource { c.levelSource = levelSource }
        }
    }

    static func ok(_ fields: [String: Any], status: HTTPResponse.Status = .ok) -> Response {
        var all = fields
        all["result"] = 0
        return response(status, all)
    }

    static func response(_ status: HTTPResponse.Status, _ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func json(_ s: RoomSnapshot) -> [String: Any] {
        [
            "room": s.name, "mode": s.configuration.mode.rawValue, "max_active_talkers": s.configuration.maxActiveTalkers,
            "stream_bandwidth": s.configuration.streamBandwidthKbps, "level_source": s.configuration.levelSource.rawValue,
            "hard_muted": s.roomAudioMuted, "locked": s.locked, "pinned": s.pinned,
            "dominant_speaker": s.dominantSpeaker as Any? ?? NSNull(), "active_talkers": s.activeTalkers,
            "floor": ["raised_hands": s.raisedHands, "approved_hands": s.approvedHands],
            "participants": s.participants.map { p in
                [
                    "participant": p.id, "name": p.name, "role": p.role.rawValue, "connected": p.connected,
                    "hard_muted": ["audio": p.hardMutedAudio, "video": p.hardMutedVideo],
                    "publishes": ["audio": p.publishesAudio, "video": p.publishesVideo], "slots": p.subscribedSlots,
                ] as [String: Any]
            },
        ]
    }

    static func json(_ s: ParticipantStats) -> [String: Any] {
        [
            "participant": s.participant, "packets_received": s.packetsReceived, "bytes_received": s.bytesReceived,
            "bandwidth_estimate": s.bandwidthEstimateBps as Any? ?? NSNull(), "number_of_videos": s.numberOfVideos as Any? ?? NSNull(),
            "drops": Dictionary(uniqueKeysWithValues: s.drops.map { ($0.key.description, $0.value) }),
            "slots": s.slots.map { t in
                [
                    "mid": t.mid, "kind": t.kind.rawValue, "participant": t.participant as Any? ?? NSNull(), "packets": t.packetsSent,
                    "bytes": t.bytesSent, "retransmissions": t.retransmissions, "fraction_lost": Int(t.fractionLost),
                    "rtt_ms": t.rttMilliseconds as Any? ?? NSNull(),
                ] as [String: Any]
            },
        ]
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
            return ControlAPI.response(.notFound, ["result": 6011, "msg": "no such route: \(request.method) \(request.uri.path)"])
        } catch {
            if let limit = (error as? RoomError)?.limit { node.countRefusal(limit) }
            let e = APIError.from(error)
            return ControlAPI.response(HTTPResponse.Status(code: e.status.rawValue), ["result": e.code, "msg": e.message])
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
            return ControlAPI.response(.forbidden, ["result": 6016, "msg": "origin \(origin.prefix(200)) is not allowed (api.allowed_origins)"])
        }
        if loopbackHostOnly, let host = request.headers[Self.hostField] ?? request.head.authority, !Self.isLoopback(host: host) {
            return ControlAPI.response(.forbidden, ["result": 6016, "msg": "host \(host.prefix(200)) is not a loopback name (set api.key to serve others)"])
        }
        if request.method == .post || request.method == .patch || request.method == .put {
            let type = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            guard type == "application/json" else {
                return ControlAPI.response(.unsupportedMediaType, ["result": 6015, "msg": "the body must be JSON with Content-Type: application/json"])
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
            return ControlAPI.response(.unauthorized, ["result": 6013, "msg": "missing or wrong API key (Authorization: Bearer <key>)"])
        }
        return try await next(request, context)
    }

    func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
