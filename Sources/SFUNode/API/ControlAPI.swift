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
    public typealias Context = APIRequestContext

    /// The HTTP server of the control API: HTTP/1.1 with WebSocket upgrade for `/v1/events` and `/v1/relay`, a
    /// refused opening answered like any refused request (`WebSocketRefusals`).
    /// `address`: where it listens (`api.listen`'s first address by default; a dual-stack node runs one
    /// application per address, `applications`).
    public static func application(node: Node, cluster: ClusterMembership? = nil, logger: Logger,
                                   address: TransportAddress? = nil) -> some ApplicationProtocol {
        let address = address ?? node.configuration.apiListen
        return Application(
            router: router(node: node, cluster: cluster),
            server: WebSocketRefusals.server(webSocketRouter: webSocketRouter(node: node, cluster: cluster), configuration: webSocketConfiguration),
            configuration: .init(address: .hostname(address.host, port: Int(address.port)), serverName: "sfu"),
            logger: logger
        )
    }

    /// Relay messages may be up to `RelayMessage.maxBytes` (the default frame limit is 16 KiB).
    static var webSocketConfiguration: HTTP1WebSocketUpgradeChannel.Configuration {
        HTTP1WebSocketUpgradeChannel.Configuration(ws: WebSocketServerConfiguration(maxFrameSize: RelayMessage.maxBytes))
    }

    /// Every check a request passes before its route: the browser guard, the API key; and refusals in the API's
    /// shape. The same for HTTP requests and WebSocket openings.
    static func addMiddleware(_ router: Router<Context>, node: Node, webSocketsOnly: Bool = false) {
        router.add(middleware: LogRequestsMiddleware(.debug))
        router.add(middleware: ErrorMiddleware(node: node, webSocketsOnly: webSocketsOnly))
        router.add(middleware: BrowserGuard(allowedOrigins: Set(node.configuration.apiAllowedOrigins),
                                            loopbackHostOnly: node.configuration.apiKey == nil))
        if let key = node.configuration.apiKey { router.add(middleware: BearerKey(key: key)) }
    }

    /// What a WebSocket opening may reach: the two WebSocket routes, behind the same checks. A request with an
    /// `Upgrade: websocket` header to any other route is refused (404, 6011), not run with its body left unread.
    static func webSocketRouter(node: Node, cluster: ClusterMembership? = nil) -> Router<Context> {
        let router = Router(context: Context.self)
        addMiddleware(router, node: node, webSocketsOnly: true)
        addEvents(router, node: node)
        addRelay(router, cluster: cluster)
        return router
    }

    public static func router(node: Node, cluster: ClusterMembership? = nil) -> Router<Context> {
        let router = Router(context: Context.self)
        addMiddleware(router, node: node)

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
                do { _ = try await node.recordings.start(room: b.room, by: nil) } catch {
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
            let started = try await node.recordings.start(room: try room(context), by: b.by)
            return ok(RecordingStarted(recording: started.id, directory: started.directory))
        }
        router.post("/v1/rooms/:room/recording/stop") { request, context in
            let b = try await decode(RecordingRequest.self, request)
            let manifest = try await node.recordings.stop(room: try room(context), by: b.by)
            return ok(RecordingStopped(recording: manifest?.recording ?? "", files: manifest?.streams.map(\.file) ?? []))
        }
        // Live streaming over RTMP (EnableX startStreaming / stopStreaming): moderators only.
        router.post("/v1/rooms/:room/streaming/start") { request, context in
            let b = try await decode(StreamingRequest.self, request)
            let id = try await node.liveStreams.start(room: try room(context), by: b.by, .init(rtmpURL: b.rtmpURL, viewURL: b.viewURL))
            return ok(StreamingAnswer(stream: id))
        }
        router.post("/v1/rooms/:room/streaming/stop") { request, context in
            let b = try await decode(RecordingRequest.self, request)
            return ok(StreamingAnswer(stream: try await node.liveStreams.stop(room: try room(context), by: b.by)))
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
    /// The WebSocket router's: a route it does not have may be an HTTP route opened with a stray upgrade.
    var webSocketsOnly = false

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let e as HTTPError where e.status == .notFound {
            let what = webSocketsOnly ? "no such WebSocket route (GET /v1/events, GET /v1/relay)" : "no such route"
            return ControlAPI.response(.notFound, Refusal(result: 6011, msg: "\(what): \(request.method) \(request.uri.path)"))
        } catch {
            if let limit = (error as? RoomError)?.limit { node.countRefusal(limit) }
            let e = APIError.from(error)
            return ControlAPI.response(HTTPResponse.Status(code: e.status.rawValue), Refusal(result: e.code, msg: e.message))
        }
    }
}
