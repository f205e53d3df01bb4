import SFU
import SFUBase
import WebRTCEdge

/// What a worker has done since it started, for metrics: socket, engine and edge totals.
public struct WorkerMetrics: Sendable {
    public var worker: Int
    public var rooms: Int
    public var participants: Int
    public var connections: Int
    public var room = RoomCounters()
    public var datagramsIn: UInt64 = 0
    public var bytesIn: UInt64 = 0
    public var datagramsOut: UInt64 = 0
    public var bytesOut: UInt64 = 0
    public var sendDrops: UInt64 = 0
    /// Of `sendDrops`, those the kernel refused for their own destination.
    public var sendErrors: UInt64 = 0
    public var gsoSends: UInt64 = 0
    /// Media datagrams for a connection whose room is gone.
    public var ingressDrops: UInt64 = 0
    /// Datagrams a hosted transport received that the handoff to its room's worker had no room for.
    public var handoffDrops: UInt64 = 0
    /// Packets handed over for a hosted transport released meanwhile (or that could not be protected).
    public var hostedDiscards: UInt64 = 0
    /// Datagrams longer than the receive buffer.
    public var oversizedDrops: UInt64 = 0
    /// Datagrams the edge dropped (STUN that fails its checks, unvalidated sources, unknown classes), by reason.
    public var edgeDrops: [(reason: String, count: UInt64)] = []
    public var dtlsHandshakes: UInt64 = 0
    public var dtlsFailures: UInt64 = 0
    /// What happened to transports: created, renegotiated, restarted, replaced, timed out, expired.
    public var transports = TransportCounters()
    public var pendingHandshakes = 0
    /// Loop passes that ended on their datagram budget (`Worker.datagramsPerPass`).
    public var saturatedPasses: UInt64 = 0
    /// GSO sends the kernel refused, sent again one datagram at a time.
    public var gsoFallbacks: UInt64 = 0
    /// Time the worker thread spent working rather than waiting for the socket: its load.
    public var busySeconds: Double = 0
    public var eventsLost: UInt64 = 0
    /// Relay ends open on this worker, datagrams their sockets received, and of those the ones not routed (not
    /// RTP or RTCP, or for an end closed meanwhile).
    public var relayEnds = 0
    public var relayDatagramsIn: UInt64 = 0
    public var relayDrops: UInt64 = 0
    /// The ICE-TCP port's connections and totals (nil: the node offers no TCP).
    public var tcp: TCPCounters?
    /// Client transports of this worker's rooms that nominated a pair, by how they reach the node.
    public var paths: [TransportPath: Int] = [:]
}

/// A command the worker did not start within its time: it never runs, and the caller is told at once.
public struct WorkerTimeout: Error, Sendable, CustomStringConvertible {
    public var worker: Int
    public var milliseconds: Int64
    public var description: String { "worker \(worker) did not take the command within \(milliseconds) ms" }
}
