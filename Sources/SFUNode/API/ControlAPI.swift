import Foundation
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
        router.add(middleware: ErrorMiddleware())
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
            let name = try b.requiredString("room")
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
            let snapshot = try await node.withRoom(try room(context)) { room, _ in room.snapshot() }
            return ok(json(snapshot))
        }
        router.patch("/v1/rooms/:room") { request, context in
            let settings = try RoomSettings(try await body(request, ["mode", "max_active_talkers", "stream_bandwidth", "level_source"]))
            try await node.withRoom(try room(context)) { room, ctx in
                try room.update(now: ctx.now, into: ctx.batch) { settings.apply(to: &$0) }
            }
            return ok([:])
        }
        router.delete("/v1/rooms/:room") { _, context in
            try await node.destroyRoom(try room(context))
            return ok([:])
        }
        router.get("/v1/rooms/:room/stats") { _, context in
            let (stats, counters) = try await node.withRoom(try room(context)) { room, _ in (room.stats(), room.counters) }
            return ok([
                "participants": stats.map(json),
                "packets_received": counters.packetsIn, "packets_forwarded": counters.packetsOut,
                "drops": Dictionary(uniqueKeysWithValues: counters.drops.nonZero.map { ($0.0.description, $0.1) }),
            ])
        }

        router.post("/v1/rooms/:room/participants") { request, context in
            let b = try await body(request, ["participant", "name", "role", "talker_count"])
            let id = try b.requiredString("participant")
            let name = try b.string("name")
            let role = try b.oneOf("role", Role.self, "moderator or participant") ?? .participant
            let talkers = try b.int("talker_count", 1...12)
            try await node.withRoom(try room(context)) { room, ctx in
                try room.admit(id, name: name, role: role, talkerCount: talkers, now: ctx.now)
            }
            return ok(["participant": id], status: .created)
        }
        router.patch("/v1/rooms/:room/participants/:p") { request, context in
            let b = try await body(request, ["talker_count", "video_muted"])
            let p = try participant(context)
            let talkers = try b.int("talker_count", 1...12)
            let changesTalkers = b.fields["talker_count"] != nil
            let videoMuted = try b.bool("video_muted")
            try await node.withRoom(try room(context)) { room, ctx in
                if changesTalkers { try room.setTalkerCount(p, talkers, now: ctx.now, into: ctx.batch) }
                if let videoMuted { try room.setVideoMuted(p, videoMuted, now: ctx.now, into: ctx.batch) }
            }
            return ok([:])
        }
        router.delete("/v1/rooms/:room/participants/:p") { request, context in
            let b = try await body(request, ["by"])
            let name = try room(context), p = try participant(context)
            let by = try b.string("by")
            let conns = try await node.withRoom(name) { room, ctx in
                let conns = room.connections(of: p)
                try room.remove(p, by: by, now: ctx.now, into: ctx.batch)
                for c in conns { ctx.closeConnection(c) }
                return conns
            }
            _ = node.forget(room: name, participant: p)
            return ok(["closed_connections": conns.count])
        }

        for kind in ["publish", "subscribe"] {
            router.post("/v1/rooms/:room/participants/:p/\(kind)") { request, context in
                let b = try await body(request, ["sdp"])
                let offer = try b.requiredString("sdp")
                let name = try room(context), p = try participant(context)
                let (answer, conn) = try await node.withRoom(name) { room, ctx in
                    _ = try room.snapshot().participants.first { $0.id == p }
                        ?? { throw RoomError(.undefinedClientIDs, .notFound, "unknown participant \(p)") }()
                    let (conn, local) = ctx.newConnection(room: name)
                    do {
                        if kind == "publish" {
                            let r = try OfferAnswer.answerPublish(offer, local: local)
                            try room.attachPublisher(p, connection: conn, tracks: r.tracks, now: ctx.now)
                            try ctx.edge.attach(conn, remote: r.remote)
                            return (r.answer.text, conn)
                        }
                        var next: UInt32 = 0
                        let r = try OfferAnswer.answerSubscribe(offer, local: local) { _, _ in
                            next += 1
                            return UInt32.random(in: 0x1000_0000...0xEFFF_FFFF) &+ next
                        }
                        try room.attachSubscriber(p, connection: conn, slots: r.slots, now: ctx.now, into: ctx.batch)
                        try ctx.edge.attach(conn, remote: r.remote)
                        return (r.answer.text, conn)
                    } catch {
                        ctx.closeConnection(conn)  // nothing else changes when an offer is refused
                        throw error
                    }
                }
                node.remember(conn, room: name, participant: p)
                return ok(["sdp": answer])
            }
        }

        router.post("/v1/rooms/:room/hard-mute") { request, context in
            let b = try await body(request, ["by", "audio"])
            let by = try b.requiredString("by")
            guard let audio = try b.bool("audio") else { throw APIError(.badRequest, code: 6010, "field 'audio' is required") }
            try await node.withRoom(try room(context)) { room, ctx in try room.hardMuteRoom(by: by, audio: audio, now: ctx.now, into: ctx.batch) }
            return ok([:])
        }
        router.post("/v1/rooms/:room/participants/:p/hard-mute") { request, context in
            let b = try await body(request, ["by", "audio", "video"])
            let by = try b.requiredString("by"), p = try participant(context)
            let audio = try b.bool("audio"), video = try b.bool("video")
            try await node.withRoom(try room(context)) { room, ctx in
                try room.hardMute(by: by, target: p, audio: audio, video: video, now: ctx.now, into: ctx.batch)
            }
            return ok([:])
        }
        router.post("/v1/rooms/:room/pins") { request, context in
            let b = try await body(request, ["by", "add", "remove"])
            let by = try b.requiredString("by")
            let add = try b.strings("add"), remove = try b.strings("remove")
            guard (add == nil) != (remove == nil) else { throw APIError(.badRequest, code: 6010, "give exactly one of 'add' or 'remove'") }
            let pinned = try await node.withRoom(try room(context)) { room, ctx in
                if let add { try room.pin(by: by, add, now: ctx.now, into: ctx.batch) }
                if let remove { try room.unpin(by: by, remove, now: ctx.now, into: ctx.batch) }
                return room.pinned
            }
            return ok(["pinned": pinned])
        }
        router.post("/v1/rooms/:room/floor") { request, context in
            let b = try await body(request, ["by", "action", "target"])
            let by = try b.requiredString("by")
            guard let action = try b.oneOf("action", FloorAction.self, FloorAction.allCases.map(\.rawValue).joined(separator: ", ")) else {
                throw APIError(.badRequest, code: 6010, "field 'action' is required")
            }
            let target = try b.string("target")
            let state = try await node.withRoom(try room(context)) { room, ctx in
                try room.floor(by: by, action: action, target: target, now: ctx.now, into: ctx.batch)
                return (room.raisedHands, room.approvedHands)
            }
            return ok(["raised_hands": state.0, "approved_hands": state.1])
        }
        router.post("/v1/rooms/:room/lock") { request, context in
            let b = try await body(request, ["by", "locked"])
            let by = try b.requiredString("by")
            guard let locked = try b.bool("locked") else { throw APIError(.badRequest, code: 6010, "field 'locked' is required") }
            try await node.withRoom(try room(context)) { room, _ in try room.lock(by: by, locked: locked) }
            return ok(["locked": locked])
        }
        router.post("/v1/rooms/:room/participants/:p/role") { request, context in
            let b = try await body(request, ["by", "role"])
            let by = try b.requiredString("by"), p = try participant(context)
            guard let role = try b.oneOf("role", Role.self, "moderator or participant") else {
                throw APIError(.badRequest, code: 6010, "field 'role' is required")
            }
            try await node.withRoom(try room(context)) { room, ctx in try room.setRole(by: by, target: p, role: role, now: ctx.now, into: ctx.batch) }
            return ok([:])
        }
        return router
    }

    // MARK: Helpers

    static func room(_ context: Context) throws -> String { try context.parameters.require("room") }
    static func participant(_ context: Context) throws -> String { try context.parameters.require("p") }

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

/// Turns every refusal into the API's error shape.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let e as HTTPError where e.status == .notFound {
            return ControlAPI.response(.notFound, ["result": 6011, "msg": "no such route: \(request.method) \(request.uri.path)"])
        } catch {
            let e = APIError.from(error)
            return ControlAPI.response(HTTPResponse.Status(code: e.status.rawValue), ["result": e.code, "msg": e.message])
        }
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
