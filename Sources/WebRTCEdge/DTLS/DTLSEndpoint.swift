import COpenSSL
import COpenSSLShims
import SFUBase

/// One DTLS-SRTP association (RFC 5764) over OpenSSL, sans-IO: datagrams in, datagrams out, keys at the end.
///
/// The node is the DTLS server (`a=setup:passive`); tests and the load generator use the client role. OpenSSL
/// writes each record through a capture BIO, so every output is one datagram no larger than the MTU; input
/// datagrams are fed one at a time through a memory BIO. The peer must present a certificate whose SHA-256
/// fingerprint matches the one its SDP announced, or the association fails. The server picks the SRTP
/// profile: AEAD_AES_128_GCM first, then AEAD_AES_256_GCM, then AES_CM_128_HMAC_SHA1_80.
///
/// Retransmission: OpenSSL keeps the DTLS timers itself, on the real clock (OpenSSL 3.0 has no clock
/// injection); `nextDeadline` reports its remaining time from the caller's `now`, and `tick` lets it
/// retransmit. The first timeout is 1 s by default (RFC 6347 section 4.2.4.1) and doubles up to 60 s.
public final class DTLSEndpoint {
    public enum Role: Sendable { case server, client }

    public enum State: Equatable, Sendable {
        case new, handshaking, connected
        case failed(String)
        case closed
    }

    /// The keys DTLS exported for SRTP: `outbound` protects what this end sends, `inbound` what it receives.
    public struct SRTPKeys: Equatable, Sendable {
        public var profile: SRTPProfile
        public var outbound: SRTPKeyingMaterial
        public var inbound: SRTPKeyingMaterial
    }

    public static let defaultProfiles: [SRTPProfile] = [.aeadAES128GCM, .aeadAES256GCM, .aesCM128HmacSHA1_80]

    public let role: Role
    public var remoteFingerprint: DTLSFingerprint?
    public private(set) var state: State = .new
    public private(set) var keys: SRTPKeys?
    public private(set) var peerFingerprint: DTLSFingerprint?
    private let certificate: DTLSCertificate
    private let context: DTLSContext
    private let ssl: OpaquePointer
    private let feed: OpaquePointer
    private var outbox: [[UInt8]] = []
    private var deadline: MonoTime = .never

    /// An association with a context of its own (clients, tests).
    public convenience init(role: Role, certificate: DTLSCertificate, remoteFingerprint: DTLSFingerprint?,
                            profiles: [SRTPProfile] = DTLSEndpoint.defaultProfiles, mtu: Int = 1200,
                            initialRetransmitTimeout: MonoTime.Interval = .seconds(1)) throws {
        try self.init(context: DTLSContext(role: role, certificate: certificate, profiles: profiles),
                      remoteFingerprint: remoteFingerprint, mtu: mtu, initialRetransmitTimeout: initialRetransmitTimeout)
    }

    /// An association on a shared context (the node: one per worker).
    public init(context: DTLSContext, remoteFingerprint: DTLSFingerprint?, mtu: Int = 1200,
                initialRetransmitTimeout: MonoTime.Interval = .seconds(1)) throws {
        self.role = context.role
        self.certificate = context.certificate
        self.context = context
        self.remoteFingerprint = remoteFingerprint
        guard let s = SSL_new(context.raw), let f = sfu_feed_bio_new() else {
            throw DTLSError.setup("cannot create the DTLS session")
        }
        ssl = s
        feed = f
        // Every stored property is set: the capture BIO may now call back into `self`, unretained (the session
        // owns the BIO and is freed in deinit, so the callback never outlives this object).
        guard let sink = sfu_capture_bio_new(Unmanaged.passUnretained(self).toOpaque(), { owner, data, length in
            guard let owner, let data, length > 0 else { return }
            let endpoint = Unmanaged<DTLSEndpoint>.fromOpaque(owner).takeUnretainedValue()
            endpoint.outbox.append(Array(UnsafeBufferPointer(start: data, count: Int(length))))
        }) else {
            BIO_free(f)
            SSL_free(s)
            throw DTLSError.setup("cannot create the DTLS output")
        }
        SSL_set_bio(s, f, sink)  // the session owns both BIOs from here
        sfu_dtls_configure(s, mtu, UInt32(clamping: initialRetransmitTimeout.nanoseconds / 1000))
        if role == .server { SSL_set_accept_state(s) } else { SSL_set_connect_state(s) }
    }

    deinit {
        SSL_free(ssl)
    }

    /// Starts the handshake: the client sends its ClientHello; the server waits.
    public func start(now: MonoTime) -> [[UInt8]] {
        guard state == .new else { return [] }
        state = .handshaking
        if role == .client { advance(now: now) }
        return drainOutbox()
    }

    /// Feeds one received DTLS datagram; returns the datagrams to send back.
    public func receive(_ datagram: UnsafeRawBufferPointer, now: MonoTime) -> [[UInt8]] {
        guard state != .closed, !isFailed, datagram.count > 0 else { return [] }
        if state == .new { state = .handshaking }
        _ = BIO_write(feed, datagram.baseAddress, Int32(datagram.count))
        advance(now: now)
        return drainOutbox()
    }

    /// Retransmits a lost flight when OpenSSL's timer has expired.
    public func tick(now: MonoTime) -> [[UInt8]] {
        guard state == .handshaking else { return [] }
        if sfu_dtls_handle_timeout(ssl) < 0 { fail("DTLS retransmission failed") }
        updateDeadline(now: now)
        return drainOutbox()
    }

    public var nextDeadline: MonoTime { state == .handshaking ? deadline : .never }

    /// Sends close_notify (RFC 6347 section 4.2.7) and closes.
    public func close() -> [[UInt8]] {
        guard state != .closed else { return [] }
        if state == .connected { SSL_shutdown(ssl) }
        state = .closed
        return drainOutbox()
    }

    private var isFailed: Bool { if case .failed = state { return true } else { return false } }

    private func advance(now: MonoTime) {
        if state == .handshaking {
            let r = SSL_do_handshake(ssl)
            if r == 1 {
                finishHandshake()
            } else {
                let err = SSL_get_error(ssl, r)
                if err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE { fail(Self.openSSLError("handshake")) }
            }
        }
        if state == .connected {
            // Application data is not used (no data channels); drain it to see close_notify.
            var scratch = [UInt8](repeating: 0, count: 2048)
            while true {
                let n = SSL_read(ssl, &scratch, Int32(scratch.count))
                if n > 0 { continue }
                if SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN { state = .closed }
                break
            }
        }
        ERR_clear_error()
        updateDeadline(now: now)
    }

    private func updateDeadline(now: MonoTime) {
        let us = sfu_dtls_timeout_us(ssl)
        deadline = us < 0 ? .never : now + .init(nanoseconds: Int64(us) * 1000)
    }

    /// Checks the peer's certificate against the SDP fingerprint and exports the SRTP keys
    /// (RFC 5764 section 4.2: client key, server key, client salt, server salt).
    private func finishHandshake() {
        guard let peer = SSL_get1_peer_certificate(ssl) else { return fail("the peer sent no certificate") }
        defer { X509_free(peer) }
        peerFingerprint = DTLSCertificate.fingerprint(of: peer)
        guard let expected = remoteFingerprint else { return fail("no remote fingerprint to check the peer against") }
        guard peerFingerprint == expected else { return fail("the peer's certificate does not match its SDP fingerprint") }
        guard let profile = SRTPProfile(rawValue: UInt16(sfu_dtls_srtp_profile(ssl))) else {
            return fail("no SRTP protection profile was negotiated")
        }
        let k = profile.masterKeyLength
        let s = profile.masterSaltLength
        var material = [UInt8](repeating: 0, count: 2 * (k + s))
        let label = "EXTRACTOR-dtls_srtp"
        guard SSL_export_keying_material(ssl, &material, material.count, label, label.utf8.count, nil, 0, 0) == 1 else {
            return fail("keying material export failed")
        }
        let clientKey = Array(material[0..<k]), serverKey = Array(material[k..<(2 * k)])
        let clientSalt = Array(material[(2 * k)..<(2 * k + s)]), serverSalt = Array(material[(2 * k + s)...])
        let client = SRTPKeyingMaterial(profile: profile, masterKey: clientKey, masterSalt: clientSalt)
        let server = SRTPKeyingMaterial(profile: profile, masterKey: serverKey, masterSalt: serverSalt)
        keys = role == .server ? SRTPKeys(profile: profile, outbound: server, inbound: client)
            : SRTPKeys(profile: profile, outbound: client, inbound: server)
        state = .connected
    }

    private func fail(_ reason: String) {
        state = .failed(reason)
        ERR_clear_error()
    }

    private func drainOutbox() -> [[UInt8]] {
        defer { outbox.removeAll() }
        return outbox
    }

    static func openSSLError(_ what: String) -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "\(what) failed" }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buf, buf.count)
        let message = buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return "\(what) failed: \(String(decoding: message, as: UTF8.self))"
    }
}

public enum DTLSError: Error, Equatable {
    case setup(String)
}
