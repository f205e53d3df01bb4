import Foundation
import Logging
import SFU
import SFUCluster
import Synchronization

/// Moderation that outlives a room's home (issue 25; docs/cluster.md): for each room this node is the
/// registry's home of, it saves the room's moderation (`ModerationState`, JSON) whenever its version moves,
/// under the home's epoch; and when this node becomes a room's home with a newer epoch than the saved state's
/// (it took the room over from a node that died), it applies the saved state first - the lock, pins, room
/// mute, floor and the hard mutes of participants who rejoin here. Runs after each heartbeat, off the media
/// workers: it asks a room's worker for its state the way the control API does.
///
/// What is saved is at most one heartbeat (1 s) old: a command in the last second before the home died is lost.
final class HomeModeration: Sendable {
    let registry: any Registry
    let nodeID: String
    let node: Node
    let logger: Logger
    /// Rooms this node is home of: the epoch it is home at and the version it saved last.
    private let homes = Mutex([String: (epoch: Int64, saved: UInt64?)]())

    init(registry: any Registry, nodeID: String, node: Node, logger: Logger) {
        self.registry = registry
        self.nodeID = nodeID
        self.node = node
        self.logger = logger
    }

    func sync() async throws {
        let spans = try await registry.spans(of: nodeID)
        let hosted = Set(node.roomNames)
        let mine = spans.filter { $0.home == nodeID && hosted.contains($0.room) }
        homes.withLock { h in h = h.filter { room, _ in mine.contains { $0.room == room } } }
        for span in mine {
            do { try await sync(span) } catch let e as APIError where e.code == 6008 { continue }  // the room ended meanwhile
        }
    }

    private func sync(_ span: RoomSpan) async throws {
        let room = span.room
        if homes.withLock({ $0[room]?.epoch }) != span.epoch {
            homes.withLock { $0[room] = (span.epoch, nil) }
            if let saved = try await registry.moderation(of: room), saved.epoch < span.epoch {
                let state = try JSONDecoder().decode(ModerationState.self, from: Data(saved.state.utf8))
                let applied = try await node.withRoom(room) { r, core, now in r.takeOverModeration(state, now: now, into: core.batch) }
                logger.notice("took over the room's moderation from its last home", metadata: [
                    "room": "\(room)", "epoch": "\(span.epoch)", "from_epoch": "\(saved.epoch)", "version": "\(state.version)",
                    "applied": "\(applied)",
                ])
            }
        }
        let state = try await node.withRoom(room) { r, _, _ in r.moderationState }
        guard homes.withLock({ $0[room]?.saved }) != state.version else { return }
        let json = String(decoding: try JSONEncoder().encode(state), as: UTF8.self)
        _ = try await registry.saveModeration(room: room, epoch: span.epoch, version: Int64(clamping: state.version), state: json)
        homes.withLock { $0[room]?.saved = state.version }
    }
}
