import SFU
import WebRTCEdge

/// One client transport, as one worker holds it: one record whose halves are fields. Its ICE and DTLS half
/// runs in this worker's edge (`WorkerEdge`, found by the connection id the core gave it) or on the worker
/// that hosts it (`host`); its media half is the room's `Connection` (SRTP, routes, what it carries), or, for
/// a transport this worker only hosts for another worker's room, the hand-off its datagrams go through
/// (`relay`) and the SRTP context that protects what that worker hands back (`hostedOutbound`). Its life is
/// `lifecycle`, a state machine whose inputs say what the core must do.
final class ClientTransport {
    let id: ConnectionID
    /// The room and participant it serves and what its offers said; nil for a transport hosted here for
    /// another worker's room (the session is that worker's).
    let session: TransportSession?
    /// The worker that runs its ICE and DTLS, when not this one.
    let host: Int?
    /// For a transport hosted here: the worker whose room it serves.
    let home: Int?
    var lifecycle: TransportLifecycle
    /// The media half of a session: the room's side of the transport, once an offer bound it.
    var media: Connection?
    /// The media half of a hosted transport: where what its client sends goes (still encrypted, to the home,
    /// which holds the SRTP contexts), and the outbound context from the keys DTLS exported here, which
    /// protects the plain packets the home hands over (`WorkerCore.protectHandedOver`).
    var relay: Handoff?
    var hostedOutbound: SRTPSession?

    /// A transport of this worker's session (`host`: the worker that runs its ICE and DTLS, if another).
    init(id: ConnectionID, session: TransportSession, host: Int?, createdAt: MonoTime) {
        self.id = id
        self.session = session
        self.host = host
        home = nil
        lifecycle = TransportLifecycle(createdAt: createdAt)
    }

    /// A transport hosted here for `home`'s room.
    init(id: ConnectionID, hostedFor home: Int, relay: Handoff, createdAt: MonoTime) {
        self.id = id
        session = nil
        host = nil
        self.home = home
        self.relay = relay
        lifecycle = TransportLifecycle(createdAt: createdAt)
    }
}

/// What a transport serves and what the client's offers said about it.
final class TransportSession {
    let room: Room
    let participant: String
    let direction: TransportDirection
    var remote: RemoteTransport
    var local: LocalTransport
    /// A subscription's SSRC per slot mid: a renegotiation keeps the slots it still offers on their SSRCs.
    var slotSSRCs: [String: UInt32] = [:]

    init(room: Room, participant: String, direction: TransportDirection, remote: RemoteTransport, local: LocalTransport) {
        self.room = room
        self.participant = participant
        self.direction = direction
        self.remote = remote
        self.local = local
    }

    var key: SessionKey { SessionKey(room: room.name, participant: participant, direction: direction) }
}

/// A transport's life: created by an answer, checking once the client passed an ICE check, connected once it
/// both nominated an address (USE-CANDIDATE) and finished DTLS (the room has its keys), closing when it fails,
/// times out or is let go, closed when forgotten. Each input returns what the worker core must do; nothing
/// here reads a clock.
struct TransportLifecycle: Equatable {
    enum State: Equatable {
        case created
        case checking
        case connected
        case closing(reason: String)
        case closed
    }

    enum Input: Equatable {
        /// The client passed a connectivity check.
        case checked
        /// The client nominated an address (USE-CANDIDATE).
        case nominated
        /// DTLS finished and the room took its SRTP keys.
        case keyed
        /// The room refused the keys, DTLS failed, consent expired, or the client closed: close with this reason.
        case failed(reason: String)
        /// The handshake deadline passed at `age` since the answer (`WorkerLimits.handshakeTimeout`).
        case deadline(age: MonoTime.Interval, timeout: MonoTime.Interval)
        /// The core let it go (replaced, participant removed, room destroyed).
        case released
    }

    enum Action: Equatable {
        case none
        /// Connected: the handshake deadline no longer watches it.
        case settled
        /// Close it and tell the room why (the participant stays and is reported disconnected).
        case close(reason: String)
    }

    private(set) var state: State = .created
    private(set) var nominated = false
    private(set) var keyed = false
    let createdAt: MonoTime

    init(createdAt: MonoTime) { self.createdAt = createdAt }

    /// Still handshaking: what the deadline watches.
    var isHandshaking: Bool { state == .created || state == .checking }

    mutating func handle(_ input: Input) -> Action {
        if state == .closed { return .none }
        if case .closing = state, input != .released { return .none }
        switch input {
        case .checked:
            if state == .created { state = .checking }
            return .none
        case .nominated:
            nominated = true
            if state == .created { state = .checking }
            return connectIfReady()
        case .keyed:
            keyed = true
            return connectIfReady()
        case .failed(let reason):
            state = .closing(reason: reason)
            return .close(reason: reason)
        case .deadline(let age, let timeout):
            guard isHandshaking, age >= timeout else { return .none }
            let seconds = Int(timeout.seconds)
            let why = state == .created ? "no ICE connectivity check within \(seconds) s"
                : !keyed ? "DTLS did not complete within \(seconds) s" : "no ICE nomination within \(seconds) s"
            state = .closing(reason: why)
            return .close(reason: why)
        case .released:
            state = .closed
            return .none
        }
    }

    private mutating func connectIfReady() -> Action {
        guard nominated, keyed, isHandshaking else { return .none }
        state = .connected
        return .settled
    }
}

/// Which way a transport carries a participant's media.
public enum TransportDirection: String, Sendable {
    case publish, subscribe
}

/// A participant's transport for one direction.
struct SessionKey: Hashable {
    var room: String
    var participant: String
    var direction: TransportDirection
}
