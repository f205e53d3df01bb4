import SFU

/// What one worker's ICE-TCP port lets clients hold (RFC 6544 passive candidates). Every connection is keyed
/// by what a client sends (its address), so every table here is bounded.
public struct TCPLimits: Sendable, Equatable {
    /// Connections open at once on one worker; a connection past it is accepted and reset at once (counted).
    public var maxConnections = 1000
    /// Connections that have not passed an ICE check yet; a new one past it closes the oldest of them, so a
    /// flood of silent connections cannot keep a real client (who sends its check at once) out.
    public var maxUnauthenticated = 64
    /// Connections one transport keeps: a client has one per transport (two while it moves), so more are
    /// another connection checked with the same credentials - the oldest of them is closed.
    public var perTransport = 2
    /// How long a connection may stay without passing an ICE check.
    public var unauthenticatedTimeout: MonoTime.Interval = .seconds(5)
    /// Bytes of frames waiting for one slow reader beyond the kernel's buffer; past it frames are dropped.
    public var sendBufferBytes = 128 * 1024
    /// A connection whose frames have been refused for this long without its buffer draining is closed.
    public var stallTimeout: MonoTime.Interval = .seconds(5)

    public init() {}
}

/// Why the node closed (or refused) a TCP connection: counted, by reason, in `/metrics`.
public enum TCPCloseReason: Int, CaseIterable, Sendable, CustomStringConvertible {
    /// The client closed it or it failed (reset, error).
    case peerClosed
    /// Past `maxConnections`, with none waiting for a check to make room.
    case overCapacity
    /// Past `maxUnauthenticated`: the oldest silent connection made room for a new one.
    case unauthenticatedEvicted
    /// No ICE check passed within `unauthenticatedTimeout`.
    case unauthenticatedTimeout
    /// Its address is no longer a transport's (consent expired, the transport closed or moved).
    case transportGone
    /// A reader too slow for `stallTimeout`.
    case stalled
    /// The worker stopped.
    case shutdown
    /// One transport's connection past `perTransport` (the oldest goes).
    case transportExcess
    /// The node ran out of file descriptors: the listener rests until the next second (counted per refusal).
    case noDescriptors

    public var description: String {
        switch self {
        case .peerClosed: "peer_closed"
        case .overCapacity: "over_capacity"
        case .unauthenticatedEvicted: "unauthenticated_evicted"
        case .unauthenticatedTimeout: "unauthenticated_timeout"
        case .transportGone: "transport_gone"
        case .stalled: "stalled"
        case .shutdown: "shutdown"
        case .transportExcess: "transport_excess"
        case .noDescriptors: "no_descriptors"
        }
    }
}

/// What a worker's TCP port has done, for metrics.
public struct TCPCounters: Sendable, Equatable {
    public var open = 0
    public var unauthenticated = 0
    public var accepted: UInt64 = 0
    public var closed = [UInt64](repeating: 0, count: TCPCloseReason.allCases.count)
    public var framesIn: UInt64 = 0
    public var bytesIn: UInt64 = 0
    public var framesOut: UInt64 = 0
    public var bytesOut: UInt64 = 0
    /// Frames refused because a connection's send buffer was full (a slow reader).
    public var sendDrops: UInt64 = 0
    /// Frames longer than a packet can be, or empty: skipped.
    public var badFrames: UInt64 = 0

    public init() {}

    public func closed(_ r: TCPCloseReason) -> UInt64 { closed[r.rawValue] }

    /// Adds another port's counters (a dual-stack worker has two).
    public mutating func add(_ o: TCPCounters) {
        open += o.open
        unauthenticated += o.unauthenticated
        accepted &+= o.accepted
        for i in closed.indices { closed[i] &+= o.closed[i] }
        framesIn &+= o.framesIn
        bytesIn &+= o.bytesIn
        framesOut &+= o.framesOut
        bytesOut &+= o.bytesOut
        sendDrops &+= o.sendDrops
        badFrames &+= o.badFrames
    }
}
