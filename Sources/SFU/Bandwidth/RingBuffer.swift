/// A first-in first-out window in one buffer that wraps around, for the estimator's sliding windows (the
/// acknowledged packets of the last 500 ms, the last 20 delivered packets, the delay trend's last 20 points).
/// As Arrays those were appended to and trimmed with `removeFirst`, which moves every element left on each
/// feedback. Here both ends are O(1), and once the buffer has grown to the most the window ever held (it
/// doubles when full) no feedback allocates: transport-cc feedback arrives ~10 times a second per subscriber
/// and is handled on the media worker (issue 12).
struct RingBuffer<Element>: RandomAccessCollection {
    private var storage: [Element?]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int = 16) { storage = Array(repeating: nil, count: Swift.max(1, capacity)) }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    /// The `i`-th element from the oldest (0) to the newest (`count - 1`).
    subscript(i: Int) -> Element {
        precondition(i >= 0 && i < count, "ring index out of range")
        return storage[slot(i)]!
    }

    mutating func append(_ e: Element) {
        if count == storage.count { grow() }
        storage[slot(count)] = e
        count += 1
    }

    /// Removes and returns the oldest element.
    @discardableResult
    mutating func removeFirst() -> Element {
        precondition(count > 0, "removeFirst on an empty ring")
        let e = storage[head]!
        storage[head] = nil
        head = head + 1 == storage.count ? 0 : head + 1
        count -= 1
        return e
    }

    /// Removes, in place, every element that matches, keeping the others in order.
    mutating func removeAll(where remove: (Element) -> Bool) {
        var kept = 0
        for i in 0..<count {
            let e = self[i]
            if remove(e) { continue }
            storage[slot(kept)] = e
            kept += 1
        }
        for i in kept..<count { storage[slot(i)] = nil }
        count = kept
    }

    /// Empties the ring, keeping its buffer.
    mutating func removeAll() {
        for i in 0..<count { storage[slot(i)] = nil }
        head = 0
        count = 0
    }

    private func slot(_ i: Int) -> Int {
        let j = head + i
        return j >= storage.count ? j - storage.count : j
    }

    private mutating func grow() {
        var bigger = [Element?](repeating: nil, count: storage.count * 2)
        for i in 0..<count { bigger[i] = storage[slot(i)] }
        storage = bigger
        head = 0
    }
}

extension RingBuffer: Sendable where Element: Sendable {}
