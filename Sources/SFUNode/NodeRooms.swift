import NodeIO
import SFU
import SFUBase
import Synchronization

/// The node's workers and which of them holds each room: the one place that maps a room's name to its worker.
/// Every call on a room runs there, through the worker's command queue (`withRoom`, `withCore`). The node
/// places and forgets rooms; its features that act on rooms (recording, live streaming) reach them through
/// this, not through the node.
public final class NodeRooms: Sendable {
    public let workers: [Worker]
    private let placement = Mutex<[String: Int]>([:])

    init(workers: [Worker]) { self.workers = workers }

    public var names: [String] { placement.withLock { $0.keys.sorted() } }

    func index(of room: String) -> Int? { placement.withLock { $0[room] } }

    func worker(of room: String) -> Worker? { index(of: room).map { workers[$0] } }

    /// Takes `name` for a new room on the worker with the fewest rooms: 409 6009 when it exists, 503 6018 while
    /// the node drains, the `rooms` limit past `limit` rooms.
    func reserve(_ name: String, limit: Int, draining: Bool) throws -> Int {
        try placement.withLock { p in
            guard p[name] == nil else { throw APIError(.conflict, code: 6009, "room \(name) already exists") }
            guard !draining else { throw APIError(.serviceUnavailable, code: 6018, "the node is draining: no new rooms") }
            guard p.count < limit else { throw RoomError(.limitReached, .conflict, "the node holds \(limit) rooms, its limit", limit: "rooms") }
            var load = [Int](repeating: 0, count: workers.count)
            for w in p.values { load[w] += 1 }
            let i = load.indices.min { load[$0] < load[$1] }!
            p[name] = i
            return i
        }
    }

    func forget(_ name: String) { _ = placement.withLock { $0.removeValue(forKey: name) } }

    /// Runs `body` on the room's worker with the room, the worker's core (for its batch) and the time.
    public func withRoom<T: Sendable>(_ name: String, _ body: @escaping @Sendable (Room, WorkerCore, MonoTime) throws -> T) async throws -> T {
        try await withCore(of: name) { core, now in
            guard let room = core.room(name) else { throw APIError(.notFound, code: 6008, "no room \(name)") }
            return try body(room, core, now)
        }
    }

    /// Runs `body` on the worker core of `room`'s worker (an operation that closes transports as well).
    public func withCore<T: Sendable>(of room: String, _ body: @escaping @Sendable (WorkerCore, MonoTime) throws -> T) async throws -> T {
        guard let worker = worker(of: room) else { throw APIError(.notFound, code: 6008, "no room \(room)") }
        return try await worker.perform(body)
    }
}
