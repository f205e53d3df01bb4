import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// One soak cycle's session changes: in each room one participant (p1) makes one change, rotating with the
/// cycle so that every change happens in every cycle (with four rooms or more): renegotiate, restart ICE,
/// replace, vanish. Made through the control API like a signaling server would, and checked at the end of
/// the talk: the node's answer said so, and the client still receives (and, after an ICE restart, has had
/// a check answered under the new credentials).
struct SessionChanges {
    let cycle: Int
    let rooms: Int
    let participants: Int
    let enabled: Bool
    private(set) var results: [Soak.SessionChange: (made: Int, ok: Int)] = [:]
    var failures: [String] = []
    /// Transports of vanished participants (publish and subscribe each), whose consent must expire.
    private(set) var vanishedTransports = 0
    private var pending: [(change: Soak.SessionChange, room: Int, client: LoadClient, old: LoadClient?)] = []

    init(cycle: Int, rooms: Int, participants: Int, enabled: Bool) {
        self.cycle = cycle
        self.rooms = rooms
        self.participants = participants
        self.enabled = enabled
    }

    /// The participant of each room that makes the change.
    var who: Int { participants > 1 ? 1 : 0 }

    /// The rooms whose participant makes `change` this cycle.
    func rooms(_ change: Soak.SessionChange) -> [Int] {
        guard enabled, participants > 0, let k = Soak.SessionChange.allCases.firstIndex(of: change) else { return [] }
        return (0..<rooms).filter { (cycle + $0) % Soak.SessionChange.allCases.count == k }
    }

    mutating func record(_ change: Soak.SessionChange, ok: Int) {
        results[change, default: (0, 0)].ok += ok
    }

    /// The vanishing participants stop everything (no goodbye), before the talk starts.
    mutating func vanish(publishers: [[LoadClient]], subscribers: [[LoadClient]]) {
        for r in rooms(.vanish) {
            publishers[r][who].vanish()
            subscribers[r][who].vanish()
            vanishedTransports += 2
            results[.vanish, default: (0, 0)].made += 1
        }
    }

    /// Renegotiates, restarts ICE and replaces; returns the replacement clients (to be polled from now on).
    mutating func apply(_ soak: Soak, publishers: [[LoadClient]], subscribers: [[LoadClient]]) async throws -> [LoadClient] {
        let p = who
        let now = { MonoClock.now() }
        func offer(_ r: Int, _ direction: String, _ sdp: String) async throws -> (change: String, sdp: String?) {
            let reply = try await soak.api.call("POST", "v1/rooms/soak-\(cycle)-\(r)/participants/p\(p)/\(direction)", ["sdp": sdp])
            return (reply.json["change"] as? String ?? "\(reply.status)/\(reply.result ?? -1)", reply.json["sdp"] as? String)
        }
        for r in rooms(.renegotiate) {
            let sub = subscribers[r][p]
            let slots = max(1, soak.plan.audioSlots + (cycle % 2 == 0 ? 1 : -1))
            results[.renegotiate, default: (0, 0)].made += 1
            let a = try await offer(r, "subscribe", sub.offer(profile: .subscriber(audio: slots)))
            guard a.change == "renegotiated", let sdp = a.sdp else { failures.append("room \(r): a new slot count was answered '\(a.change)'"); continue }
            try sub.update(answer: sdp, now: now())
            pending.append((.renegotiate, r, sub, nil))
        }
        for r in rooms(.restartICE) {
            results[.restartICE, default: (0, 0)].made += 1
            var ok = true
            for (client, direction) in [(publishers[r][p], "publish"), (subscribers[r][p], "subscribe")] {
                let a = try await offer(r, direction, client.offer(restartICE: true))
                guard a.change == "iceRestarted", let sdp = a.sdp else {
                    failures.append("room \(r): new ICE credentials on \(direction) were answered '\(a.change)'")
                    ok = false
                    continue
                }
                try client.update(answer: sdp, now: now())
            }
            if ok {
                pending.append((.restartICE, r, subscribers[r][p], nil))
                pending.append((.restartICE, r, publishers[r][p], nil))
            }
        }
        var fresh: [LoadClient] = []
        for r in rooms(.replace) {
            let old = subscribers[r][p]
            let sub = try LoadClient(certificate: soak.replacementCertificate, profile: old.profile)
            sub.consentInterval = old.consentInterval
            results[.replace, default: (0, 0)].made += 1
            let a = try await offer(r, "subscribe", sub.offer())
            guard a.change == "replaced", let sdp = a.sdp else { failures.append("room \(r): a new fingerprint was answered '\(a.change)'"); continue }
            try sub.start(answer: sdp, now: now())
            fresh.append(sub)
            pending.append((.replace, r, sub, old))
        }
        return fresh
    }

    /// At the end of the talk: `receivedSince` says what a client received in the last second.
    mutating func verify(receivedSince: (LoadClient) -> Int) {
        var ok: [Soak.SessionChange: [Int: Bool]] = [:]
        for item in pending {
            var problems: [String] = []
            if !item.client.publishes, receivedSince(item.client) == 0 { problems.append("received nothing in the last second") }
            if item.client.state != .connected { problems.append("is \(item.client.state)") }
            if item.change == .restartICE, item.client.checksSucceededSinceRestart == 0 { problems.append("had no check answered under its new ICE credentials") }
            if item.change == .replace, let old = item.old, old.state != .closed { problems.append("left the replaced transport \(old.state) (no close_notify)") }
            if !problems.isEmpty {
                failures.append("room \(item.room): after '\(item.change.rawValue)' the \(item.client.publishes ? "publisher" : "subscriber") " + problems.joined(separator: ", "))
            }
            ok[item.change, default: [:]][item.room] = (ok[item.change]?[item.room] ?? true) && problems.isEmpty
        }
        for (change, byRoom) in ok { record(change, ok: byRoom.values.filter { $0 }.count) }
    }
}
