import Foundation
import SFUClient

extension SignalingServer {
    /// The room as its browsers' nodes see it (roles, mute states, pins, floor) to every browser in it: each
    /// node's own state, with the participants of all of them (a participant as its own node describes it).
    func sendRoster(_ room: String) async {
        var nodes: [String: (ControlClient, Set<String>)] = [:]
        for b in browsers.values where b.room == room { nodes[b.nodeID, default: (b.node, [])].1.insert(b.participant) }
        var states: [String: [String: Any]] = [:]
        for (id, (client, _)) in nodes {
            if let state = try? await client.require("GET", "v1/rooms/\(room)") { states[id] = state.json }
        }
        guard !states.isEmpty else { return }
        var everyone: [String: [String: Any]] = [:]
        for (id, state) in states {
            for p in state["participants"] as? [[String: Any]] ?? [] {
                guard let pid = p["participant"] as? String else { continue }
                // A participant placed by this server is described by its own node; anyone else by any node.
                if let own = browsers[pid], own.nodeID != id { continue }
                if everyone[pid] == nil || browsers[pid]?.nodeID == id { everyone[pid] = p }
            }
        }
        let participants = everyone.keys.sorted().compactMap { everyone[$0] }
        // One waiting to be let into a knock-enabled room learns nothing of the room (it gets its roster once in).
        for b in browsers.values where b.room == room && !b.awaited {
            guard var state = states[b.nodeID] ?? states.values.first else { continue }
            state["participants"] = participants
            b.outbox.yield(Self.text(["type": "roster", "room": state]))
        }
    }

    static func text(_ object: [String: Any]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8), as: UTF8.self)
    }
}
