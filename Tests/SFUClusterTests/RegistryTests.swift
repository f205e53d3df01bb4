import Foundation
import ClusterLab
import Testing
@testable import SFUCluster

/// The PostgreSQL registry against a real server (see `PostgresServer`): placement races between two
/// signaling servers, liveness on the database's clock, epoch fencing, draining, and the schema.
@Suite struct RegistryTests {
    static let limits = PlacementRule.Limits(participantsPerRoomPerNode: 100)

    /// Runs `body` with `count` registries on one fresh database (each its own connection pool, as separate
    /// signaling servers or nodes would be), the schema prepared.
    /// The heartbeat timeout is long (30 s) so that a node registered at the start of a test is alive to its
    /// end however slow a loaded machine is; a test that needs a dead node ages its heartbeat in SQL.
    func withRegistries(_ count: Int = 1, timeout: Duration = .seconds(30),
                        _ body: ([PostgresRegistry], String) async throws -> Void) async throws {
        let server = try PostgresServer.shared.get()
        let url = try server.database()
        let registries = try (0..<count).map { _ in try PostgresRegistry(url: url, heartbeatTimeout: timeout) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for r in registries { group.addTask { await r.run() } }
            defer { group.cancelAll() }
            try await registries[0].prepare()
            try await body(registries, url)
        }
    }

    func register(_ r: any Registry, _ ids: [String], capacity: Int = 100) async throws {
        for id in ids { try await r.register(NodeRecord(id: id, controlURL: "http://\(id):8080", capacity: capacity)) }
    }

    @Test func theSchemaIsMigratedOnceWhenNodesStartTogetherAndANewerOneIsRefused() async throws {
        try await withRegistries(3) { rs, url in
            try await withThrowingTaskGroup(of: Void.self) { g in
                for r in rs { g.addTask { try await r.prepare() } }
                try await g.waitForAll()
            }
            try await register(rs[0], ["a"])
            #expect(try await rs[1].nodes().map(\.id) == ["a"], "one schema, the same tables for every node")
            try PostgresServer.shared.get().psql(url, "UPDATE sfu_schema SET version = 99")
            await #expect(throws: RegistryError.schemaTooNew(found: 99, known: RegistrySchema.versions.count)) { try await rs[2].prepare() }
        }
    }

    @Test func aRoomIsNeverSplitByTwoSignalingServersPlacingItAtOnce() async throws {
        try await withRegistries(2) { rs, _ in
            try await register(rs[0], ["a", "b", "c", "d"])
            let rooms = (0..<40).map { "race-\($0)" }
            let placed = try await withThrowingTaskGroup(of: (Int, Placement).self) { g in
                for room in rooms { for i in 0..<2 { g.addTask { (i, try await rs[i].place(room: room, limits: Self.limits)) } } }
                var out: [String: [Placement]] = [:]
                for try await (_, p) in g { out[p.room, default: []].append(p) }
                return out
            }
            for room in rooms {
                let two = try #require(placed[room])
                #expect(two.count == 2 && two[0].node == two[1].node && two[0].home == two[1].home,
                        "\(room): both signaling servers were sent to one node (\(two.map(\.node)))")
                #expect(Set(two.map(\.reason)) == [.newRoom, .home] && two[0].epoch == two[1].epoch && two[0].epoch >= 1,
                        "one of them created the room, the other found it: \(two.map(\.reason))")
                let home = try await rs[0].home(of: room)
                #expect(home?.node == two[0].node && home?.epoch == two[0].epoch)
            }
            #expect(Set(placed.values.map { $0[0].node }).count > 1, "the rooms were spread over the nodes")
        }
    }

    @Test func aNodeWhoseHeartbeatIsStaleOnTheDatabasesClockIsDeadAndItsRoomsAreTakenOver() async throws {
        try await withRegistries { rs, url in
            let r = rs[0]
            try await register(r, ["a"])
            let first = try await r.place(room: "standup", limits: Self.limits)
            #expect(first.node == "a" && first.reason == .newRoom && first.epoch == 1)
            try await register(r, ["b"])
            // a's last heartbeat ages past the timeout (30 s) on the database's clock: whatever a's own clock
            // says, it is dead for everyone.
            try PostgresServer.shared.get().psql(url, "UPDATE sfu_nodes SET heartbeat_at = now() - interval '60 seconds' WHERE id = 'a'")
            #expect(try await r.nodes().map { "\($0.id):\($0.alive)" } == ["a:false", "b:true"])
            let next = try await r.place(room: "standup", limits: Self.limits)
            #expect(next.node == "b" && next.reason == .homeTakenOver && next.home == "b" && next.epoch == 2)
            // a comes back: its heartbeat makes it alive, but the room stays with its new home.
            #expect(try await r.heartbeat(node: "a", load: NodeLoad()))
            let again = try await r.place(room: "standup", limits: Self.limits)
            #expect(again.node == "b" && again.reason == .home && again.epoch == 2)
        }
    }

    @Test func aHomeIsClaimedOnlyFromTheEpochTheClaimantSaw() async throws {
        try await withRegistries(2) { rs, _ in
            try await register(rs[0], ["a", "b", "c"])
            let p = try await rs[0].place(room: "r", limits: Self.limits)
            let others = ["a", "b", "c"].filter { $0 != p.node }
            // Two survivors race to take over from epoch 1: one wins, the other is fenced off.
            async let x = rs[0].claimHome(room: "r", node: others[0], expectedEpoch: p.epoch)
            async let y = rs[1].claimHome(room: "r", node: others[1], expectedEpoch: p.epoch)
            let (ex, ey) = try await (x, y)
            #expect([ex, ey].compactMap { $0 } == [2], "exactly one claim from epoch 1 succeeds")
            let winner = ex != nil ? others[0] : others[1]
            #expect(try await rs[0].home(of: "r")?.node == winner)
            #expect(try await rs[1].claimHome(room: "r", node: p.node, expectedEpoch: 1) == nil, "a stale epoch claims nothing")
        }
    }

    /// The home saves the room's moderation as it changes; a home that lost the room (an older epoch) and an
    /// older version never overwrite a newer one; the row ends with the room.
    @Test func aRoomsModerationIsSavedByItsHomeOnlyForwardAndEndsWithTheRoom() async throws {
        try await withRegistries(2) { rs, url in
            try await register(rs[0], ["a", "b"])
            let p = try await rs[0].place(room: "r", limits: Self.limits)
            #expect(try await rs[0].moderation(of: "r") == nil)
            #expect(try await rs[0].saveModeration(room: "r", epoch: p.epoch, version: 3, state: #"{"version":3,"locked":true}"#))
            #expect(try await !rs[1].saveModeration(room: "r", epoch: p.epoch, version: 2, state: #"{"version":2}"#), "an older version")
            let other = p.node == "a" ? "b" : "a"
            let taken = try #require(try await rs[1].claimHome(room: "r", node: other, expectedEpoch: p.epoch))
            let saved = try #require(try await rs[1].moderation(of: "r"))
            #expect(saved.epoch == p.epoch && saved.version == 3 && saved.state.contains(#""locked": true"#), "what the new home loads: \(saved)")
            #expect(try await !rs[0].saveModeration(room: "r", epoch: p.epoch, version: 9, state: #"{"version":9}"#),
                    "the old home, fenced by the new epoch")
            #expect(try await rs[1].saveModeration(room: "r", epoch: taken, version: 1, state: #"{"version":1}"#),
                    "the new home's first version is newer: its epoch is")
            #expect(try await !rs[1].saveModeration(room: "gone", epoch: taken, version: 1, state: "{}"), "no such room")
            #expect(try await !rs[0].forgetModeration(room: "r", epoch: p.epoch), "the old home's room ending forgets nothing of the new one's")
            #expect(try await rs[1].forgetModeration(room: "r", epoch: taken))
            #expect(try await rs[1].moderation(of: "r") == nil)
            #expect(try await rs[1].saveModeration(room: "r", epoch: taken, version: 1, state: #"{"version":1}"#), "a room created again starts afresh")
            try PostgresServer.shared.get().psql(url, "DELETE FROM sfu_rooms WHERE room = 'r'")
            #expect(try await rs[0].moderation(of: "r") == nil, "it ended with the room")
        }
    }

    /// A node learns, for each room it hosts, the home, the epoch and the other live nodes hosting it.
    @Test func aNodesSpansNameEachRoomsHomeEpochAndLivePeers() async throws {
        try await withRegistries { rs, url in
            for id in ["a", "b", "c"] {
                try await rs[0].register(NodeRecord(id: id, controlURL: "http://\(id):8080", relayAddress: "10.0.0.\(id.unicodeScalars.first!.value - 96):7000",
                                                    capacity: 100))
            }
            let first = try await rs[0].place(room: "r", limits: Self.limits)
            for id in ["a", "b", "c"] {
                _ = try await rs[0].heartbeat(node: id, load: NodeLoad(roomParticipants: id == "c" ? [:] : ["r": 1]))
            }
            let spans = try await rs[0].spans(of: "a")
            #expect(spans.map(\.room) == ["r"] && spans[0].home == first.home && spans[0].epoch == first.epoch)
            #expect(spans[0].peers == ["b": "10.0.0.2:7000"], "b hosts it too; c does not")
            try PostgresServer.shared.get().psql(url, "UPDATE sfu_nodes SET heartbeat_at = now() - interval '1 hour' WHERE id = 'b'")
            #expect(try await rs[0].spans(of: "a").first?.peers == [:], "a dead node is no peer")
            #expect(try await rs[0].spans(of: "c") == [])
        }
    }

    @Test func aDrainingNodeKeepsItsRoomsAndTakesNoNewOnes() async throws {
        try await withRegistries { rs, _ in
            let r = rs[0]
            try await register(r, ["a"])
            _ = try await r.place(room: "old", limits: Self.limits)
            try await register(r, ["b"])
            try await r.setState(node: "a", .draining)
            #expect(try await r.place(room: "old", limits: Self.limits).node == "a", "existing rooms stay")
            for i in 0..<10 { #expect(try await r.place(room: "new-\(i)", limits: Self.limits).node == "b") }
            try await r.setState(node: "b", .draining)
            await #expect(throws: RegistryError.noCapacity) { try await r.place(room: "newest", limits: Self.limits) }
        }
    }

    @Test func placementsBetweenHeartbeatsCountAsLoadSoABurstIsSpread() async throws {
        try await withRegistries { rs, _ in
            let r = rs[0]
            try await register(r, ["a", "b"], capacity: 1000)
            #expect(try await r.heartbeat(node: "a", load: NodeLoad(participants: 0)))
            var counts: [String: Int] = [:]
            for i in 0..<20 { counts[try await r.place(room: "burst-\(i)", limits: Self.limits).node, default: 0] += 1 }
            #expect(counts == ["a": 10, "b": 10], "each placement loads its node until the next heartbeat: \(counts)")
            // A heartbeat replaces the estimate with what the node reports.
            #expect(try await r.heartbeat(node: "a", load: NodeLoad(participants: 900, roomParticipants: ["burst-0": 900])))
            #expect(try await r.place(room: "after", limits: Self.limits).node == "b")
        }
    }

    /// A participant placed on a node is not in the node's count until it joins there. A heartbeat taken
    /// in between used to replace the placement with the node's count, and the next placements filled the
    /// node past the room's limit (`sfu bench --nodes` once put 6 of 8 on nodes of capacity 5). A placement now
    /// counts until the node's count grew by it, or the grace passed.
    @Test func aPlacementNotYetJoinedStillCountsAfterTheNodesHeartbeat() async throws {
        try await withRegistries { rs, url in
            let r = rs[0]
            let limits = PlacementRule.Limits(participantsPerRoomPerNode: 2)
            try await register(r, ["a", "b"])
            let home = try await r.place(room: "r", limits: limits).node
            let other = home == "a" ? "b" : "a"
            // The first has not reached the node when it reports: it still counts.
            #expect(try await r.heartbeat(node: home, load: NodeLoad()))
            #expect(try await r.place(room: "r", limits: limits).node == home)
            // The first joined (the count grew by one); the second is still on its way: the home is full.
            #expect(try await r.heartbeat(node: home, load: NodeLoad(rooms: 1, participants: 1, roomParticipants: ["r": 1])))
            let third = try await r.place(room: "r", limits: limits)
            #expect(third.node == other && third.reason == .spillToNewNode, "\(third)")
            // The second joined: the home reports two, nothing is pending there, and it stays full.
            #expect(try await r.heartbeat(node: home, load: NodeLoad(rooms: 1, participants: 2, roomParticipants: ["r": 2])))
            #expect(try await r.place(room: "r", limits: limits).node == other)
            // Two placed on the other node never came: past the grace they no longer count, and one who leaves
            // the home makes room there again.
            try PostgresServer.shared.get().psql(url, "UPDATE sfu_room_hosts SET pending_at = now() - interval '1 minute'")
            #expect(try await r.heartbeat(node: home, load: NodeLoad(rooms: 1, participants: 1, roomParticipants: ["r": 1])))
            #expect(try await r.place(room: "r", limits: limits).node == home)
            #expect(try await r.place(room: "r", limits: limits).node == other, "the other node's placements that never came expired")
        }
    }

    /// The same for a node's capacity: placements on their way count in its load across heartbeats.
    @Test func placementsOnTheirWayCountAgainstTheNodesCapacityAcrossHeartbeats() async throws {
        try await withRegistries { rs, _ in
            let r = rs[0]
            try await register(r, ["a"], capacity: 2)
            for room in ["r1", "r2"] {
                #expect(try await r.place(room: room, limits: Self.limits).node == "a")
                #expect(try await r.heartbeat(node: "a", load: NodeLoad()), "taken before the participant joined")
            }
            await #expect(throws: RegistryError.noCapacity) { try await r.place(room: "r3", limits: Self.limits) }
            // Both joined: the node's count shows them, and it is still full.
            #expect(try await r.heartbeat(node: "a", load: NodeLoad(rooms: 2, participants: 2, roomParticipants: ["r1": 1, "r2": 1])))
            await #expect(throws: RegistryError.noCapacity) { try await r.place(room: "r3", limits: Self.limits) }
        }
    }

    @Test func aFullHomeSpillsToANodeOfTheRoomBeforeANewOne() async throws {
        try await withRegistries { rs, _ in
            let r = rs[0]
            let limits = PlacementRule.Limits(participantsPerRoomPerNode: 2)
            try await register(r, ["a", "b", "c"])
            let home = try await r.place(room: "big", limits: limits).node
            #expect(try await r.place(room: "big", limits: limits).node == home)
            let spill = try await r.place(room: "big", limits: limits)
            #expect(spill.reason == .spillToNewNode && spill.node != home && spill.home == home && spill.epoch == 1)
            let next = try await r.place(room: "big", limits: limits)
            #expect(next.reason == .spillToHost && next.node == spill.node, "the node already in the room, no third node")
        }
    }

    @Test func aRoomEndedAndPlacedAgainNeverReusesAnEpoch() async throws {
        // A room's row goes when it ends; placed again, it restarted at epoch 1, the epoch a node that still
        // held the old room would take for its own. Epochs come from one sequence: they only grow.
        try await withRegistries { rs, url in
            let r = rs[0]
            try await register(r, ["a"])
            let first = try await r.place(room: "weekly", limits: Self.limits)
            let other = try await r.place(room: "daily", limits: Self.limits)
            #expect(first.epoch >= 1 && other.epoch > first.epoch, "no two home changes share an epoch")
            // Nobody hosts it any more, its last placement is old: a's heartbeat ends it.
            try PostgresServer.shared.get().psql(url, "DELETE FROM sfu_room_hosts; UPDATE sfu_rooms SET placed_at = now() - interval '5 minutes'")
            #expect(try await r.heartbeat(node: "a", load: NodeLoad()))
            #expect(try await r.home(of: "weekly") == nil, "the room ended")
            let again = try await r.place(room: "weekly", limits: Self.limits)
            #expect(again.reason == .newRoom && again.epoch > other.epoch, "epoch \(again.epoch) after \(first.epoch) and \(other.epoch)")
            let claimed = try #require(try await r.claimHome(room: "weekly", node: "a", expectedEpoch: again.epoch))
            #expect(claimed > again.epoch)
        }
    }

    @Test func aRegistryOfSchemaVersionOneStartsItsEpochsPastTheRoomsItHolds() async throws {
        // A registry written by a node of schema version 1 (epochs counted per room) is migrated: the sequence
        // starts past every epoch it holds, so a room's next home change still increases its epoch.
        try await withRegistries { rs, url in
            let server = try PostgresServer.shared.get()
            try server.psql(url, """
                DROP TABLE sfu_room_moderation; DROP SEQUENCE sfu_epochs;
                ALTER TABLE sfu_nodes DROP COLUMN failure_reported_at, DROP COLUMN failure_reported_by;
                ALTER TABLE sfu_room_hosts DROP COLUMN pending, DROP COLUMN pending_at;
                ALTER TABLE sfu_nodes ADD COLUMN joins_since_heartbeat int8 NOT NULL DEFAULT 0;
                UPDATE sfu_schema SET version = 1;
                INSERT INTO sfu_nodes (id, control_url, capacity, heartbeat_at, registered_at) VALUES ('a', 'http://a', 100, now(), now());
                INSERT INTO sfu_rooms (room, home, epoch, placed_at) VALUES ('old', NULL, 41, now())
                """)
            try await rs[0].prepare()
            let placed = try await rs[0].place(room: "old", limits: Self.limits)
            #expect(placed.reason == .newRoom && placed.epoch == 42)
        }
    }

    @Test func aDeadNodeIsReportedOnceWithTheRoomsItHostedAndAgainAfterItCameBackAndDiedAgain() async throws {
        try await withRegistries(2) { rs, url in
            try await register(rs[0], ["a"])
            for room in ["r1", "r2"] { _ = try await rs[0].place(room: room, limits: Self.limits) }
            try await register(rs[0], ["b", "c"])
            #expect(try await rs[0].heartbeat(node: "a", load: NodeLoad(rooms: 2, participants: 4, roomParticipants: ["r1": 3, "r2": 1])))
            #expect(try await rs[0].reportFailures(by: "b").isEmpty, "nobody is dead yet")
            try PostgresServer.shared.get().psql(url, "UPDATE sfu_nodes SET heartbeat_at = now() - interval '60 seconds' WHERE id = 'a'")
            // Two survivors ask at once: one reports a, the other learns nothing.
            async let x = rs[0].reportFailures(by: "b")
            async let y = rs[1].reportFailures(by: "c")
            let (fx, fy) = try await (x, y)
            #expect(fx + fy == [NodeFailure(node: "a", rooms: ["r1": 3, "r2": 1], homeOf: ["r1", "r2"])], "\(fx) \(fy)")
            #expect(try await rs[0].reportFailures(by: "b").isEmpty, "reported once")
            // Its rooms no longer count it: the next placement of r1 takes the home over on a live node.
            let moved = try await rs[0].place(room: "r1", limits: Self.limits)
            #expect(moved.reason == .homeTakenOver && ["b", "c"].contains(moved.node))
            // a comes back, then dies again: reported again, now with no room of its own.
            #expect(try await rs[0].heartbeat(node: "a", load: NodeLoad()))
            try PostgresServer.shared.get().psql(url, "UPDATE sfu_nodes SET heartbeat_at = now() - interval '60 seconds' WHERE id = 'a'")
            #expect(try await rs[1].reportFailures(by: "c") == [NodeFailure(node: "a", rooms: [:], homeOf: ["r2"])])
        }
    }

    @Test func aNodeThatLeavesIsGoneAtOnceReportedByItselfAndBackWhenItRegistersAgain() async throws {
        try await withRegistries(2) { rs, _ in
            try await register(rs[0], ["a"])
            for room in ["r1", "r2"] { _ = try await rs[0].place(room: room, limits: Self.limits) }
            try await register(rs[0], ["b"])
            _ = try await rs[0].place(room: "r3", limits: Self.limits)  // on a or b
            #expect(try await rs[0].heartbeat(node: "a", load: NodeLoad(rooms: 2, participants: 4, roomParticipants: ["r1": 3, "r2": 1])))
            let left = try await rs[0].leave(node: "a")
            #expect(left.node == "a" && left.rooms["r1"] == 3 && left.rooms["r2"] == 1 && left.homeOf.starts(with: ["r1", "r2"]), "\(left)")
            // Dead to everyone at once, its rooms no longer hosted there, and never reported by another node.
            #expect(try await rs[1].nodes().first { $0.id == "a" }?.alive == false)
            #expect(try await rs[1].spans(of: "a").isEmpty)
            #expect(try await rs[1].reportFailures(by: "b").isEmpty, "it said goodbye: nobody reports it dead")
            let moved = try await rs[1].place(room: "r1", limits: Self.limits)
            #expect(moved.node == "b" && moved.reason == .homeTakenOver, "\(moved)")
            // A restart registers it again: alive, placeable, and reported like any node when it dies later.
            try await register(rs[0], ["a"])
            #expect(try await rs[1].nodes().first { $0.id == "a" }?.alive == true)
        }
    }

    @Test func heartbeatsEndingRoomsAndPlacementsRevivingThemNeverDeadlock() async throws {
        // A heartbeat ends rooms its node is home of that nobody hosts; a placement of such a room at the same
        // moment locked the room, then wanted the node's row the heartbeat held while it waited for the room.
        try await withRegistries(2) { rs, url in
            try await register(rs[0], ["a"])
            let rooms = (0..<30).map { "old-\($0)" }
            for room in rooms { _ = try await rs[0].place(room: room, limits: Self.limits) }
            for round in 0..<3 {
                try PostgresServer.shared.get().psql(url, "DELETE FROM sfu_room_hosts; UPDATE sfu_rooms SET placed_at = now() - interval '5 minutes'")
                try await withThrowingTaskGroup(of: Void.self) { g in
                    for room in rooms { g.addTask { _ = try await rs[1].place(room: room, limits: Self.limits) } }
                    for _ in 0..<10 { g.addTask { _ = try await rs[0].heartbeat(node: "a", load: NodeLoad()) } }
                    try await g.waitForAll()
                }
                #expect(try await rs[0].place(room: rooms[round], limits: Self.limits).node == "a")
            }
        }
    }

    @Test func aHeartbeatFromANodeTheRegistryForgotSaysSoAndItsRoomsFollowItsReports() async throws {
        try await withRegistries { rs, url in
            let r = rs[0]
            #expect(try await r.heartbeat(node: "ghost", load: NodeLoad()) == false)
            try await register(r, ["a"])
            #expect(try await r.heartbeat(node: "a", load: NodeLoad(rooms: 2, participants: 5, roomParticipants: ["x": 3, "y": 2])))
            #expect(try await r.heartbeat(node: "a", load: NodeLoad(rooms: 1, participants: 3, roomParticipants: ["x": 3])))
            try PostgresServer.shared.get().psql(url, "DO $$ BEGIN IF (SELECT count(*) FROM sfu_room_hosts) <> 1 THEN RAISE 'hosts not replaced'; END IF; END $$")
        }
    }
}
