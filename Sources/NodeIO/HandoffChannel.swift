import SFU
import Synchronization

/// A single-producer, single-consumer ring of batch references: one worker thread pushes, one pops, and
/// neither waits for the other (no lock). Positions only grow; a slot is written by the producer before it
/// publishes the new tail and cleared by the consumer before it publishes the new head. The tail is
/// published and read sequentially consistent, so a consumer that says it is going to sleep and then finds
/// the ring empty, and a producer that pushed and then reads that flag, cannot both miss each other
/// (`Worker.nudge`).
final class BatchRing: @unchecked Sendable {
    private let slots: UnsafeMutablePointer<DatagramBatch?>
    private let mask: Int
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)

    /// `capacity` is rounded up to a power of two.
    init(capacity: Int) {
        var n = 1
        while n < capacity { n <<= 1 }
        mask = n - 1
        slots = .allocate(capacity: n)
        slots.initialize(repeating: nil, count: n)
    }

    deinit {
        slots.deinitialize(count: mask + 1)
        slots.deallocate()
    }

    /// Producer only. False when the ring is full.
    func push(_ batch: DatagramBatch) -> Bool {
        let t = tail.load(ordering: .relaxed)
        guard t - head.load(ordering: .acquiring) <= mask else { return false }
        slots[t & mask] = batch
        tail.store(t + 1, ordering: .sequentiallyConsistent)
        return true
    }

    /// Consumer only.
    func pop() -> DatagramBatch? {
        let h = head.load(ordering: .relaxed)
        guard h != tail.load(ordering: .sequentiallyConsistent) else { return nil }
        let batch = slots[h & mask]
        slots[h & mask] = nil
        head.store(h + 1, ordering: .releasing)
        return batch
    }

    /// Consumer only: nothing to pop.
    var isEmpty: Bool { head.load(ordering: .relaxed) == tail.load(ordering: .sequentiallyConsistent) }
}

/// The way one worker hands batches of one kind to another: full batches go forward, emptied ones come back,
/// so a pool of `poolSize` batches circulates and nothing is allocated once it is made (lazily, by the
/// producer, as its handoff first needs a spare).
final class HandoffChannel: @unchecked Sendable {
    let from: Int
    let to: Int
    let kind: Handoff.Kind
    let full: BatchRing
    let free: BatchRing
    /// Batches in circulation besides the one the producer's core writes into.
    static let poolSize = 4
    /// Producer only.
    private var made = 0

    init(from: Int, to: Int, kind: Handoff.Kind) {
        self.from = from
        self.to = to
        self.kind = kind
        full = BatchRing(capacity: Self.poolSize + 1)
        free = BatchRing(capacity: Self.poolSize + 1)
    }

    /// Producer only: an empty batch to write into next, nil while the consumer holds them all.
    func takeEmpty(capacity: Int) -> DatagramBatch? {
        if let b = free.pop() { return b }
        guard made < Self.poolSize else { return nil }
        made += 1
        return DatagramBatch(capacity: capacity)
    }
}
