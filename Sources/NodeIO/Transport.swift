import SFU
import WebRTCEdge

/// Which way a transport carries a participant's media.
public enum TransportDirection: String, Sendable {
    case publish, subscribe
}

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

/// One client transport, a row of the worker's connection table: its ICE and DTLS identity on both sides,
/// and the room and participant it serves. When `host` is set its ICE agent, DTLS server and socket are on
/// that worker, and this one keeps the session and the room's side (SRTP, slots).
final class Transport {
    let id: ConnectionID
    let room: Room
    let participant: String
    let direction: TransportDirection
    var remote: RemoteTransport
    var local: LocalTransport
    let createdAt: MonoTime
    /// DTLS finished and the room has the SRTP keys.
    var established = false
    /// The client nominated an address (USE-CANDIDATE): media has somewhere to go.
    var nominated = false
    /// A subscription's SSRC per slot mid: a renegotiation keeps the slots it still offers on their SSRCs.
    var slotSSRCs: [String: UInt32] = [:]
    /// The worker that hosts the transport, when not this one.
    let host: Int?
    /// The host said the client passed a check (for a hosted transport: `WorkerEdge.wasChecked` at home).
    var checked = false
    /// The media half: the room's side of the transport (its SRTP contexts and routes), once an offer bound it.
    var media: Connection?

    init(id: ConnectionID, room: Room, participant: String, direction: TransportDirection, remote: RemoteTransport,
         local: LocalTransport, createdAt: MonoTime, host: Int? = nil) {
        self.host = host
        self.id = id
        self.room = room
        self.participant = participant
        self.direction = direction
        self.remote = remote
        self.local = local
        self.createdAt = createdAt
    }

    var key: SessionKey { SessionKey(room: room.name, participant: participant, direction: direction) }
}

/// A participant's transport for one direction.
struct SessionKey: Hashable {
    var room: String
    var participant: String
    var direction: TransportDirection
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
