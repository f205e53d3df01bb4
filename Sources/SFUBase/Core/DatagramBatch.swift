/// Identifies one client transport (a 5-tuple after ICE) within a worker. The node allocates them; the engine
/// only routes by them. 64 bits: a worker that hands out one per transport never runs out (a 32-bit id stepped
/// by 1,024 per worker wrapped after about 4.2 million transports and took a live transport's id).
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    public var raw: UInt64
    public init(_ raw: UInt64) { self.raw = raw }
    /// No connection: worker cores number theirs from 1.
    public static let none = ConnectionID(0)
    public var description: String { "conn#\(raw)" }
}

/// Datagrams the engine wants sent, written into buffers allocated once: the hot path fills them without
/// allocating, and the I/O shell hands the whole batch to `sendmmsg`.
public final class DatagramBatch {
    public let capacity: Int
    /// Bytes per buffer: an MTU-sized packet plus SRTP's worst-case trailer.
    public let bufferSize: Int
    private let storage: UnsafeMutableRawBufferPointer
    private let destinations: UnsafeMutablePointer<ConnectionID>
    private let lengths: UnsafeMutablePointer<Int>
    /// When each datagram arrived, for a batch of received datagrams handed to another worker (`Handoff`).
    private let arrivals: UnsafeMutablePointer<MonoTime>
    public private(set) var count = 0
    /// Datagrams refused because the batch was full since the last `removeAll`.
    public private(set) var overflows = 0

    public init(capacity: Int = 1024, bufferSize: Int = 1500 + SRTPSession.maxOverhead) {
        self.capacity = capacity
        self.bufferSize = bufferSize
        storage = .allocate(byteCount: capacity * bufferSize, alignment: 16)
        destinations = .allocate(capacity: capacity)
        lengths = .allocate(capacity: capacity)
        arrivals = .allocate(capacity: capacity)
    }

    deinit {
        storage.deallocate()
        destinations.deallocate()
        lengths.deallocate()
        arrivals.deallocate()
    }

    public var isFull: Bool { count >= capacity }

    /// The buffer the next datagram is written into, or nil (counted) when the batch is full.
    public func nextBuffer() -> UnsafeMutableRawBufferPointer? {
        guard count < capacity else { overflows += 1; return nil }
        return UnsafeMutableRawBufferPointer(rebasing: storage[(count * bufferSize)..<((count + 1) * bufferSize)])
    }

    /// Keeps the datagram written into `nextBuffer()`.
    public func commit(length: Int, to destination: ConnectionID, arrival: MonoTime = .zero) {
        precondition(count < capacity && length <= bufferSize)
        destinations[count] = destination
        lengths[count] = length
        arrivals[count] = arrival
        count += 1
    }

    public func destination(at i: Int) -> ConnectionID { destinations[i] }

    /// The datagram at `i` was changed in place to `length` bytes (protected by the worker that sends it).
    public func setLength(_ length: Int, at i: Int) {
        precondition(i < count && length <= bufferSize)
        lengths[i] = length
    }

    /// The datagram at `i` is not to be sent: it gets a destination no connection has.
    public func discard(at i: Int) { destinations[i] = .none }

    /// When the datagram at `i` arrived (`.zero` unless its writer said).
    public func arrival(at i: Int) -> MonoTime { arrivals[i] }

    /// The datagram at `i`, writable: a received datagram is decrypted in place by the room that takes it.
    public func buffer(at i: Int) -> (buffer: UnsafeMutableRawBufferPointer, length: Int) {
        (UnsafeMutableRawBufferPointer(rebasing: storage[(i * bufferSize)..<((i + 1) * bufferSize)]), lengths[i])
    }

    public func datagram(at i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: storage[(i * bufferSize)..<(i * bufferSize + lengths[i])])
    }

    /// Copies of all datagrams (tests and tools; the node reads them in place).
    public var all: [(ConnectionID, [UInt8])] { (0..<count).map { (destinations[$0], Array(datagram(at: $0))) } }

    /// Writers that stamped transport-wide sequence numbers into this batch (`SendHistory.departed`).
    private var departures: [any DepartureStamped] = []

    /// `writer` stamped a packet of this batch with a send time that is only known once the batch leaves.
    public func awaitDeparture(_ writer: any DepartureStamped) {
        guard !writer.awaitingDeparture else { return }
        writer.awaitingDeparture = true
        departures.append(writer)
    }

    /// The batch went to the kernel at `now`: its transport-wide stamped packets take that as their send time.
    public func sent(at now: MonoTime) {
        for c in departures {
            c.departed(at: now)
            c.awaitingDeparture = false
        }
        departures.removeAll(keepingCapacity: true)
    }

    /// Empties the batch. Packets stamped and not yet `sent(at:)` keep the time they were written.
    public func removeAll() {
        count = 0
        overflows = 0
        if !departures.isEmpty {
            for c in departures { c.awaitingDeparture = false }
            departures.removeAll(keepingCapacity: true)
        }
    }
}

/// A writer that stamps packets with when they leave (the transport-wide sequence numbers of one transport,
/// draft-holmer-rmcat-transport-wide-cc-extensions-01): told when the batch they are in goes to the kernel.
public protocol DepartureStamped: AnyObject {
    /// On a batch's list, waiting for it to leave.
    var awaitingDeparture: Bool { get set }
    func departed(at now: MonoTime)
}
