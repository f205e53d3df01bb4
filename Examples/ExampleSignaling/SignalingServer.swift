import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import SFUClient

/// An example signaling server: how a conferencing service integrates the node.
///
/// Browsers talk to it over one WebSocket each (`/ws`, JSON messages below); it keeps who is in which room,
/// asks the node where each room goes (`POST /v1/placements`: itself, or in a cluster the node the registry
/// chose), calls that node's control API for everything media (rooms, admission, SDP offers and answers, moderation)
/// and relays the node's events to the right browsers. It also serves the demo page (`Public/`).
///
/// In a cluster each participant is placed (`POST /v1/placements` with the room and the participant): a room
/// stays on its home while it has room and spills to other nodes, which relay its talkers to each other. A
/// browser's offers and commands go to its own node, and it gets the events of its own node's view of the room
/// (which follows the home's ranking and moderation); the roster merges every node's participants.
///
/// Who moderates is the server's decision, never the browser's: a browser cannot choose its role. This example
/// gives the moderator's role to a join that carries the moderator key it was configured with
/// (`Configuration.moderatorKey`, `sfu demo --moderator-key`); a real service decides from its own login or
/// invitation. Every other join is a participant's, whatever it asks for.
///
/// In a knock-enabled room a participant waits to be let in (the node's `awaited`): until a moderator approves
/// it, its browser gets nothing of the room - no roster, no event but its own (`participant_state`, `knock`
/// and its own talker list) - only what it needs to set up its connections (`joined` with `awaited: true`).
/// Once approved it gets `approved` (with the current dominant speaker) and the roster.
///
/// Browser -> server:
///   {"type": "join", "room", "name", "moderator_key"?, "mode": "group"|"lecture", "knock": true|false}
///     A wrong moderator key is refused (`error`); none joins as a participant.
///   {"type": "offer", "kind": "publish"|"subscribe", "sdp", "screen_share_mids"?: [mid]}
///                                                             -> {"type": "answer", "kind", "sdp", "change"}
///                                                               or {"type": "answer", "kind", "error"}
///     The browser sends every offer of a connection here, the first and the later ones (more or fewer
///     slots, an ICE restart) alike; the node answers and says what the offer did to the participant's
///     transport for that direction (`change`): "created", "renegotiated" (same connection, m-lines added or
///     removed), "iceRestarted" (new ICE credentials, DTLS goes on) or "replaced" (a new RTCPeerConnection:
///     the node closed the old one).
///     `screen_share_mids` names the offer's video m-lines that are screen shares: on the sending connection
///     the display capture the page added beside the camera, on the receiving one the page's screen slot
///     (the node shows the room's shares there, whoever talks, and never a camera).
///   {"type": "command", "id", "action", ...}                  -> {"type": "result", "id", "result", "msg"?}
///     actions: mute_room {audio} | mute {target, audio?, video?} | pin {target} | unpin {target} |
///              lock {locked} | drop {target} | floor {floor_action, target?} | role {target, role} |
///              talkers {count} (the length of the browser's own talker list)
/// Server -> browser:
///   {"type": "joined", "participant", "room", "role", "max_active_talkers", "mode", "dominant_speaker",
///    "ice_servers", "awaited"}                    (RTCConfiguration.iceServers for the browser's connections;
///                                                  awaited: waiting to be let in, dominant_speaker null)
///   {"type": "approved", "dominant_speaker"}      (a moderator let this awaited browser in; the roster follows)
///   {"type": "roster", "room": <the node's room state, names included>}
///   {"type": "event", "event": <a node event>}   (active_talkers and bandwidth_alert only to their subscriber)
///   {"type": "left", "reason"}                    (dropped by a moderator, or the room was destroyed)
///   {"type": "rejoin", "reason": "node_lost"}     (cluster: the room's node died; the browser joins again and
///                                                  is placed on a live node)
///   {"type": "error", "msg"}
public actor SignalingServer {
    public struct Configuration: Sendable {
        public var node = URL(string: "http://127.0.0.1:8080")!
        public var nodeKey: String?
        public var host = "127.0.0.1"
        public var port = 8000
        /// Talker slots of rooms this server creates (each browser subscribes to this many audio and video).
        public var maxActiveTalkers = 4
        /// Who may moderate: a join whose `moderator_key` equals this one joins as a moderator; any other join is a
        /// participant's, whatever it asks for, and a join with another key is refused. nil: nobody moderates.
        public var moderatorKey: String?
        /// The ICE servers browsers are given (`ice_servers` in `joined`): a TURN server for clients whose
        /// networks block UDP and TCP to the node (docs/reach.md). Empty: none (the node's own candidates, UDP
        /// and ICE-TCP, are enough for most networks).
        public var iceServers: [ICEServer] = []
        public init() {}
    }

    /// One entry of RTCConfiguration.iceServers, as the browser takes it.
    public struct ICEServer: Sendable, Equatable {
        public var urls: [String]
        public var username: String?
        public var credential: String?
        public init(urls: [String], username: String? = nil, credential: String? = nil) {
            self.urls = urls
            self.username = username
            self.credential = credential
        }

        var json: [String: Any] {
            var o: [String: Any] = ["urls": urls]
            if let username { o["username"] = username }
            if let credential { o["credential"] = credential }
            return o
        }
    }

    /// One browser: its participant id in the node, its room, its outgoing messages, and the node it was placed
    /// on (its control API, its id in the cluster - "local" for a node on its own - and its URL).
    struct Browser {
        let participant: String
        let name: String
        let room: String
        let outbox: AsyncStream<String>.Continuation
        let node: ControlClient
        let nodeID: String
        let nodeURL: URL
        /// Waiting to be let into a knock-enabled room: it gets nothing of the room but what concerns itself.
        var awaited = false
    }

    let configuration: Configuration
    /// The node this server was given; in a cluster, the one it asks where each room goes.
    let api: ControlClient
    /// Nodes other than `api` whose events are relayed (one event stream each).
    var followed: Set<URL> = []
    /// The tasks following other nodes' events, ended by `stopFollowing` (the server's own `relayEvents`
    /// ending, or a test's end).
    var followers: [Task<Void, Never>] = []
    let logger: Logger
    var browsers: [String: Browser] = [:]  // by participant id
    /// Joins under way, by room and node: the room on that node stays while one is.
    var joining: [String: Int] = [:]
    /// The node each participant of a room with browsers here was placed on, also after it left: the other
    /// nodes' copies of it (their relays' remote participants) say nothing of it.
    var placed: [String: (room: String, node: URL)] = [:]
    /// Each room's dominant speaker (nil: nobody) as the node's events last said. `dominant_speaker` events
    /// report changes only, so a browser that joins after one is told the current speaker in `joined`.
    var dominantSpeakers: [String: DominantSpeaker] = [:]  // by room
    /// Participants a moderator let in while their join was still under way (before they were in `browsers`).
    var approvedWhileJoining: Set<String> = []
    var nextID = 1

    struct DominantSpeaker {
        var participant: String?
    }

    public init(configuration: Configuration, logger: Logger = Logger(label: "signaling")) {
        self.configuration = configuration
        api = ControlClient(base: configuration.node, key: configuration.nodeKey)
        self.logger = logger
    }

    /// The HTTP server: the page, and the browsers' WebSocket. Run it, and `relayEvents()` beside it.
    public nonisolated func application() -> some ApplicationProtocol {
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.add(middleware: FileMiddleware(Bundle.module.resourcePath! + "/Public", searchForIndexHtml: true))
        router.ws("/ws") { inbound, outbound, _ in
            let (outbox, continuation) = AsyncStream.makeStream(of: String.self)
            var me: String?
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { for await text in outbox { try await outbound.write(.text(text)) } }
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message else { continue }
                    me = await self.handle(text, from: me, outbox: continuation) ?? me
                }
                continuation.finish()
                group.cancelAll()
            }
            if let me { await self.leave(me) }
        }
        // Browsers' SDP offers with several m-lines exceed the 16 KiB default frame size.
        return Application(router: router, server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(maxFrameSize: 1 << 20)),
                           configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "sfu-signaling"),
                           logger: logger)
    }

    // MARK: Browser messages

    /// Handles one message; returns the participant id once the browser has joined.
    func handle(_ text: String, from me: String?, outbox: AsyncStream<String>.Continuation) async -> String? {
        func send(_ object: [String: Any]) { outbox.yield(Self.text(object)) }
        guard let m = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            send(["type": "error", "msg": "messages are JSON objects"])
            return nil
        }
        do {
            switch (m["type"] as? String, me) {
            case ("join", nil):
                let id = try await join(m, outbox: outbox)
                return id
            case ("offer", let me?):
                let kind: ControlClient.OfferDirection = m["kind"] as? String == "subscribe" ? .subscribe : .publish
                guard let b = browsers[me] else { return nil }
                // The same route for a connection's first offer and its later ones. A refused offer is answered
                // too, so the page can roll its offer back.
                do {
                    let r = try await b.node.offer(kind, room: b.room, participant: me, sdp: m["sdp"] as? String ?? "",
                                                screenShareMids: m["screen_share_mids"] as? [String] ?? [])
                    send(["type": "answer", "kind": kind.rawValue, "sdp": r.json["sdp"] ?? "", "change": r.json["change"] ?? ""])
                    // What a participant publishes is in the roster (a screen share begins or ends with an offer).
                    if kind == .publish { await sendRoster(b.room) }
                } catch {
                    send(["type": "answer", "kind": kind.rawValue, "error": "\(error)"])
                }
            case ("command", let me?):
                let r = try await command(m, by: me)
                send(["type": "result", "id": m["id"] ?? NSNull(), "result": r.result ?? -1, "msg": r.json["msg"] ?? NSNull()])
            default:
                send(["type": "error", "msg": "unexpected message \(m["type"] ?? "?")"])
            }
        } catch {
            send(["type": "error", "msg": "\(error)"])
        }
        return nil
    }

    /// Creates the room on first use, admits the browser as a new participant, and sends it the roster.
    func join(_ m: [String: Any], outbox: AsyncStream<String>.Continuation) async throws -> String {
        let room = (m["room"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? "demo"
        let name = (m["name"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? "guest"
        let role = try self.role(of: m)
        let id = name.lowercased().filter { $0.isLetter || $0.isNumber } + "-\(nextID)"
        nextID += 1
        let (api, nodeID, nodeURL) = try await node(for: room, participant: id)
        // A leave meanwhile must not close the room on this node under this join.
        joining[room + "\u{0}" + nodeID, default: 0] += 1
        defer { joining[room + "\u{0}" + nodeID]? -= 1 }
        placed[id] = (room, nodeURL)
        let created = try await api.call("POST", "v1/rooms", [
            "room": room, "mode": m["mode"] as? String == "lecture" ? "lecture" : "group",
            "max_active_talkers": configuration.maxActiveTalkers, "knock": (m["knock"] as? Bool) ?? (m["knock"] as? String == "true"),
        ])
        guard created.status == 201 || created.result == 6009 else { throw APIRefusal(method: "POST", path: "v1/rooms", status: created.status, json: created.json) }
        if created.status == 201, !browsers.values.contains(where: { $0.room == room }) { dominantSpeakers[room] = DominantSpeaker(participant: nil) }
        try await api.require("POST", "v1/rooms/\(room)/participants", ["participant": id, "name": name, "role": role])
        let state = try await api.require("GET", "v1/rooms/\(room)")
        // Knock-enabled: a participant waits until a moderator lets it in (the node says whether it does; an
        // approval that came while this join waited above is in `approvedWhileJoining`).
        let listed = (state.json["awaited_participants"] as? [[String: Any]] ?? []).contains { $0["participant"] as? String == id }
        let awaited = listed && approvedWhileJoining.remove(id) == nil
        // No await from here to the `joined` message: the browser gets the dominant speaker as the events
        // relayed so far say, and every later change through `relay` (an event relayed while this function
        // waited above is already in `dominantSpeakers`). The room's state from the node is the fallback for a
        // room this server has seen no dominant_speaker event of (it started after the room did).
        let dominant = dominantSpeakers[room, default: DominantSpeaker(participant: state.json["dominant_speaker"] as? String)]
        dominantSpeakers[room] = dominant
        browsers[id] = Browser(participant: id, name: name, room: room, outbox: outbox, node: api, nodeID: nodeID, nodeURL: nodeURL,
                               awaited: awaited)
        outbox.yield(Self.text(["type": "joined", "participant": id, "room": room, "role": role,
                                "max_active_talkers": state.json["max_active_talkers"] ?? 4, "mode": state.json["mode"] ?? "group",
                                "dominant_speaker": awaited ? NSNull() : dominant.participant ?? NSNull(),
                                "ice_servers": configuration.iceServers.map(\.json), "awaited": awaited]))
        logger.info("joined", metadata: ["room": "\(room)", "participant": "\(id)", "role": "\(role)", "awaited": "\(awaited)"])
        await sendRoster(room)
        return id
    }

    /// The role a join gets: the server's decision, never the browser's (README, "How a signaling server uses
    /// the node"). Here: a moderator for the configured moderator key, a participant without a key.
    func role(of m: [String: Any]) throws -> String {
        guard let given = m["moderator_key"] as? String, !given.isEmpty else { return "participant" }
        guard let key = configuration.moderatorKey, Self.sameKey(given, key) else {
            throw JoinRefused(reason: "wrong moderator key")
        }
        return "moderator"
    }

    /// A join the server refuses before asking the node anything.
    struct JoinRefused: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// Compares keys in time that does not depend on where they differ.
    static func sameKey(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        return x.count == y.count && zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// A moderation or floor command, made by `me` (the node checks the role and answers the seeds' codes).
    func command(_ m: [String: Any], by me: String) async throws -> ControlClient.Reply {
        guard let b = browsers[me] else { throw APIRefusal(method: "", path: "", status: 404, json: ["msg": "not joined"]) }
        let (room, api) = (b.room, b.node)
        let target = m["target"] as? String ?? ""
        let base = "v1/rooms/\(room)"
        switch m["action"] as? String {
        case "mute_room": return try await api.call("POST", "\(base)/hard-mute", ["by": me, "audio": m["audio"] as? Bool ?? true])
        case "mute":
            var body: [String: Any] = ["by": me]
            if let a = m["audio"] as? Bool { body["audio"] = a }
            if let v = m["video"] as? Bool { body["video"] = v }
            return try await api.call("POST", "\(base)/participants/\(target)/hard-mute", body)
        case "pin": return try await api.call("POST", "\(base)/pins", ["by": me, "add": [target]])
        case "unpin": return try await api.call("POST", "\(base)/pins", ["by": me, "remove": [target]])
        case "lock": return try await api.call("POST", "\(base)/lock", ["by": me, "locked": m["locked"] as? Bool ?? true])
        case "drop": return try await api.call("DELETE", "\(base)/participants/\(target)", ["by": me])
        case "role": return try await api.call("POST", "\(base)/participants/\(target)/role", ["by": me, "role": m["role"] as? String ?? ""])
        case "approve", "deny":
            // Knock-enabled rooms: one awaited participant (`target`), or everyone who waits.
            var body: [String: Any] = ["by": me]
            if !target.isEmpty { body["participants"] = [target] }
            return try await api.call("POST", "\(base)/awaited/\(m["action"] as? String ?? "")", body)
        case "record":
            // EnableX startRecord / stopRecord: the node answers the seeds' codes (5007/5008, 5033-5036).
            let verb = m["state"] as? String == "start" ? "start" : "stop"
            return try await api.call("POST", "\(base)/recording/\(verb)", ["by": me])
        case "talkers": return try await api.call("PATCH", "\(base)/participants/\(me)", ["talker_count": m["count"] as? Int ?? 0])
        case "floor":
            var body: [String: Any] = ["by": me, "action": m["floor_action"] as? String ?? ""]
            if !target.isEmpty { body["target"] = target }
            return try await api.call("POST", "\(base)/floor", body)
        default:
            return ControlClient.Reply(status: 400, json: ["result": -1, "msg": "unknown action"])
        }
    }

    /// The browser went away: the participant leaves the node's room; the last one out closes the room.
    func leave(_ id: String) async {
        guard let b = browsers.removeValue(forKey: id) else { return }
        _ = try? await b.node.call("DELETE", "v1/rooms/\(b.room)/participants/\(id)")
        await closeIfEmpty(b)
        if browsers.values.contains(where: { $0.room == b.room }) { await sendRoster(b.room) }
        logger.info("left", metadata: ["room": "\(b.room)", "participant": "\(id)"])
    }
}
