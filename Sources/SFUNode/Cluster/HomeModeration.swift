import Foundation
import Logging
import SFU
import SFUCluster
import Synchronization

/// Moderation that outlives a room's home (issue 25; docs/cluster.md): for each room this node is the
/// registry's home of, it saves the room's moderation (`ModerationState`, JSON) whenever its version moves,
/// under the home's epoch; and when this node is a room's home at a newer epoch than the saved state's (it took
/// the room over from a node that died), it applies the saved state to its room (`RoomHome.takeOverModeration`):
/// as the room is created here (`adopt`, from the control API, before anyone is admitted), else at the next
/// pass. Its own loop, once a second, apart from the heartbeat: a slow registry or many rooms must not delay
/// the heartbeat that keeps the node alive. It asks a room's worker for its state the way the control API does.
///
/// What is saved is at most a second old: a command in the last second before the home died is lost.
final class HomeModeration: Sendable {
    let registry: any Registry
    let nodeID: String
    let node: Node
    let logger: Logger
    /// Rooms this node is home of: the epoch it took them at and the version it saved last.
    private let homes = Mutex([String: (epoch: Int64, saved: UInt64?)]())

    init(registry: any Registry, nodeID: String, node: Node, logger: Logger) {
        self.registry = registry
        self.nodeID = nodeID
        self.node = node
        self.logger = logger
    }

    /// Every second until cancelled; `fenced` says whether the node may act as a home now.
    func run(fenced: @escaping @Sendable () -> Bool) async {
        while !Task.isCancelled {
            if !fenced() {
                do { try await sync() } catch is CancellationError { return } catch {
                    logger.warning("could not save or load the moderation of rooms this node is home of", metadata: ["error": "\(error)"])
                }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// One pass over the rooms this node hosts and is home of; a room whose pass fails is logged and left to
    /// the next one.
    func sync() async throws {
        let spans = try await registry.spans(of: nodeID)
        let hosted = Set(node.roomNames)
        let mine = spans.filter { $0.home == nodeID && hosted.contains($0.room) }
        // A room this node was home of and no longer hosts ended here: its saved state ends with it (a room of
        // the same name created again at the same epoch starts afresh). One it hosts but is no longer home of
        // was taken over by another node: that node's saves win by their epoch.
        // A room it took over but whose hosts row the registry does not show yet (a heartbeat between the
        // placement and the room's creation removes it until the next) stays: forgotten, it would be taken
        // over a second time, undoing what the room did since.
        let elsewhere = Set(spans.filter { $0.home != nodeID }.map(\.room))
        let ended = homes.withLock { h -> [(String, Int64)] in
            let gone = h.filter { room, _ in !hosted.contains(room) }.map { ($0.key, $0.value.epoch) }
            h = h.filter { room, _ in hosted.contains(room) && !elsewhere.contains(room) }
            return gone
        }
        for (room, epoch) in ended { _ = try? await registry.forgetModeration(room: room, epoch: epoch) }
        for span in mine {
            do {
                try await sync(span)
            } catch is CancellationError {
                throw CancellationError()
            } catch let e as APIError where e.code == 6008 {
                continue  // the room ended meanwhile
            } catch {
                logger.warning("moderation of a room not saved", metadata: ["room": "\(span.room)", "error": "\(error)"])
            }
        }
    }

    /// The control API created `room` here: if this node is its home at a newer epoch than its saved state's,
    /// the state applies before anyone is admitted (a locked room stays locked to newcomers from the start).
    func adopt(room: String) async throws {
        guard let home = try await registry.home(of: room), home.node == nodeID else { return }
        try await takeOver(room, epoch: home.epoch)
    }

    private func sync(_ span: RoomSpan) async throws {
        let room = span.room
        if homes.withLock({ $0[room]?.epoch }) != span.epoch { try await takeOver(room, epoch: span.epoch) }
        let state = try await node.withRoom(room) { r, _, _ in r.home.moderationState }
        guard homes.withLock({ $0[room]?.saved }) != state.version else { return }
        let json = String(decoding: try JSONEncoder().encode(state), as: UTF8.self)
        _ = try await registry.saveModeration(room: room, epoch: span.epoch, version: Int64(clamping: state.version), state: json)
        homes.withLock { $0[room]?.saved = state.version }
    }

    /// Applies the saved state when it is from an older epoch; the epoch counts as taken only once that
    /// succeeded (an error leaves it to the next pass, which must not save over the dead home's state first).
    private func takeOver(_ room: String, epoch: Int64) async throws {
        if homes.withLock({ $0[room]?.epoch }) == epoch { return }
        if let saved = try await registry.moderation(of: room), saved.epoch < epoch {
            let state = try JSONDecoder().decode(ModerationState.self, from: Data(saved.state.utf8))
            try Check.moderation(state)  // bounded like a peer's: the registry is another process's writing
            try await node.withRoom(room) { r, core, now in r.home.takeOverModeration(state, epoch: epoch, now: now, into: core.batch) }
            logger.notice("took over the room's moderation from its last home", metadata: [
                "room": "\(room)", "epoch": "\(epoch)", "from_epoch": "\(saved.epoch)", "version": "\(state.version)",
            ])
        } else {
            try await node.withRoom(room) { r, _, _ in r.home.epoch = epoch }
        }
        homes.withLock { $0[room] = (epoch, nil) }
    }
}
