import CNodeIO
import Dispatch
import Foundation
import SFU
import Synchronization

/// Commands from the control plane for one worker thread: closures queued under a lock, the thread woken
/// through its wake descriptor, each run at most once - by the worker, or never when it did not start it
/// within the caller's time limit (the caller then gets `WorkerTimeout` at once).
final class CommandQueue: @unchecked Sendable {
    private let pending = Mutex<[@Sendable (WorkerCore) -> Void]>([])
    private let wakeFD: Int32

    init(wakeFD: Int32) { self.wakeFD = wakeFD }

    func enqueue(_ command: @escaping @Sendable (WorkerCore) -> Void) {
        pending.withLock { $0.append(command) }
        sfu_wake_signal(wakeFD)
    }

    /// Runs what is queued on the calling (worker) thread; returns whether there was anything.
    func run(_ core: WorkerCore) -> Bool {
        let commands = pending.withLock { q -> [@Sendable (WorkerCore) -> Void] in
            defer { q.removeAll() }
            return q
        }
        for c in commands { c(core) }
        return !commands.isEmpty
    }
}

/// Decides once who answers a command: the worker that starts it, or the timeout that gives up on it.
final class CommandTicket: Sendable {
    private let taken = Atomic<Bool>(false)
    func claim() -> Bool { taken.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }
}

/// Room events on their way from a worker thread to the control plane: stamped with the wall-clock time they
/// were queued, in a bounded queue that counts what nobody drained in time, and an observer told after each
/// batch (so the control plane drains them then, instead of polling an idle node).
final class EventOutbox: @unchecked Sendable {
    let capacity: Int
    private let queue: Mutex<(events: [StampedEvent], dropped: Int)> = Mutex(([], 0))
    private let lost = Atomic<UInt64>(0)
    /// The observer in a class: a closure kept directly in the `Mutex` was wrapped in two more reabstraction
    /// thunks by every `withLock { $0 }` (an inout of function type in generic storage is converted in and out),
    /// so after a few hundred thousand event batches calling it went ~100,000 frames deep: each API call cost
    /// milliseconds, and the worker's stack would have overflowed.
    private final class Observer: Sendable {
        let call: @Sendable () -> Void
        init(_ call: @escaping @Sendable () -> Void) { self.call = call }
    }
    private let observer = Mutex<Observer?>(nil)

    init(capacity: Int) { self.capacity = capacity }

    var lostTotal: UInt64 { lost.load(ordering: .relaxed) }

    func observe(_ body: @escaping @Sendable () -> Void) {
        let o = Observer(body)
        observer.withLock { $0 = o }
    }

    /// Queues a room's events (worker thread); those past the capacity are counted lost.
    func publish(room: String, _ events: [RoomEvent]) {
        let time = Int64(Date().timeIntervalSince1970 * 1000)
        let dropped = queue.withLock { q -> Int in
            let before = q.dropped
            for e in events {
                if q.events.count < capacity {
                    q.events.append(StampedEvent(room: room, event: e, unixMilliseconds: time))
                } else {
                    q.dropped += 1
                }
            }
            return q.dropped - before
        }
        if dropped > 0 { lost.add(UInt64(dropped), ordering: .relaxed) }
        observer.withLock { $0 }?.call()
    }

    /// Events since the last call and how many were lost because nobody drained them in time.
    func drain() -> (events: [StampedEvent], dropped: Int) {
        queue.withLock { q in
            defer { q = ([], 0) }
            return q
        }
    }
}

/// One worker's links to the others (a room spread across cores): a channel per (worker, kind) each way,
/// through which full hand-off batches go and emptied ones come back, and the peers themselves, to deliver
/// messages to and to wake.
final class PeerLinks: @unchecked Sendable {
    /// The other workers, by index (this one's too).
    var peers: [Worker] = []
    /// Channels to each worker, by `to * 2 + kind` (send 0, receive 1), and those from every worker.
    private var outgoing: [HandoffChannel?] = []
    private(set) var incoming: [HandoffChannel] = []
    /// A hand-off could not be handed over at the last flush (its worker holds the whole pool).
    var blocked = false

    /// Joins the workers pairwise, both ways and for both kinds (once, before they start).
    static func connect(_ workers: [Worker]) {
        for w in workers {
            w.links.peers = workers
            w.links.outgoing = [HandoffChannel?](repeating: nil, count: workers.count * 2)
        }
        for from in workers {
            for to in workers where to !== from {
                for (k, kind) in [Handoff.Kind.send, .receive].enumerated() {
                    let ch = HandoffChannel(from: from.index, to: to.index, kind: kind)
                    from.links.outgoing[to.index * 2 + k] = ch
                    to.links.incoming.append(ch)
                }
            }
        }
    }

    func channel(to worker: Int, kind: Handoff.Kind) -> HandoffChannel? { outgoing[worker * 2 + (kind == .send ? 0 : 1)] }

    /// Something waits to be taken, or a hand-off that was blocked could now go (a peer returned a batch).
    var hasWork: Bool {
        incoming.contains { !$0.full.isEmpty } || (blocked && outgoing.contains { $0.map { !$0.free.isEmpty } ?? false })
    }

    /// Hands `h`'s batch to its worker and gives the core an empty one; while that worker holds every batch of
    /// the pool, the core keeps writing into this one (and the room counts what does not fit).
    func handOver(_ h: Handoff, now: MonoTime) {
        guard let ch = channel(to: h.worker, kind: h.kind), let empty = ch.takeEmpty(capacity: h.batch.capacity) else {
            blocked = true
            return
        }
        if h.kind == .send { h.batch.sent(at: now) }  // transport-wide send times: handed to the sender
        _ = ch.full.push(h.batch)
        h.batch = empty
        peers[h.worker].nudge()
    }
}

/// A room event with the wall-clock time the worker queued it (Unix milliseconds): the control plane
/// encodes and fans events out later, off the media thread.
public struct StampedEvent: Sendable {
    public var room: String
    public var event: RoomEvent
    public var unixMilliseconds: Int64

    public init(room: String, event: RoomEvent, unixMilliseconds: Int64) {
        self.room = room
        self.event = event
        self.unixMilliseconds = unixMilliseconds
    }
}
