import COpenSSL
import SFUBase

/// ICE short-term credentials (RFC 8445 section 5.3, RFC 8839 section 5.4): ufrag of at least 4 and password
/// of at least 22 ice-chars.
public struct ICECredentials: Sendable, Equatable {
    public var ufrag: String
    public var password: String

    public init(ufrag: String, password: String) {
        self.ufrag = ufrag
        self.password = password
    }

    static let iceChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    /// Fresh random credentials from OpenSSL's CSPRNG (the password keys MESSAGE-INTEGRITY).
    public static func random() -> ICECredentials {
        func token(_ n: Int) -> String {
            var raw = [UInt8](repeating: 0, count: n)
            precondition(RAND_bytes(&raw, Int32(n)) == 1, "RAND_bytes failed")
            return String(raw.map { iceChars[Int($0) & 63] })
        }
        return ICECredentials(ufrag: token(8), password: token(24))
    }
}

public enum ICEState: String, Sendable {
    /// No valid check yet.
    case new
    /// A nominated address has passed a check and consent is fresh.
    case connected
    /// No valid check for `disconnectedAfter`: consent may be lapsing (browsers check every ~5 s).
    case disconnected
    /// Consent expired (RFC 7675 section 5.1, 30 s by default): the client is gone.
    case failed
    case closed
}

/// The node's side of ICE for one connection: an ICE-lite agent (RFC 8445 section 2.5), always controlled,
/// answering the client's connectivity checks and following its nominations.
///
/// A Binding request is valid when its FINGERPRINT and MESSAGE-INTEGRITY (keyed with the local password)
/// check and its USERNAME is "local-ufrag:remote-ufrag". Every valid check refreshes consent for its source
/// address and makes it an address media may come from; USE-CANDIDATE selects it as the address the node
/// sends to, so a client that roams (Wi-Fi to 4G) is followed as soon as it nominates its new path.
///
/// A check is authenticated but not fresh: anyone on the path can capture one and replay it from elsewhere.
/// The agent remembers the transaction IDs of recent checks and where they came from; a retransmission from
/// the same address is answered again, the same transaction from another address is refused, so moving the
/// downlink takes a check the client made for that path (RFC 8445 section 7.3.1.4; RFC 8489 section 6.3.4).
public final class ICELiteAgent {
    public enum Event: Equatable, Sendable {
        case stateChanged(ICEState)
        case selectedAddressChanged(TransportAddress)
        /// The selected pair's connection closed (`forget`): nothing is selected until the client nominates again.
        case selectedPathClosed(TransportAddress)
    }

    public private(set) var local: ICECredentials
    /// The client's ufrag from its SDP; when set, the USERNAME's second half must match it.
    public var remoteUfrag: String?
    public var consentTimeout: MonoTime.Interval = .seconds(30)
    public var disconnectedAfter: MonoTime.Interval = .seconds(10)
    public private(set) var state: ICEState = .new
    public private(set) var selected: TransportAddress?
    private var lastCheck: [TransportAddress: MonoTime] = [:]
    /// The latest valid check, kept beside `lastCheck`: media nearly always comes from the address that
    /// checked last, so the media path's test skips the table.
    private var latestCheck: (address: TransportAddress, at: MonoTime)?
    /// The latest valid check on a path that closed since (`forget`): consent keeps running from it.
    private var latestForgottenCheck: MonoTime?
    private var events: [Event] = []
    public private(set) var checksAnswered = 0
    public private(set) var checksRefused = 0
    /// Transaction IDs of the last `rememberedChecks` valid checks (hashed) and their source addresses.
    private var recentChecks: [(id: UInt64, from: TransportAddress)] = []
    private var nextRecent = 0
    public static let rememberedChecks = 64

    public init(local: ICECredentials = .random(), remoteUfrag: String? = nil) {
        self.local = local
        self.remoteUfrag = remoteUfrag
    }

    public func drainEvents() -> [Event] {
        defer { events.removeAll() }
        return events
    }

    /// Whether media and DTLS from `address` may be accepted: it passed a check and its consent is fresh.
    public func isValidated(_ address: TransportAddress, now: MonoTime) -> Bool {
        guard state != .failed, state != .closed else { return false }
        if let l = latestCheck, l.address == address { return now - l.at < consentTimeout }
        guard let t = lastCheck[address] else { return false }
        return now - t < consentTimeout
    }

    public var validatedAddresses: [TransportAddress] { Array(lastCheck.keys) }

    /// The pair media goes on, or will: the nominated one, else the checked one a client would choose - UDP
    /// before TCP (the node's UDP candidates outrank its TCP one), the most recent of each.
    public var currentAddress: TransportAddress? {
        if let s = selected { return s }
        var best: (address: TransportAddress, at: MonoTime)?
        for (a, t) in lastCheck {
            guard let b = best else { best = (a, t); continue }
            if (b.address.isTCP && !a.isTCP) || (b.address.isTCP == a.isTCP && t > b.at) { best = (a, t) }
        }
        return best?.address
    }

    /// Whether the selected pair keeps its place against a nomination from `from`: RFC 8445 section 8.1.1 - of
    /// several nominated pairs the highest-priority one is used. A client that nominates aggressively (Firefox
    /// sets USE-CANDIDATE on its checks of every pair) nominates its TCP pair beside its UDP one; the node's
    /// UDP candidate outranks its TCP one, so a UDP pair whose checks are fresh (within `disconnectedAfter`)
    /// stays. A UDP pair gone quiet gives way, so a client that lost UDP moves to TCP.
    func outranks(_ current: TransportAddress?, _ from: TransportAddress, now: MonoTime) -> Bool {
        guard let current, !current.isTCP, from.isTCP, let last = lastCheck[current] else { return false }
        return now - last < disconnectedAfter
    }

    /// Answers a Binding request from `from`. Returns the response datagram, or why the request was refused
    /// (an error response is returned for requests that authenticate but cannot be honoured).
    public func handle(_ m: STUNMessage, _ p: UnsafeRawBufferPointer, from: TransportAddress,
                       now: MonoTime) -> Result<[UInt8], EdgeDropReason> {
        guard state != .closed, state != .failed else { return .failure(.stunUnexpected) }
        guard m.method == STUNMessage.bindingMethod else { return .failure(.stunUnexpected) }
        if m.messageClass == .indication { return .failure(.stunUnexpected) }  // keepalives need no answer
        guard m.messageClass == .request else { return .failure(.stunUnexpected) }
        guard m.verifyFingerprint(p) else { checksRefused += 1; return .failure(.stunBadFingerprint) }
        guard let user = m.usernameString(in: p), usernameMatches(user) else {
            checksRefused += 1
            return .failure(.stunUnknownUsername)
        }
        guard m.verifyIntegrity(p, key: Array(local.password.utf8)) else {
            checksRefused += 1
            return .failure(.stunUnauthenticated)
        }
        // RFC 8445 section 7.3.1.1: a lite agent is always controlled; a peer that also claims the controlled
        // role must switch, told by 487 (Role Conflict).
        if m.iceControlled != nil {
            var b = STUNMessageBuilder(class: .error, transactionID: m.transactionID)
            b.addErrorCode(487, reason: "Role Conflict")
            b.addMessageIntegrity(key: Array(local.password.utf8))
            b.addFingerprint()
            return .success(b.bytes)
        }
        let id = Self.hash(m.transactionID)
        if let seen = recentChecks.first(where: { $0.id == id }) {
            guard seen.from == from else { checksRefused += 1; return .failure(.stunReplay) }
        } else {
            remember(id, from: from)
        }
        lastCheck[from] = now
        latestCheck = (from, now)
        checksAnswered += 1
        if m.useCandidate, selected != from, !outranks(selected, from, now: now) {
            selected = from
            events.append(.selectedAddressChanged(from))
        }
        // Connected means consent is fresh on the selected address: a check on a path the client has not
        // nominated says nothing about the one media goes to.
        if selected == from, state != .connected { setState(.connected) }
        var b = STUNMessageBuilder(class: .success, transactionID: m.transactionID)
        b.addXORMappedAddress(from)
        b.addMessageIntegrity(key: Array(local.password.utf8))
        b.addFingerprint()
        return .success(b.bytes)
    }

    private func remember(_ id: UInt64, from: TransportAddress) {
        if recentChecks.count < Self.rememberedChecks {
            recentChecks.append((id, from))
        } else {
            recentChecks[nextRecent] = (id, from)
            nextRecent = (nextRecent + 1) % Self.rememberedChecks
        }
    }

    /// FNV-1a of the 96-bit transaction ID: 64 bits are plenty to tell random IDs apart.
    static func hash(_ id: [UInt8]) -> UInt64 {
        id.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    /// An ICE restart (RFC 8445 section 9): new credentials on both sides. Checks with the old ones are
    /// refused from now on; addresses already validated keep their consent until it lapses, so media flows
    /// on while the client checks again.
    public func restart(local: ICECredentials, remoteUfrag: String) {
        self.local = local
        self.remoteUfrag = remoteUfrag
        recentChecks.removeAll()
        nextRecent = 0
    }

    private func usernameMatches(_ user: String) -> Bool {
        guard let colon = user.firstIndex(of: ":") else { return false }
        guard user[..<colon] == local.ufrag else { return false }
        if let remoteUfrag { return user[user.index(after: colon)...] == remoteUfrag }
        return true
    }

    /// A path that closed - an ICE-TCP connection (RFC 6544: each connection is a candidate pair of its own) -
    /// proves nothing any more: its checks are void, and a selected pair on it is unselected and the agent
    /// disconnected (reported as `selectedPathClosed`, not as consent lapsing). Consent runs on from the last
    /// valid check: a client that nominates another pair within it goes on, one that does not fails as it would.
    public func forget(_ address: TransportAddress) {
        if let t = lastCheck.removeValue(forKey: address) { latestForgottenCheck = max(latestForgottenCheck ?? t, t) }
        if latestCheck?.address == address { latestCheck = nil }
        guard selected == address else { return }
        selected = nil
        if state == .connected { state = .disconnected }
        events.append(.selectedPathClosed(address))
    }

    /// Consent bookkeeping: disconnected after `disconnectedAfter` without a valid check on the selected
    /// address (or, before any nomination, on any address), failed after `consentTimeout`: a client that
    /// checked once and never nominated does not stay forever.
    public func tick(now: MonoTime) {
        guard state != .failed, state != .closed, let t = lastQuietFrom else { return }
        let quiet = now - t
        if quiet >= consentTimeout {
            setState(.failed)
        } else if quiet >= disconnectedAfter, state == .connected {
            setState(.disconnected)
        }
        for (a, t) in lastCheck where now - t >= consentTimeout { lastCheck[a] = nil }
    }

    /// The last valid check that keeps consent: on the selected address, or on any before a nomination (or
    /// since the selected pair's connection closed, including the checks on closed paths).
    private var lastQuietFrom: MonoTime? {
        if let s = selected { return lastCheck[s] }
        let latest = lastCheck.values.max()
        guard let forgotten = latestForgottenCheck else { return latest }
        return max(latest ?? forgotten, forgotten)
    }

    /// When `tick` has something to decide.
    public var nextDeadline: MonoTime {
        guard let t = lastQuietFrom else { return .never }
        switch state {
        case .connected: return t + disconnectedAfter
        case .new, .disconnected: return t + consentTimeout
        default: return .never
        }
    }

    public func close() { setState(.closed) }

    private func setState(_ s: ICEState) {
        guard s != state else { return }
        state = s
        events.append(.stateChanged(s))
    }
}
