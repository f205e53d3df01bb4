import Foundation
import NodeIO
import SFU
import SFUClient

extension RelayBench {
    /// Turns: Alice (node a, the home) and Carol (node b) talk 3 s each in turn, four times each; both nodes'
    /// room state is sampled every 50 ms.
    static func takeTurns(_ bench: RelayBenchSession, room: String, result: inout Result) async throws {
        let (a, b) = (bench.api(0), bench.api(1))
        let sentWhileMeasured = bench.sent
        let carol = try await bench.join(1, room: room, "carol", publish: true)
        bench.talkers.append((carol, 3))
        try await bench.pump(for: 3, loud: { _, _ in false })  // Carol connects; everyone quiet
        let turn = 3.0
        result.turns = 8
        var firstListed: [Int: (a: Double?, b: Double?)] = [:]
        var samples = 0, agreed = 0
        let turnsStart = MonoClock.now()
        func speaker(_ t: Double) -> UInt16 { Int(t / turn) % 2 == 0 ? 1 : 3 }
        try await bench.pump(for: turn * Double(result.turns), loud: { id, t in id == speaker(t) }, every: (0.05, {
            let t = (MonoClock.now() - turnsStart).seconds
            guard let x = try? await a.call("GET", "v1/rooms/\(room)"), let y = try? await b.call("GET", "v1/rooms/\(room)") else { return }
            let talkersA = x.json["active_talkers"] as? [String] ?? [], talkersB = y.json["active_talkers"] as? [String] ?? []
            let (domA, domB) = (x.json["dominant_speaker"] as? String, y.json["dominant_speaker"] as? String)
            samples += 1
            if talkersA == talkersB && domA == domB { agreed += 1 }
            let i = Int(t / turn), name = speaker(t) == 1 ? "alice" : "carol"
            let into = t - Double(i) * turn
            var seen = firstListed[i] ?? (nil, nil)
            if seen.a == nil, talkersA.contains(name) { seen.a = into }
            if seen.b == nil, talkersB.contains(name) { seen.b = into }
            firstListed[i] = seen
        }))
        (result.rankingSamples, result.rankingAgreed) = (samples, agreed)
        // The first turn is Alice's from silence: a switch is a turn that takes over from the other talker.
        for i in 1..<result.turns {
            guard let seen = firstListed[i] else { continue }
            let (own, other) = i % 2 == 0 ? (seen.a, seen.b) : (seen.b, seen.a)
            if let own { result.switchLocalSeconds.append(own) }
            if let other { result.switchRemoteSeconds.append(other) }
        }
        result.turns -= 1
        bench.sent = sentWhileMeasured
    }

    /// SIGTERM of node b while it relays the room (issue 40: the answerer of the relay channel died with SIGILL
    /// 15 times in 16): it must exit with status 0, having said `node_lost` (`node_stopped`) of the room; then
    /// it starts again under its id, and its listener rejoins through a placement.
    static func stopAndRestart(_ bench: RelayBenchSession, room: String, result: inout Result) async throws {
        bench.talkers = bench.talkers.filter { $0.id == 1 }  // Carol's node goes
        let stopping = bench.nodes[1]
        let started = MonoClock.now()
        kill(stopping.pid, SIGTERM)
        while stopping.process.isRunning, MonoClock.now() - started < .seconds(NodeProcess.stopLimit) { try await bench.pump(for: 0.005) }
        result.stopSeconds = stopping.process.isRunning ? nil : (MonoClock.now() - started).seconds
        result.stopProblem = await stopping.stop()  // nil once it exited with status 0; kills one that hangs
        result.stopSaidNodeLost = try await bench.awaitEvent(from: "b", room: room, type: "node_lost", seconds: 1) {
            $0["node"] as? String == "b" && $0["reason"] as? String == "node_stopped"
        } != nil
        bench.gone(1)
        try await bench.start(1)
        let placed = try await bench.place(room: room, "remote-2", asking: 0)
        try await bench.create(placed.node, room: room)
        let again = Listener(try await bench.join(placed.node, room: room, "remote-2", publish: false))
        bench.listeners = [bench.listeners[0], again]
        try await bench.pump(for: 10, until: { again.firstFrom[1] != nil })
        if let t = again.firstFrom[1] { result.rejoinAfterStopSeconds = (t - started).seconds }
    }

    /// `kill -9` of node a, the talker's node and the room's home, with a second room that only a hosts: the
    /// survivor's `node_lost` of each room has their participants rejoin through a placement, as a signaling
    /// server does it.
    static func killHome(_ bench: RelayBenchSession, room: String, result: inout Result) async throws {
        // A listener of the room on b (placed there directly: the room spans both nodes again), and a room only a
        // hosts with a talker and a listener.
        try await bench.create(1, room: room)
        let onB = Listener(try await bench.join(1, room: room, "listener-b", publish: false))
        let solo = "solo-\(room)"
        try await bench.create(0, room: solo)
        let dave = try await bench.join(0, room: solo, "dave", publish: true)
        let erin = Listener(try await bench.join(0, room: solo, "erin", publish: false))
        bench.listeners = [onB, erin]
        bench.talkers = [(bench.talkers[0].client, 1), (dave, 4)]
        try await bench.pump(for: 10, until: { onB.firstFrom[1] != nil && erin.firstFrom[4] != nil })
        guard onB.firstFrom[1] != nil, erin.firstFrom[4] != nil else { throw LoadError("before the kill: the talkers were not heard") }

        let killed = MonoClock.now()
        kill(bench.nodes[0].pid, SIGKILL)
        bench.gone(0)
        bench.talkers = []
        bench.listeners = [onB]
        let wait = Double((result.heartbeatTimeout ?? 5) + 15)
        guard try await bench.awaitEvent(from: "b", room: room, type: "node_lost", seconds: wait, where: { $0["node"] as? String == "a" }) != nil else {
            return
        }
        result.nodeLostSeconds = (MonoClock.now() - killed).seconds
        // The talker rejoins where the survivor places it (it takes the home over), as a signaling server would.
        let placed = try await bench.place(room: room, "alice-2", asking: 1)
        if placed.reason == "home_taken_over" { result.takeOverSeconds = (MonoClock.now() - killed).seconds }
        try await bench.create(placed.node, room: room)
        bench.talkers = [(try await bench.join(placed.node, room: room, "alice-2", publish: true), 2)]
        try await bench.pump(for: 10, until: { onB.firstFrom[2] != nil })
        if let t = onB.firstFrom[2] { result.mediaBackSeconds = (t - killed).seconds }

        // The room only a hosted: its node_lost came with the other's; both rejoin on the survivor.
        guard try await bench.awaitEvent(from: "b", room: solo, type: "node_lost", seconds: 5, where: { $0["node"] as? String == "a" }) != nil else {
            return
        }
        let node = try await bench.place(room: solo, "dave-2", asking: 1).node
        try await bench.create(node, room: solo)
        let dave2 = try await bench.join(node, room: solo, "dave-2", publish: true)
        let erin2 = Listener(try await bench.join(try await bench.place(room: solo, "erin-2", asking: 1).node, room: solo, "erin-2", publish: false))
        bench.listeners = [onB, erin2]
        bench.talkers.append((dave2, 5))
        try await bench.pump(for: 10, until: { erin2.firstFrom[5] != nil })
        if let t = erin2.firstFrom[5] { result.mediaBackNewNodeSeconds = (t - killed).seconds }
    }
}
