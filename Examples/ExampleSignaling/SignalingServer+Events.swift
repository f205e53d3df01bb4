import Foundation
import SFUClient

/// The node's events, relayed to the right browsers (see `SignalingServer` for what each browser gets).
extension SignalingServer {
    /// Follows the node's event stream and relays each event: a subscriber's own talker list and bandwidth
    /// alert to that browser, everything else to the whole room. Runs until cancelled.
    /// In a cluster it follows every live node (`GET /v1/nodes`, every 5 s): a dead node's rooms are reported by
    /// one live node, whichever, as `node_lost`, and any of them can place when the configured one cannot.
    public nonisolated func relayEvents() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.relayEvents(from: self.configuration.node) }
            group.addTask { await self.followCluster() }
        }
        await stopFollowing()
    }

    /// Follows `url`'s events from now until `stopFollowing`, unless they are followed already.
    func follow(_ url: URL) {
        guard followed.insert(url).inserted else { return }
        followers.append(Task { await self.relayEvents(from: url) })
    }

    /// Ends every stream of other nodes' events this server follows.
    public func stopFollowing() {
        for f in followers { f.cancel() }
        followers.removeAll()
        followed.removeAll()
    }

    nonisolated func followCluster() async {
        while !Task.isCancelled {
            await followLiveNodes()
            try? await Task.sleep(for: .seconds(5))
        }
    }

    /// Follows the events of the cluster's live nodes it does not follow yet (asked of the configured node, else
    /// of the others it follows).
    func followLiveNodes() async {
        for client in [api] + followed.sorted(by: { $0.absoluteString < $1.absoluteString }).map({ ControlClient(base: $0, key: configuration.nodeKey) }) {
            guard let r = try? await client.require("GET", "v1/nodes") else { continue }
            for n in r.json["nodes"] as? [[String: Any]] ?? [] where n["alive"] as? Bool == true && n["node"] as? String != "local" {
                guard let text = n["control_url"] as? String, let url = URL(string: text), url != configuration.node else { continue }
                follow(url)
            }
            return
        }
    }

    nonisolated func relayEvents(from node: URL) async {
        await EventStream(api: node, key: configuration.nodeKey, logger: logger).run { event in
            await self.relay(event, from: node)
        }
    }

    /// The node a participant goes to (`POST /v1/placements` with the room and the participant). A node on its
    /// own answers "local"; in a cluster the answer may be another node, whose events are then followed too
    /// (until the server stops).
    func node(for room: String, participant: String) async throws -> (ControlClient, String, URL) {
        let placed = try await place(room: room, participant: participant)
        guard placed.node != "local", let url = placed.controlURL, url != configuration.node else { return (api, placed.node, configuration.node) }
        follow(url)
        logger.info("participant placed", metadata: ["room": "\(room)", "participant": "\(participant)", "node": "\(placed.node)",
                                                     "reason": "\(placed.reason)"])
        return (ControlClient(base: url, key: configuration.nodeKey), placed.node, url)
    }

    /// `b` is gone: the last browser of its room on its node closes the room there (the other nodes keep theirs),
    /// unless a join to that node is under way; the last of the room here forgets where its participants were.
    func closeIfEmpty(_ b: Browser) async {
        if !browsers.values.contains(where: { $0.room == b.room && $0.nodeID == b.nodeID }), joining[b.room + "\u{0}" + b.nodeID, default: 0] == 0 {
            _ = try? await b.node.call("DELETE", "v1/rooms/\(b.room)")
        }
        if !browsers.values.contains(where: { $0.room == b.room }) {
            placed = placed.filter { $0.value.room != b.room }
            approvedWhileJoining = approvedWhileJoining.filter { placed[$0] != nil }
        }
    }

    /// Any node of a cluster places: the configured one, else (it does not answer, or cannot reach the
    /// registry) the other nodes this server follows, in turn.
    func place(room: String, participant: String) async throws -> (node: String, controlURL: URL?, reason: String) {
        do {
            return try await api.place(room: room, participant: participant)
        } catch {
            for url in followed.sorted(by: { $0.absoluteString < $1.absoluteString }) {
                if let placed = try? await ControlClient(base: url, key: configuration.nodeKey).place(room: room, participant: participant) {
                    return placed
                }
            }
            throw error
        }
    }

    /// One event of the node at `from` (the configured node when not given). A room that spans nodes has a copy
    /// on each: a browser gets its own node's events (each follows the home's ranking and moderation), and of
    /// a participant's joining and leaving only what its own node says (the other nodes' copies come and go with
    /// their relays).
    func relay(_ event: NodeEvent, from: URL? = nil) async {
        let from = from ?? configuration.node
        if event.type == "events_reset" || event.type == "events_lost" {
            // Events were missed (or the node restarted: its numbering began again; EventStream logs it and
            // resumes in the new one). A dominant speaker remembered from before may be stale: a browser that
            // joins now gets the one in the node's room state instead.
            dominantSpeakers.removeAll()
        }
        guard let room = event.room else { return }
        if event.type == "node_lost" {
            return await nodeLost(room: room, node: event["node"] as? String)
        }
        switch event.type {
        case "dominant_speaker": dominantSpeakers[room] = DominantSpeaker(participant: event["participant"] as? String)
        case "room_destroyed": dominantSpeakers[room] = nil
        default: break
        }
        let message = Self.text(["type": "event", "event": event.json])
        switch event.type {
        case "active_talkers", "bandwidth_alert":
            if let p = event["participant"] as? String, let b = browsers[p], b.nodeURL == from { b.outbox.yield(message) }
        case "participant_state":
            let p = event["participant"] as? String ?? ""
            if let node = browsers[p]?.nodeURL ?? placed[p]?.node, node != from { return }  // another node's copy of one of ours
            let letIn = event["state"] as? String == "joined" && (event["reason"] as? String)?.hasPrefix("approved") == true
            if letIn, browsers[p] == nil, placed[p] != nil { approvedWhileJoining.insert(p) }
            for b in browsers.values where b.room == room && Self.receives(b, event) { b.outbox.yield(message) }
            if letIn, let b = browsers[p], b.awaited { approved(b) }
            if event["state"] as? String == "left", let b = browsers.removeValue(forKey: p) {
                b.outbox.yield(Self.text(["type": "left", "reason": event["reason"] ?? "left"]))
                b.outbox.finish()
                await closeIfEmpty(b)
            }
            await sendRoster(room)
        default:
            for b in browsers.values where b.room == room && b.nodeURL == from && Self.receives(b, event) { b.outbox.yield(message) }
            if ["hard_mute", "pins", "floor", "lock", "role", "knock", "recording", "streaming"].contains(event.type) { await sendRoster(room) }
        }
    }

    /// Whether `b` is told of `event`: everyone in the room is, but one waiting to be let in, which is told only
    /// of itself (its own state and knock).
    static func receives(_ b: Browser, _ event: NodeEvent) -> Bool {
        !b.awaited || event["participant"] as? String == b.participant
    }

    /// A moderator let `b` in: from now on it gets the room's events; it is told, with the dominant speaker it
    /// could not learn while it waited (the roster follows with the event's).
    func approved(_ b: Browser) {
        browsers[b.participant]?.awaited = false
        b.outbox.yield(Self.text(["type": "approved", "dominant_speaker": dominantSpeakers[b.room]?.participant ?? NSNull()]))
    }

    /// Cluster: the node `room` was on died (another node reported it). Its browsers there are told to rejoin
    /// and forgotten; their next `join` asks for a placement again, which puts the room on a live node (the
    /// registry gives the room a new home when the dead node was it).
    func nodeLost(room: String, node: String?) async {
        guard let node, browsers.values.contains(where: { $0.room == room && $0.nodeID == node }) else { return }
        dominantSpeakers[room] = nil
        let message = Self.text(["type": "rejoin", "reason": "node_lost"])
        for b in browsers.values where b.room == room && b.nodeID == node {
            browsers[b.participant] = nil
            b.outbox.yield(message)
        }
        logger.warning("room's node lost: its browsers rejoin", metadata: ["room": "\(room)", "node": "\(node)"])
        // The others no longer see those who rejoin (the survivors' own `left` of them was another node's copy).
        if browsers.values.contains(where: { $0.room == room }) { await sendRoster(room) }
    }
}
