import SFU
import WebRTCEdge

/// What an offer did to the participant's transport for that direction (issue 11's session model).
public enum SessionChange: String, Sendable {
    /// No transport for this direction yet: a new one (ICE, DTLS, SRTP) starts.
    case created
    /// Same ICE credentials and DTLS fingerprint: m-lines added, removed or changed, no new handshake.
    case renegotiated
    /// New ICE credentials, same DTLS fingerprint: ICE checks again, DTLS and SRTP go on.
    case iceRestarted
    /// A new DTLS fingerprint: the client started over; its old transport is closed and freed.
    case replaced
}

/// The node's answer to an offer and what it changed.
public struct SessionAnswer: Sendable {
    public var sdp: String
    public var change: SessionChange
    public var connection: ConnectionID
}

/// What one worker lets clients make it hold: the room's limits, and how long and how many handshakes
/// may be under way.
public struct WorkerLimits: Sendable, Equatable {
    public var room = RoomLimits()
    /// A transport that has not finished ICE and DTLS this long after its offer is closed and reported.
    public var handshakeTimeout: MonoTime.Interval = .seconds(30)
    /// Transports prepared or handshaking at once on one worker; more offers are refused until some finish.
    public var pendingHandshakes = 500
    /// Subscribers a room keeps on its own worker; past that, a new subscriber's transport goes to the worker
    /// holding the fewest of the room's subscribers, so one room's fan-out uses every core. 0: never.
    public var spreadRoomAfter = 100

    public init() {}
}

/// What a worker core did with transports, for metrics.
public struct TransportCounters: Sendable, Equatable {
    public var created: UInt64 = 0
    public var renegotiated: UInt64 = 0
    public var iceRestarts: UInt64 = 0
    public var replaced: UInt64 = 0
    public var dtlsHandshakes: UInt64 = 0
    public var dtlsFailures: UInt64 = 0
    public var handshakeTimeouts: UInt64 = 0
    public var consentExpiries: UInt64 = 0
    public var closedByClient: UInt64 = 0
    public var srtpSetupFailures: UInt64 = 0
    public init() {}
}

/// A refusal of the worker core that is not the room's: the room is not on this worker.
public struct NoSuchRoom: Error, Sendable, CustomStringConvertible {
    public var room: String
    public var description: String { "no room \(room)" }
}
