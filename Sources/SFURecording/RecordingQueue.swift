import SFUBase
import Synchronization

/// The bounded queue between one worker and the recording writer (`RecordingSink`): the worker thread puts
/// packets in, the writer thread takes them out. Its slots are allocated once, when the first stream opens; a
/// packet is copied into a slot, so nothing is allocated per packet. A full queue refuses packets (the room
/// counts `recording_queue_full`) and never makes the worker wait; opening, restarting and closing streams keep a
/// reserve of slots of their own, so a stream is always closed however full the queue is of packets.
public final class RecordingQueue: RecordingSink, @unchecked Sendable {
    enum Kind: UInt8 { case packet, open, restart, close }

    struct Entry {
        var kind = Kind.packet
        var stream = 0
        var sequence: Int64 = 0
        var timestamp: UInt32 = 0
        var marker = false
        var arrival = MonoTime.zero
        var length = 0
    }

    /// One entry as the writer reads it: valid until it releases the batch it came in.
    struct Item {
        var kind: Kind
        var stream: Int
        var sequence: Int64
        var timestamp: UInt32
        var marker: Bool
        var arrival: MonoTime
        var payload: UnsafeRawBufferPointer
        var opened: RecordedStream?
    }

    private struct State {
        var head = 0
        var count = 0
        /// What `open` said of each stream, until the writer takes it.
        var opened: [Int: RecordedStream] = [:]
        var handles: [Int: RecordedStreamHandle] = [:]
    }

    /// Packets it holds at most, and the slots kept for opening, restarting and closing streams.
    public let packetCapacity: Int
    public let controlReserve: Int
    let slotBytes: Int
    private let index: Int
    private let state = Mutex(State())
    /// Allocated at the first `open`, freed with the queue (only the worker writes and only under the lock).
    private var entries: UnsafeMutableBufferPointer<Entry>?
    private var storage: UnsafeMutableRawBufferPointer?
    private var nextStream = 0
    private let refusedPackets = Atomic<Int>(0)

    /// `index`: the worker's number, which makes stream ids unique across the node's queues.
    public init(index: Int, packetCapacity: Int = 4096, controlReserve: Int = 1024, slotBytes: Int = 1500 + SRTPSession.maxOverhead) {
        self.index = index
        self.packetCapacity = max(1, packetCapacity)
        self.controlReserve = max(8, controlReserve)
        self.slotBytes = slotBytes
    }

    deinit {
        entries?.deallocate()
        storage?.deallocate()
    }

    var capacity: Int { packetCapacity + controlReserve }

    /// Packets refused because the queue was full.
    public var refused: Int { refusedPackets.load(ordering: .relaxed) }
    /// Entries waiting for the writer.
    public var depth: Int { state.withLock { $0.count } }

    // MARK: The worker's side

    public func open(_ stream: RecordedStream) -> RecordedStreamHandle? {
        if entries == nil {
            entries = .allocate(capacity: capacity)
            entries!.initialize(repeating: Entry())
            storage = .allocate(byteCount: capacity * slotBytes, alignment: 16)
        }
        nextStream += 1
        let handle = RecordedStreamHandle(id: index << 40 | nextStream)
        handle.setWantsKeyframe(stream.codec.kind == .video)
        let taken = state.withLock { s -> Bool in
            // A stream may have its open and its close waiting at once: a quarter of the reserve's slots for
            // streams leaves the other half to restarts, and every close has a slot.
            guard s.handles.count < controlReserve / 4, s.count < capacity else { return false }
            s.opened[handle.id] = stream
            s.handles[handle.id] = handle
            put(&s, Entry(kind: .open, stream: handle.id), payload: nil)
            return true
        }
        return taken ? handle : nil
    }

    public func write(_ handle: RecordedStreamHandle, payload: UnsafeRawBufferPointer, sequence: Int64, timestamp: UInt32,
                      marker: Bool, arrival: MonoTime) -> Bool {
        guard payload.count <= slotBytes else {
            refusedPackets.add(1, ordering: .relaxed)
            return false
        }
        let taken = state.withLock { s -> Bool in
            guard s.count < packetCapacity else { return false }
            put(&s, Entry(kind: .packet, stream: handle.id, sequence: sequence, timestamp: timestamp, marker: marker,
                          arrival: arrival, length: payload.count), payload: payload)
            return true
        }
        if !taken { refusedPackets.add(1, ordering: .relaxed) }
        return taken
    }

    public func restart(_ handle: RecordedStreamHandle) { control(.restart, handle) }

    public func close(_ handle: RecordedStreamHandle) { control(.close, handle) }

    private func control(_ kind: Kind, _ handle: RecordedStreamHandle) {
        state.withLock { s in
            // A close always fits (see `open`); a restart finding its half of the reserve full is skipped (the
            // writer re-anchors on the jump in sequence numbers anyway).
            guard s.count < (kind == .close ? capacity : packetCapacity + controlReserve / 2) else { return }
            put(&s, Entry(kind: kind, stream: handle.id), payload: nil)
        }
    }

    private func put(_ s: inout State, _ e: Entry, payload: UnsafeRawBufferPointer?) {
        let slot = (s.head + s.count) % capacity
        entries![slot] = e
        if let payload, payload.count > 0 {
            storage!.baseAddress!.advanced(by: slot * slotBytes).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        }
        s.count += 1
    }

    // MARK: The writer's side

    /// Hands the writer every entry waiting, oldest first, then frees their slots. The worker may go on adding
    /// while `body` runs: the slots it reads are not reused until it returns.
    func drain(_ body: (Item) -> Void) -> Int {
        let (head, count, opened) = state.withLock { s -> (Int, Int, [Int: RecordedStream]) in
            let o = s.opened
            s.opened.removeAll(keepingCapacity: true)
            return (s.head, s.count, o)
        }
        guard count > 0, let entries, let storage else { return 0 }
        for i in 0..<count {
            let slot = (head + i) % capacity
            let e = entries[slot]
            let bytes = UnsafeRawBufferPointer(start: storage.baseAddress!.advanced(by: slot * slotBytes), count: e.length)
            body(Item(kind: e.kind, stream: e.stream, sequence: e.sequence, timestamp: e.timestamp, marker: e.marker,
                      arrival: e.arrival, payload: bytes, opened: e.kind == .open ? opened[e.stream] : nil))
        }
        state.withLock { s in
            s.head = (s.head + count) % capacity
            s.count -= count
            for i in 0..<count where entries[(head + i) % capacity].kind == .close {
                s.handles[entries[(head + i) % capacity].stream] = nil
            }
        }
        return count
    }

    /// The handle of an open stream, for the writer to say it wants a key frame.
    func handle(_ id: Int) -> RecordedStreamHandle? { state.withLock { $0.handles[id] } }
}
