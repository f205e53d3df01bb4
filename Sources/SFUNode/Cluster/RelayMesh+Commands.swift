import SFU
import SFUBase

/// Moderator commands of a room that spans nodes (docs/cluster.md, "Moderation room-wide"): the room's home
/// decides every one, wherever it was issued. A node that is not the home hands a command to the home on the
/// pair's channel (`command`) and waits for the home's `result`, which carries the room's moderation after
/// it; the node applies that state before it answers its caller, so the caller's next read here sees what
/// it did. The home runs the command like its own API would (`Room.moderate`): the issuer and the target are
/// in its room, because every node tells the others who is in the room (`streams` with `members`).
extension RelayMesh {
    /// How long a node waits for the home's answer before it answers its caller 503 (6022).
    static let commandWithin: Duration = .seconds(3)
    /// Commands waiting for an answer at once, at most (more are refused 503 at once).
    static let maxAwaiting = 256

    struct AwaitedResult {
        let room: String
        let home: String
        let continuation: CheckedContinuation<(RelayCommandError?, ModerationState?), Never>
    }

    /// Hands `command` to the home of `room` and answers what it decided; nil when this node decides itself:
    /// it is the home, or the room spans no other node, or the relay to the home is not up yet (the command
    /// then applies here, and the home's next state wins, as before the home was known).
    func forward(room: String, by: String, _ command: ModerationCommand) async throws -> ModerationOutcome? {
        guard let home = spans[room]?.home, home != nodeID, let channel = channels[home],
              ends[EndKey(room: room, peer: home)]?.keyed == true else { return nil }
        guard awaiting.count < Self.maxAwaiting else {
            throw APIError(.serviceUnavailable, code: 6022, "\(awaiting.count) commands wait for their rooms' homes; retry")
        }
        // Who is in the room here goes first on the channel, so the home knows the issuer and the target.
        await push(EndKey(room: room, peer: home))
        let request = nextRequest
        nextRequest += 1
        let (error, state) = await withCheckedContinuation { (c: CheckedContinuation<(RelayCommandError?, ModerationState?), Never>) in
            awaiting[request] = AwaitedResult(room: room, home: home, continuation: c)
            channel.send(.command(room: room, request: request, by: by, command))
            Task {
                try? await Task.sleep(for: Self.commandWithin)
                self.answered(request, from: home, error: RelayCommandError(code: 6022, kind: .unavailable,
                                                                                  message: "the room's home node \(home) did not answer"), state: nil)
            }
        }
        let outcome = try await node.withRoom(room) { r, core, now in
            if let state { r.applyModeration(state, now: now, into: core.batch) }
            return r.moderationOutcome
        }
        if let error { throw error.apiError }
        return outcome
    }

    /// The home's answer to `request` (or its stand-in: the wait ran out, the channel closed). An answer
    /// from another node than the one asked, or to a request no longer awaited, is ignored.
    func answered(_ request: UInt64, from peer: String, error: RelayCommandError?, state: ModerationState?) {
        guard let a = awaiting[request], a.home == peer else { return }
        awaiting[request] = nil
        a.continuation.resume(returning: (error, state))
    }

    /// The channel to `peer` closed: the commands it carried get no answer.
    func giveUp(on peer: String) {
        for (request, a) in awaiting where a.home == peer {
            answered(request, from: peer, error: RelayCommandError(code: 6022, kind: .unavailable, message: "the channel to the room's home node \(peer) closed"), state: nil)
        }
    }

    /// A command another node of `room` forwarded: decided here when this node is the room's home, and
    /// answered with the room's moderation after it (also when refused: the sender's view catches up).
    func decide(room: String, request: UInt64, by: String, _ command: ModerationCommand, from channel: RelayChannel) async {
        // Only from a node of the room: one that holds a relay of it with this node.
        guard spans[room]?.home == nodeID, ends[EndKey(room: room, peer: channel.peer)]?.keyed == true else {
            let e = RelayCommandError(code: 6022, kind: .unavailable, message: "\(nodeID) is not the home of room \(room) for \(channel.peer)")
            channel.send(.result(room: room, request: request, error: e, state: nil))
            return
        }
        let result: (RelayCommandError?, ModerationState?)
        do {
            result = try await node.withRoom(room) { r, core, now in
                do throws(RoomError) {
                    try r.moderate(command, by: by, now: now, into: core.batch)
                    return (nil, r.moderationState)
                } catch {
                    return (RelayCommandError(error), r.moderationState)
                }
            }
        } catch {
            result = (RelayCommandError(code: 6022, kind: .unavailable, message: "room \(room) could not be reached here: \(APIError.from(error).message)"), nil)
        }
        channel.send(.result(room: room, request: request, error: result.0, state: result.1))
        // The other nodes of the room get the new state now, not at the next pass.
        await nudge([room])
    }
}
