import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import SFUCluster
@testable import SFUNode
import ClusterLab
import Testing
import WebRTCEdge

/// Nodes with their control API and cluster membership, in this process: placement through any node,
/// draining, a node that stops heartbeating losing its rooms' homes, and a node fenced off from the registry.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ClusterNodeTests {
    static func node(_ set: (inout NodeConfiguration) -> Void = { _ in }) throws -> Node {
        var c = NodeConfiguration()
        c.workers = 1
        c.mediaListen = TransportAddress("127.0.0.1:0")!
        set(&c)
        let n = try Node(configuration: c)
        n.start()
        return n
    }

    /// One request through the node's router; the status and the JSON object answered.
    static func call(_ node: Node, _ cluster: ClusterMembership?, _ method: HTTPRequest.Method, _ uri: String,
                     _ body: [String: Any]? = nil) async throws -> (status: Int, json: [String: Any]) {
        let app = Application(router: ControlAPI.router(node: node, cluster: cluster))
        let data = body.map { try! JSONSerialization.data(withJSONObject: $0) }
        let (status, bytes): (Int, Data) = try await app.test(.router) { client in
            var fields = HTTPFields()
            if data != nil { fields[.contentType] = "application/json" }
            return try await client.execute(uri: uri, method: method, headers: fields, body: data.map { ByteBuffer(bytes: $0) }) { r in
                (r.status.code, Data(buffer: r.body))
            }
        }
        return (status, (try? JSONSerialization.jsonObject(with: bytes)) as? [String: Any] ?? [:])
    }

    @Test func aNodeOnItsOwnPlacesEveryRoomOnItselfUntilItDrains() async throws {
        let node = try Self.node()
        defer { node.stop() }
        let first = try await Self.call(node, nil, .post, "/v1/placements", ["room": "standup", "participant": "alice"])
        #expect(first.status == 200 && first.json["node"] as? String == "local" && first.json["reason"] as? String == "single_node")
        #expect(try await Self.call(node, nil, .post, "/v1/rooms", ["room": "standup"]).status == 201)
        #expect(try await Self.call(node, nil, .get, "/healthz").json["state"] as? String == "serving")
        #expect(try await Self.call(node, nil, .post, "/v1/node/drain", [:]).status == 200)
        #expect(try await Self.call(node, nil, .get, "/healthz").json["state"] as? String == "draining")
        let refused = try await Self.call(node, nil, .post, "/v1/rooms", ["room": "another"])
        #expect(refused.status == 503 && refused.json["result"] as? Int == 6018)
        #expect(try await Self.call(node, nil, .post, "/v1/placements", ["room": "another"]).json["result"] as? Int == 6018)
        #expect(try await Self.call(node, nil, .post, "/v1/placements", ["room": "standup"]).status == 200, "its rooms stay")
        #expect(try await Self.call(node, nil, .post, "/v1/rooms/standup/participants", ["participant": "bob"]).status == 201)
    }

    /// Nodes "a" and "b" of one fresh registry, each with its membership running, both seen alive. A test stops
    /// one's heartbeat by cancelling its task, as a killed node would stop.
    struct TwoNodes {
        var nodes: [Node], members: [ClusterMembership], tasks: [Task<Void, Never>]
        func stop() {
            for t in tasks { t.cancel() }
            for n in nodes { n.stop() }
        }
    }

    static func twoNodes() async throws -> TwoNodes {
        let url = try PostgresServer.shared.get().database()
        var c = TwoNodes(nodes: [], members: [], tasks: [])
        for id in ["a", "b"] {
            let n = try Self.node {
                $0.clusterRegistry = url
                $0.clusterNodeID = id
                $0.clusterControlURL = "http://\(id).example:8080"
                $0.clusterHeartbeatTimeoutSeconds = 4  // a loaded machine may delay a heartbeat by a second or two
            }
            let m = try ClusterMembership(node: n, logger: Logger(label: "test"))
            c.nodes.append(n)
            c.members.append(m)
            c.tasks.append(Task { await m.runUntilCancelled() })
        }
        // Both alive in the registry, and each node knows it is registered: a node answers 6019 until its own
        // registration returns, which on a loaded machine comes a moment after its row is visible to the others.
        let members = c.members
        try await Self.eventually {
            try await members[0].registry.nodes().filter(\.alive).count == 2 && members.allSatisfy { !$0.isFenced }
        }
        return c
    }

    @Test func aNodeThatStopsHeartbeatingLosesItsRoomsToALiveNode() async throws {
        let cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let (nodes, members, tasks) = (cluster.nodes, cluster.members, cluster.tasks)
        let viaA = try await Self.call(nodes[0], members[0], .post, "/v1/placements", ["room": "r"])
        let viaB = try await Self.call(nodes[1], members[1], .post, "/v1/placements", ["room": "r"])
        let home = try #require(viaA.json["node"] as? String, "the placement via a answered \(viaA.status): \(viaA.json)")
        #expect(viaA.json["reason"] as? String == "new_room" && viaB.json["reason"] as? String == "home")
        #expect(viaB.json["node"] as? String == home && viaB.json["control_url"] as? String == "http://\(home).example:8080",
                "either node sends the room's participants to its home")
        let (dead, survivor) = home == "a" ? (0, 1) : (1, 0)
        #expect(try await Self.call(nodes[survivor], members[survivor], .get, "/healthz").json["node"] as? String == members[survivor].record.id)
        let events = nodes[survivor].events.subscribe(room: "r")
        tasks[dead].cancel()  // the home stops heartbeating, as a killed node would
        var moved: [String: Any] = [:]
        try await Self.eventually {
            moved = try await Self.call(nodes[survivor], members[survivor], .post, "/v1/placements", ["room": "r"]).json
            return moved["reason"] as? String == "home_taken_over"
        }
        #expect(moved["node"] as? String == members[survivor].record.id && moved["epoch"] as? Int == 2)
        // The survivor reported the dead node to the signaling server, for the room its participants were in.
        // (`home` says whether it was still the room's home when reported: the placement above may have taken
        // the home over first, or not - both race past the same timeout.)
        let lost = try await Self.first(events) { $0["type"] as? String == "node_lost" }
        #expect(lost?["room"] as? String == "r" && lost?["node"] as? String == members[dead].record.id && lost?["home"] is Bool
                && lost?["participants"] is Int && lost?["reason"] as? String == "heartbeat_timeout", "\(lost ?? [:])")
    }

    /// A room's home saves its moderation in the registry; the node that takes the room over when the home
    /// dies applies it: the room stays locked to newcomers, its participants get back in with their pins.
    @Test func aRoomTakenOverFromADeadHomeKeepsItsModeration() async throws {
        let cluster = try await Self.twoNodes()
        defer { cluster.stop() }
        let (nodes, members, tasks) = (cluster.nodes, cluster.members, cluster.tasks)
        let placed = try await Self.call(nodes[0], members[0], .post, "/v1/placements", ["room": "r"])
        let (dead, survivor) = placed.json["node"] as? String == "a" ? (0, 1) : (1, 0)
        try await nodes[dead].createRoom("r", configuration: .init())
        try await nodes[dead].withRoom("r") { room, core, now in
            try room.admit("M", role: .moderator, now: now)
            try room.admit("X", now: now)
            try room.moderation.pin(by: "M", ["X"], now: now, into: core.batch)
            try room.moderation.lock(by: "M", locked: true)
        }
        try await Self.eventually { try await members[dead].registry.moderation(of: "r")?.state.contains(#""locked": true"#) == true }
        tasks[dead].cancel()  // the home stops heartbeating, as a killed node would
        try await Self.eventually {
            try await Self.call(nodes[survivor], members[survivor], .post, "/v1/placements", ["room": "r"]).json["reason"] as? String == "home_taken_over"
        }
        #expect(try await Self.call(nodes[survivor], members[survivor], .post, "/v1/rooms", ["room": "r"]).status == 201)
        #expect(try await nodes[survivor].withRoom("r") { room, _, _ in room.locked }, "locked from its creation, before anyone is admitted")
        let back = try await nodes[survivor].withRoom("r") { room, _, now in
            try room.admit("M", role: .moderator, now: now)
            try room.admit("X", now: now)
            return room.pinned
        }
        #expect(back == ["X"], "X rejoined, pinned as before")
        await #expect(throws: Error.self, "a newcomer: the room is still locked") {
            try await nodes[survivor].withRoom("r") { room, _, now in try room.admit("W", now: now) }
        }
        // The new home's own command is saved under its epoch, and nothing takes the room over a second time.
        try await nodes[survivor].withRoom("r") { room, _, _ in try room.moderation.lock(by: "M", locked: false) }
        try await Self.eventually { try await members[survivor].registry.moderation(of: "r")?.state.contains(#""locked": false"#) == true }
        #expect(try await nodes[survivor].withRoom("r") { room, _, _ in !room.locked })
    }

    /// The first event on `subscription` that `match` accepts, or nil when none comes within 10 s.
    static func first(_ subscription: EventHub.Subscription, _ match: @escaping @Sendable ([String: Any]) -> Bool) async throws -> [String: Any]? {
        let messages = subscription.messages
        let found = try await withThrowingTaskGroup(of: String?.self) { g in
            g.addTask {
                for await m in messages {
                    if let o = try? JSONSerialization.jsonObject(with: Data(m.text.utf8)) as? [String: Any], match(o) { return m.text }
                }
                return nil
            }
            g.addTask {
                try await Task.sleep(for: .seconds(10))
                return nil
            }
            defer { g.cancelAll() }
            return try await g.next() ?? nil
        }
        return found.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func aNodeThatCannotReachTheRegistryIsFencedAndPlacesNobody() async throws {
        let node = try Self.node { $0.clusterRegistry = "postgres://postgres@/none?host=/nonexistent-sfu-registry"; $0.clusterNodeID = "lonely" }
        defer { node.stop() }
        let m = try ClusterMembership(node: node, logger: Logger(label: "test"))
        let task = Task { await m.runUntilCancelled() }
        defer { task.cancel() }
        try await Task.sleep(for: .milliseconds(300))
        let health = try await Self.call(node, m, .get, "/healthz")
        #expect(health.status == 200 && health.json["state"] as? String == "registry_unreachable" && health.json["node"] as? String == "lonely")
        let placed = try await Self.call(node, m, .post, "/v1/placements", ["room": "r"])
        #expect(placed.status == 503 && placed.json["result"] as? Int == 6019)
        #expect(try await Self.call(node, m, .post, "/v1/rooms", ["room": "r"]).status == 201, "the node itself still serves its API and media")
    }

    @Test func aRegistryURLThatIsNotPostgresIsAConfigurationError() {
        #expect(throws: RegistryError.self) { try PostgresRegistry(url: "mysql://x/y", heartbeatTimeout: .seconds(5)) }
        #expect(throws: RegistryError.self) { try PostgresRegistry(url: "postgres:///db", heartbeatTimeout: .seconds(5)) }
        #expect(throws: RegistryError.self) { try PostgresRegistry(url: "postgres://u@/db?host=/run&port=99999", heartbeatTimeout: .seconds(5)) }
    }

    /// Polls every 100 ms for up to 10 s; an error counts as "not yet" (the schema may not be there yet).
    static func eventually(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<100 {
            if (try? await condition()) == true { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("condition not met within 10 s")
    }
}
