import SFU

/// When each of a worker's rooms next needs `tick`, and which rooms may have events, kept so that a pass of
/// the worker costs what it touched, not the number of rooms it holds. Without it every pass (each batch of
/// datagrams, each command) asked every room for its deadline and its events: a worker holding 10,000 idle
/// rooms spent ~1 ms per API call doing so, and a busy one as much per batch of datagrams.
///
/// A room's deadline and events change only when something reaches it (a datagram, a command, a tick, a
/// transport event), and every such path goes through `WorkerCore`, which calls `touch`. The touched rooms'
/// deadlines are read again before the next deadline is given out; the others cannot have moved. Deadlines
/// sit in a binary min-heap with lazy deletion: an entry whose time is no longer its room's deadline is
/// skipped when it reaches the top, and the heap is rebuilt when stale entries outnumber the rooms. Debug
/// builds check the answer against a scan of every room on every call.
struct RoomSchedule {
    private struct Entry {
        var at: MonoTime
        var room: Room
    }

    private var heap: [Entry] = []
    /// Each live room's deadline as last read.
    private var deadlines: [ObjectIdentifier: MonoTime] = [:]
    /// Rooms reached since their deadline was last read (a room may appear more than once).
    private var touched: [Room] = []
    /// Rooms reached since `poll` last looked for events.
    private var eventful: [Room] = []

    mutating func add(_ room: Room) {
        deadlines[ObjectIdentifier(room)] = .never
        touch(room)
    }

    mutating func remove(_ room: Room) {
        deadlines[ObjectIdentifier(room)] = nil
        touched.removeAll { $0 === room }
        eventful.removeAll { $0 === room }
    }

    /// The room may have a new deadline or new events. Called per datagram: no allocation once the lists
    /// have grown to a pass's size, and a run of datagrams for one room adds it once.
    @inline(__always) mutating func touch(_ room: Room) {
        if touched.last !== room { touched.append(room) }
        if eventful.last !== room { eventful.append(room) }
        if eventful.count >= 4096 { compact() }
    }

    /// A driver that feeds many datagrams between two looks (a test, a benchmark) keeps the lists bounded:
    /// deadlines are read now, and each room stays on the events list once.
    private mutating func compact() {
        refresh()
        var seen = Set<ObjectIdentifier>()
        eventful.removeAll { !seen.insert(ObjectIdentifier($0)).inserted }
    }

    /// The earliest room deadline; `.never` when no room has one.
    mutating func next() -> MonoTime {
        refresh()
        while let top = heap.first, deadlines[ObjectIdentifier(top.room)] != top.at { pop() }
        return heap.first?.at ?? .never
    }

    /// Rooms whose deadline is at or before `now`, each once; each is touched (its tick moves its deadline).
    mutating func due(at now: MonoTime, into rooms: inout [Room]) {
        refresh()
        while let top = heap.first, top.at <= now {
            pop()
            let id = ObjectIdentifier(top.room)
            guard deadlines[id] == top.at else { continue }
            deadlines[id] = .never  // read again once its tick has run
            rooms.append(top.room)
            touch(top.room)
        }
    }

    /// The next room that may have events, taken off the list; nil when every reached room was looked at.
    mutating func nextEventful() -> Room? { eventful.popLast() }

    var mayHaveEvents: [Room] { eventful }

    private mutating func refresh() {
        guard !touched.isEmpty else { return }
        defer { touched.removeAll(keepingCapacity: true) }
        for room in touched {
            let id = ObjectIdentifier(room)
            guard let before = deadlines[id] else { continue }  // removed meanwhile
            let now = room.nextDeadline
            guard now != before else { continue }
            deadlines[id] = now
            if now != .never { push(Entry(at: now, room: room)) }
        }
        if heap.count > 2 * deadlines.count + 64 { rebuild() }
    }

    private mutating func rebuild() {
        var seen = Set<ObjectIdentifier>(minimumCapacity: deadlines.count)
        let old = heap
        heap = []
        heap.reserveCapacity(deadlines.count)
        for e in old {
            let id = ObjectIdentifier(e.room)
            if deadlines[id] == e.at, seen.insert(id).inserted { push(e) }
        }
    }

    private mutating func push(_ e: Entry) {
        heap.append(e)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].at < heap[parent].at else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func pop() {
        let last = heap.count - 1
        heap.swapAt(0, last)
        heap.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < heap.count, heap[l].at < heap[m].at { m = l }
            if r < heap.count, heap[r].at < heap[m].at { m = r }
            guard m != i else { return }
            heap.swapAt(i, m)
            i = m
        }
    }
}
