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
/// skipped when it reaches the top, and the heap is rebuilt when stale entries outnumber the rooms. What the
/// schedule knows of a room it keeps on the room (`SchedulerMarks`): a touch per datagram is two flag checks,
/// no lookup, and each list holds a room once. Debug builds check the answer against a scan of every room.
struct RoomSchedule {
    private struct Entry {
        var at: MonoTime
        var room: Room
    }

    private var heap: [Entry] = []
    private var rooms = 0
    /// Rooms reached since their deadline was last read, each once.
    private var touched: [Room] = []
    /// Rooms reached since `poll` last looked for events, each once.
    private var eventful: [Room] = []

    mutating func add(_ room: Room) {
        room.schedulerMarks = SchedulerMarks()
        room.schedulerMarks.scheduled = true
        rooms += 1
        touch(room)
    }

    mutating func remove(_ room: Room) {
        guard room.schedulerMarks.scheduled else { return }
        rooms -= 1
        if room.schedulerMarks.listedForDeadline { touched.removeAll { $0 === room } }
        if room.schedulerMarks.listedForEvents { eventful.removeAll { $0 === room } }
        room.schedulerMarks = SchedulerMarks()  // its heap entries are stale from now on
    }

    /// The room may have a new deadline or new events (called per datagram).
    @inline(__always) mutating func touch(_ room: Room) {
        if !room.schedulerMarks.listedForDeadline {
            room.schedulerMarks.listedForDeadline = true
            touched.append(room)
        }
        if !room.schedulerMarks.listedForEvents {
            room.schedulerMarks.listedForEvents = true
            eventful.append(room)
        }
    }

    /// The earliest room deadline; `.never` when no room has one.
    mutating func next() -> MonoTime {
        refresh()
        while let top = heap.first, !Self.isCurrent(top) { pop() }
        return heap.first?.at ?? .never
    }

    /// Rooms whose deadline is at or before `now`, each once; each is touched (its tick moves its deadline).
    mutating func due(at now: MonoTime, into due: inout [Room]) {
        refresh()
        while let top = heap.first, top.at <= now {
            pop()
            guard Self.isCurrent(top) else { continue }
            top.room.schedulerMarks.deadline = .never  // read again once its tick has run
            due.append(top.room)
            touch(top.room)
        }
    }

    /// The next room that may have events, taken off the list; nil when every reached room was looked at.
    mutating func nextEventful() -> Room? {
        guard let room = eventful.popLast() else { return nil }
        room.schedulerMarks.listedForEvents = false
        return room
    }

    var mayHaveEvents: [Room] { eventful }

    private static func isCurrent(_ e: Entry) -> Bool {
        e.room.schedulerMarks.scheduled && e.room.schedulerMarks.deadline == e.at
    }

    private mutating func refresh() {
        guard !touched.isEmpty else { return }
        for room in touched {
            room.schedulerMarks.listedForDeadline = false
            let now = room.nextDeadline
            guard now != room.schedulerMarks.deadline else { continue }
            room.schedulerMarks.deadline = now
            if now != .never { push(Entry(at: now, room: room)) }
        }
        touched.removeAll(keepingCapacity: true)
        if heap.count > 2 * rooms + 64 { rebuild() }
    }

    /// Keeps one current entry per room.
    private mutating func rebuild() {
        let old = heap
        heap = []
        heap.reserveCapacity(rooms)
        var kept = Set<ObjectIdentifier>(minimumCapacity: rooms)
        for e in old where Self.isCurrent(e) && kept.insert(ObjectIdentifier(e.room)).inserted { push(e) }
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
