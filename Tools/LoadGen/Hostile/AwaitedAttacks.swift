import Foundation
import SFUClient

/// Attacks by a participant waiting to be let into a knock-enabled room (issue 40).
enum AwaitedAttacks {
    /// 22. A participant awaited in a knock-enabled lecture room tries to take part before a moderator lets it
    /// in: it raises its hand, accepts an invitation, approves itself and locks the room; its moderator tries
    /// to pin it, promote it and grant or invite it to the floor. Each is refused with its code (5003, 5045,
    /// 5126, 5115) and none reaches the room: no raised hand, pin, role or floor event names it, and it still
    /// waits. Once let in, the same raised hand is taken.
    static let awaitedFloor = Attack(number: 22, name: "awaited participant") { ctx in
        var o = AttackOutcome()
        let room = "knock-\(Int.random(in: 0..<1_000_000))"
        try await ctx.api.require("POST", "v1/rooms", ["room": room, "mode": "lecture", "knock": true])
        ctx.createdRooms.append(room)
        try await ctx.admit(room, "mod", moderator: true)
        let mark = ctx.events.count
        try await ctx.admit(room, "waiter")
        let base = "v1/rooms/\(room)"
        let attempts: [(what: String, path: String, body: [String: Any], status: Int, code: Int)] = [
            ("raise hand", "\(base)/floor", ["by": "waiter", "action": "request"], 403, 5003),
            ("accept the floor", "\(base)/floor", ["by": "waiter", "action": "accept"], 403, 5003),
            ("approve itself", "\(base)/awaited/approve", ["by": "waiter", "participants": ["waiter"]], 403, 5003),
            ("lock the room", "\(base)/lock", ["by": "waiter", "locked": true], 403, 5115),
            ("granted the floor", "\(base)/floor", ["by": "mod", "action": "grant", "target": "waiter"], 404, 5045),
            ("invited to the floor", "\(base)/floor", ["by": "mod", "action": "invite", "target": "waiter"], 404, 5045),
            ("pinned", "\(base)/pins", ["by": "mod", "add": ["waiter"]], 404, 5126),
            ("promoted", "\(base)/participants/waiter/role", ["by": "mod", "role": "moderator"], 404, 5126),
        ]
        var refused = 0
        for a in attempts {
            let r = try await ctx.api.call("POST", a.path, a.body)
            if r.status == a.status && r.result == a.code { refused += 1 } else {
                o.fail("\(a.what): expected \(a.status)/\(a.code), got \(r.status)/\(r.result ?? -1) \(r.json["msg"] ?? "")")
            }
        }
        o.check(refused == attempts.count, "\(refused) attempts refused with their codes", "\(attempts.count - refused) attempts not refused")
        let state = try await ctx.api.require("GET", base).json
        let floor = state["floor"] as? [String: Any] ?? [:]
        let waiting = (state["awaited_participants"] as? [[String: Any]] ?? []).compactMap { $0["participant"] as? String }
        let roles = (state["participants"] as? [[String: Any]] ?? []).map { "\($0["participant"] ?? "")=\($0["role"] ?? "")" }
        o.check((floor["raised_hands"] as? [String] ?? []).isEmpty && (state["pinned"] as? [String] ?? []).isEmpty && waiting == ["waiter"]
                    && (state["locked"] as? Bool) == false && roles.contains("waiter=participant") && roles.contains("mod=moderator"),
                "nothing reached the room: waiter still waits", "the room changed: \(floor), pinned \(state["pinned"] ?? ""), waiting \(waiting), \(roles)")
        try await ctx.sleep(0.3)  // the events of the attempts, had there been any
        let named = ctx.events.all.dropFirst(mark).filter { e in
            e.room == room && ["floor", "pins", "role", "lock"].contains(e.type)
        }
        o.check(named.isEmpty, "no floor, pins, role or lock event", "events reached the room: \(named.map(\.type))")
        // Let in, the same hand is taken.
        let approved = try await ctx.api.call("POST", "\(base)/awaited/approve", ["by": "mod", "participants": ["waiter"]])
        o.check(approved.status == 200, "the moderator lets it in", "the moderator's approval got \(approved.status)/\(approved.result ?? -1)")
        let r = try await ctx.api.call("POST", "\(base)/floor", ["by": "waiter", "action": "request"])
        o.check(r.status == 200 && (r.json["raised_hands"] as? [String]) == ["waiter"], "let in, its hand is raised",
                "let in, its floor request got \(r.status)/\(r.result ?? -1)")
        o.counted.append("\(refused) refusals (5003, 5115, 5045, 5126)")
        await ctx.deleteRoom(room)
        return o
    }
}
