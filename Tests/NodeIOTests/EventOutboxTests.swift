import Foundation
@testable import NodeIO
import Synchronization
import Testing

/// The queue of room events between a worker and the control plane.
@Suite struct EventOutboxTests {
    @Test func theObserverCostsTheSameAfterHundredsOfThousandsOfBatches() {
        // Kept directly in a Mutex, the observer closure gained two reabstraction thunks per batch published,
        // so calling it went one frame deeper each time: a worker that had published a few hundred thousand
        // batches spent milliseconds per call and was heading for a stack overflow. Here the batches are
        // published on a thread with a 256 KiB stack, which that chain overflowed within ~10,000 batches.
        let outbox = EventOutbox(capacity: 10)
        let calls = Atomic<Int>(0)
        outbox.observe { calls.add(1, ordering: .relaxed) }
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            for _ in 0..<300_000 { outbox.publish(room: "r", []) }
            done.signal()
        }
        thread.stackSize = 256 * 1024
        thread.start()
        done.wait()
        #expect(calls.load(ordering: .relaxed) == 300_000)
    }
}
