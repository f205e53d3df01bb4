import SFU
import SFUBase

/// Moderator commands of a room that spans nodes (docs/cluster.md, "Moderation room-wide"): the room's home
/// decides every one, wherever it was issued. A node that is not the home hands a command to the home on the
/// pair's channel (`command`) and waits for the home's `result`, which carries the room's moderation after
/// it; the node applies that state before it answers its caller, so the caller's next read here sees what
/// it did. The home runs the command like its own API would (`RoomModeration.moderate`): the issuer and the target are
/// in its room, because every node tells the others who is in the room (`streams` with `members`).
extension RelayMesh: RoomsElsewhere {
    /// How long a node waits for the home's answer before it answers its caller 503 (6022).
    static let commandWithin: Duration = .seconds(3)
    /// Commands waiting for an answer at once, at most (more are refused 503 at once).
    static let maxAwaiting = 256

    struct Answer {
        var error: RelayCommandError?
        var state: ModerationState?
        var closed: Int?
    }

    struct AwaitedResult {
        /// The node asked (the room's home, or a dropped participant's node): only its answer counts.
        let peer: String
        let continuation: CheckedContinuation<Answer, Never>
    }

    /// Hands `command` to the home of `room` and answers what it decided; nil when this node decides itself:
    /// it is the home, or the room spans no other node, or the relay to the home is not up yet (the command
    /// then applies here, and the home's next state wins, as before the home was known).
    func forward(room: String, by: String, _ command: ModerationCommand) async throws -> ModerationOutcome? {
        guard let home = spans[room]?.home, home != nodeID, let channel = channels[home],
              ends[EndKey(room: room, peer: home)]?.keyed == true else { return nil }
        // Who is in the room here goes first on the channel, so the home knows the issuer and the target.
        await push(EndKey(room: room, peer: home))
        guard channels[home] === channel else {
            throw APIError(.serviceUnavailable, code: 6022, "the channel to the room's home node \(home) closed; retry")
        }
        let answer = try await ask(home, on: channel) { .command(room: room, request: $0, by: by, command) }
        let outcome = try await node.withRoom(room) { r, core, now in
            if let state = answer.state { r.home.applyModeration(state, now: now, into: core.batch) }
            return r.moderationOutcome
        }
        if let error = answer.error { throw error.apiError }
        return outcome
    }

    /// Removes another node's participant through that node (its own removes it, closes its connections and
    /// tells the others it left); nil when `participant` is this node's own or not in the room here.
    func drop(room: String, participant: String, by: String?) async throws -> Int? {
        guard let origin = try await node.withRoom(room, { r, _, _ in r.relays.origin(of: participant) }) else { return nil }
        guard let channel = channels[origin], ends[EndKey(room: room, peer: origin)]?.keyed == true else {
            throw APIError(.serviceUnavailable, code: 6022, "\(participant) is on node \(origin), which this node cannot reach now; retry")
        }
        let answer = try await ask(origin, on: channel) { .drop(room: room, request: $0, participant: participant, by: by) }
        if let error = answer.error { throw error.apiError }
        return answer.closed ?? 0
    }

    /// Sends what `message` makes of a new request number to `peer` and waits for its `result` (or the
    /// stand-in for one: the wait ran out, the channel closed).
    private func ask(_ peer: String, on channel: RelayChannel, _ message: (UInt64) -> RelayMessage) async throws -> Answer {
        guard awaiting.count < Self.maxAwaiting else {
            throw APIError(.serviceUnavailable, code: 6022, "\(awaiting.count) requests wait for other nodes; retry")
        }
        let request = nextRequest
        nextRequest += 1
        let sent = message(request)
        return await withCheckedContinuation { (c: CheckedContinuation<Answer, Never>) in
            awaiting[request] = AwaitedResult(peer: peer, continuation: c)
            channel.send(sent)
            Task {
                try? await Task.sleep(for: Self.commandWithin)
                self.answered(request, from: peer, Answer(error: RelayCommandError(code: 6022, kind: .unavailable, message: "node \(peer) did not answer")))
            }
        }
    }

    /// The answer to `request` (or its stand-in). An answer from another node than the one asked, or to a
    /// request no longer awaited, is ignored: each continuation is resumed once.
    func answered(_ request: UInt64, from peer: String, _ answer: Answer) {
        guard let a = awaiting[request], a.peer == peer else { return }
        awaiting[request] = nil
        a.continuation.resume(returning: answer)
    }

    /// The channel to `peer` closed: the requests it carried get no answer.
    func giveUp(on peer: String) {
        for (request, a) in awaiting where a.peer == peer {
            answered(request, from: peer, Answer(error: RelayCommandError(code: 6022, kind: .unavailable, message: "the channel to node \(peer) closed")))
        }
    }

    /// A command another node of `room` forwarded: decided here when this node is the room's home, and
    /// answered with the room's moderation after it (also when refused: the sender's view catches up).
    func decide(room: String, request: UInt64, by: String, _ command: ModerationCommand, from channel: RelayChannel) async {
        // Only from a node of the room: one that holds a relay of it with this node.
        guard spans[room]?.home == nodeID, ends[EndKey(room: room, peer: channel.peer)]?.keyed == true else {
            let e = RelayCommandError(code: 6022, kind: .unavailable, message: "\(nodeID) is not the home of room \(room) for \(channel.peer)")
            channel.send(.result(room: room, request: request, error: e, state: nil, closed: nil))
            return
        }
        let result: (RelayCommandError?, ModerationState?)
        do {
            result = try await node.withRoom(room) { r, core, now in
                do throws(RoomError) {
                    try r.moderation.moderate(command, by: by, now: now, into: core.batch)
                    return (nil, r.home.moderationState)
                } catch {
                    return (RelayCommandError(error), r.home.moderationState)
                }
            }
        } catch {
            result = (RelayCommandError(code: 6022, kind: .unavailable, message: "room \(room) could not be reached here: \(APIError.from(error).message)"), nil)
        }
        channel.send(.result(room: room, request: request, error: result.0, state: result.1, closed: nil))
        // The other nodes of the room get the new state now, not at the next pass.
        await nudge([room])
    }

    /// A node of `room` asks this one to remove one of its own participants.
    func dropHere(room: String, request: UInt64, participant: String, by: String?, from channel: RelayChannel) async {
        var answer = Answer()
        if ends[EndKey(room: room, peer: channel.peer)]?.keyed != true {
            answer.error = RelayCommandError(code: 6022, kind: .unavailable, message: "\(channel.peer) holds no relay of room \(room) with \(nodeID)")
        } else {
            do {
                // Only one of this node's own: another node's copy here is that node's to remove.
                let origin = try await node.withRoom(room) { r, _, _ in (r.contains(participant: participant), r.relays.origin(of: participant)) }
                guard origin.0, origin.1 == nil else { throw RoomError(.undefinedClientIDs, .notFound, "\(participant) is not a participant of \(nodeID)") }
                answer.closed = try await node.removeHere(room: room, participant: participant, by: by)
            } catch {
                answer.error = RelayCommandError(APIError.from(error))
            }
        }
        channel.send(.result(room: room, request: request, error: answer.error, state: nil, closed: answer.closed))
        await nudge([room])
    }
}
