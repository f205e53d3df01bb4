import COpenSSL

/// The client side of connectivity checks against an ICE-lite node (what browsers and aiortc do as the
/// controlling agent, RFC 8445 section 7.2.4): builds Binding requests and checks the responses. Used by
/// tests and by the load generator.
public struct ICEControllingClient {
    public var local: ICECredentials
    public var remote: ICECredentials
    public let tieBreaker: UInt64

    public init(local: ICECredentials, remote: ICECredentials, tieBreaker: UInt64 = 0x1234_5678_9ABC_DEF0) {
        self.local = local
        self.remote = remote
        self.tieBreaker = tieBreaker
    }

    /// A Binding request: USERNAME "remote:local", PRIORITY, ICE-CONTROLLING, optionally USE-CANDIDATE,
    /// MESSAGE-INTEGRITY with the remote (node's) password, FINGERPRINT.
    public func bindingRequest(nominate: Bool, transactionID: [UInt8]? = nil, priority: UInt32 = 0x6E00_01FF) -> [UInt8] {
        let tid = transactionID ?? Self.randomTransactionID()
        var b = STUNMessageBuilder(class: .request, transactionID: tid)
        b.add(STUNMessage.Attribute.username, Array("\(remote.ufrag):\(local.ufrag)".utf8))
        b.add(STUNMessage.Attribute.priority, u32: priority)
        b.add(STUNMessage.Attribute.iceControlling, u64: tieBreaker)
        if nominate { b.add(STUNMessage.Attribute.useCandidate, []) }
        b.addMessageIntegrity(key: Array(remote.password.utf8))
        b.addFingerprint()
        return b.bytes
    }

    public enum ResponseCheck: Equatable {
        case success(mapped: TransportAddress)
        case error(code: Int)
        case invalid
    }

    /// Checks a response's integrity (the node's password) and fingerprint, and reads what it says.
    public func check(response: [UInt8], transactionID: [UInt8]) -> ResponseCheck {
        response.withUnsafeBytes { p in
            guard case .success(let m) = STUNMessage.parse(p), m.transactionID == transactionID,
                  m.verifyFingerprint(p), m.verifyIntegrity(p, key: Array(remote.password.utf8)) else { return .invalid }
            if m.messageClass == .error { return .error(code: m.errorCode ?? 0) }
            guard m.messageClass == .success, let a = m.mappedAddress(in: p) else { return .invalid }
            return .success(mapped: a)
        }
    }

    /// Answers the remote's own Binding request (RFC 8445 section 7.3): a full agent answers its peer's checks,
    /// and some ICE-lite servers (libnice in Janus) send a triggered check and complete only when it succeeds.
    /// Nil when the datagram is not a request for this agent (wrong username, integrity or fingerprint).
    public func answer(request p: UnsafeRawBufferPointer, from: TransportAddress) -> [UInt8]? {
        guard case .success(let m) = STUNMessage.parse(p), m.messageClass == .request, m.method == STUNMessage.bindingMethod,
              m.verifyFingerprint(p), let user = m.usernameString(in: p), user.hasPrefix(local.ufrag + ":"),
              m.verifyIntegrity(p, key: Array(local.password.utf8)) else { return nil }
        var b = STUNMessageBuilder(class: .success, transactionID: m.transactionID)
        b.addXORMappedAddress(from)
        b.addMessageIntegrity(key: Array(local.password.utf8))
        b.addFingerprint()
        return b.bytes
    }

    public static func randomTransactionID() -> [UInt8] {
        var t = [UInt8](repeating: 0, count: 12)
        precondition(RAND_bytes(&t, 12) == 1)
        return t
    }
}
