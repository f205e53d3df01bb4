import CSRTP

/// libsrtp's process-wide initialisation, done once (`srtp_init` is not idempotent-safe to race).
enum LibSRTP {
    static let initialised: Bool = srtp_init() == srtp_err_status_ok
}

/// An SRTP/SRTCP context for one direction of one transport (RFC 3711), wrapping libsrtp sessions.
///
/// Inbound sessions accept any SSRC (`ssrc_any_inbound`) with a 1024-packet replay window; outbound sessions
/// allow repeated sequence numbers so NACKed packets can be protected again. Sessions are freed when the
/// object is released. Not thread-safe: a session belongs to the one worker that owns its connection.
///
/// Outbound, each SSRC gets a libsrtp session of its own (up to `dedicatedLimit`, then a shared one): libsrtp
/// finds a packet's stream by walking a linked list of large structures, and a subscriber's connection
/// carries one stream per slot; with a hundred subscribers that walk missed the cache on every hop: 6.4 % of
/// the node's CPU in a 2 x 60-subscriber video profile, 2.2 % with one stream per session (plus 1.7 % to
/// find the session). Keys and SRTCP indexes stay per SSRC, as RFC 3711 section 3.2.3 keeps them per stream.
public final class SRTPSession {
    public enum Direction: Sendable { case inbound, outbound }

    public enum SetupError: Error, Equatable {
        case libraryInitFailed
        case badKeyLength(expected: Int, got: Int)
        case createFailed(code: Int32)
    }

    public let profile: SRTPProfile
    public let direction: Direction
    private var session: srtp_t?
    /// Outbound: one session per SSRC seen, searched in a small contiguous array.
    private var dedicated: [(ssrc: UInt32, session: srtp_t)] = []
    private var policy = srtp_policy_t()
    private var keyAndSalt: [UInt8] = []
    public static let dedicatedLimit = 32
    /// The last SSRC protected and its session: a video frame's packets go out back to back.
    private var lastSSRC: UInt32 = 0
    private var lastSession: srtp_t?
    private var dedicatedFailed = false
    var dedicatedSessions: Int { dedicated.count }

    /// Largest number of bytes protect may append (tag, plus the 4-byte SRTCP index). Buffers passed to the
    /// protect functions must have this much room past the packet.
    public static let maxOverhead = 144 + 4  // SRTP_MAX_TRAILER_LEN (libsrtp may write up to it) + SRTCP index

    public init(keys: SRTPKeyingMaterial, direction: Direction, replayWindow: Int = 1024) throws(SetupError) {
        guard LibSRTP.initialised else { throw .libraryInitFailed }
        let profile = keys.profile
        guard keys.masterKey.count == profile.masterKeyLength else {
            throw .badKeyLength(expected: profile.masterKeyLength, got: keys.masterKey.count)
        }
        guard keys.masterSalt.count == profile.masterSaltLength else {
            throw .badKeyLength(expected: profile.masterSaltLength, got: keys.masterSalt.count)
        }
        self.profile = profile
        self.direction = direction
        var policy = srtp_policy_t()
        switch profile {
        case .aesCM128HmacSHA1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aesCM128HmacSHA1_32:
            srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)  // RFC 5764 section 4.1.2: SRTCP keeps the 80-bit tag
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aeadAES256GCM:
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtcp)
        }
        if keys.nullCipher {
            srtp_crypto_policy_set_null_cipher_hmac_null(&policy.rtp)
            srtp_crypto_policy_set_null_cipher_hmac_null(&policy.rtcp)
        }
        policy.ssrc.type = direction == .inbound ? ssrc_any_inbound : ssrc_any_outbound
        policy.window_size = UInt(replayWindow)
        policy.allow_repeat_tx = direction == .outbound ? 1 : 0
        keyAndSalt = keys.masterKey + keys.masterSalt
        self.policy = policy
        var created: srtp_t?
        let status = Self.create(&created, policy: &policy, key: &keyAndSalt)
        if direction == .inbound { wipeKey() }  // libsrtp keeps its own derived session keys
        guard status == srtp_err_status_ok, let created else { throw .createFailed(code: Int32(status.rawValue)) }
        session = created
    }

    deinit {
        if let session { srtp_dealloc(session) }
        for d in dedicated { srtp_dealloc(d.session) }
        wipeKey()
    }

    private func wipeKey() {
        for i in keyAndSalt.indices { keyAndSalt[i] = 0 }
        keyAndSalt = []
    }

    private static func create(_ out: inout srtp_t?, policy: inout srtp_policy_t, key: inout [UInt8]) -> srtp_err_status_t {
        key.withUnsafeMutableBufferPointer { buf -> srtp_err_status_t in
            policy.key = buf.baseAddress
            defer { policy.key = nil }
            return srtp_create(&out, &policy)
        }
    }

    /// The session that protects `ssrc`'s packets: its own, created on first use, or the shared one past
    /// the limit.
    private func outboundSession(_ ssrc: UInt32) -> srtp_t? {
        if ssrc == lastSSRC, let lastSession { return lastSession }
        for d in dedicated where d.ssrc == ssrc {
            lastSSRC = ssrc
            lastSession = d.session
            return d.session
        }
        guard dedicated.count < Self.dedicatedLimit, !dedicatedFailed else { return session }
        var p = policy
        p.ssrc.type = ssrc_specific
        p.ssrc.value = ssrc
        var created: srtp_t?
        guard Self.create(&created, policy: &p, key: &keyAndSalt) == srtp_err_status_ok, let created else {
            dedicatedFailed = true  // the shared session serves from here on: no retry per packet
            return session
        }
        dedicated.append((ssrc, created))
        lastSSRC = ssrc
        lastSession = created
        return created
    }

    /// Forgets an inbound SSRC's stream (its track ended): libsrtp keeps one per SSRC it authenticated, in a
    /// list that would otherwise only grow. A packet of that SSRC later starts a fresh stream.
    public func removeStream(ssrc: UInt32) {
        guard direction == .inbound, let session else { return }
        _ = srtp_remove_stream(session, ssrc.bigEndian)
    }

    /// Encrypts and authenticates the RTP packet of `length` bytes at the start of `buffer`, in place.
    /// Returns the protected length. `buffer` needs `maxOverhead` spare bytes past `length`.
    public func protectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Result<Int, DropReason> {
        run(buffer, length, growing: true, ssrcOffset: 8, srtp_protect)
    }

    /// Checks and decrypts an SRTP packet in place; returns the plain RTP length.
    public func unprotectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Result<Int, DropReason> {
        run(buffer, length, growing: false, srtp_unprotect)
    }

    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Result<Int, DropReason> {
        run(buffer, length, growing: true, ssrcOffset: 4, srtp_protect_rtcp)
    }

    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Result<Int, DropReason> {
        run(buffer, length, growing: false, srtp_unprotect_rtcp)
    }

    /// Protecting appends a trailer, so it needs `maxOverhead` spare bytes; unprotecting only shrinks. Outbound,
    /// the SSRC at `ssrcOffset` (RTP: byte 8; SRTCP: the first packet's sender, byte 4) picks the session.
    private func run(
        _ buffer: UnsafeMutableRawBufferPointer, _ length: Int, growing: Bool, ssrcOffset: Int? = nil,
        _ op: (srtp_t?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> srtp_err_status_t
    ) -> Result<Int, DropReason> {
        guard length >= 4 else { return .failure(.truncated) }
        guard length + (growing ? SRTPSession.maxOverhead : 0) <= buffer.count else { return .failure(.tooLarge) }
        var len = Int32(length)
        var target = session
        if direction == .outbound, let at = ssrcOffset, length >= at + 4 {
            target = outboundSession(UnsafeRawBufferPointer(buffer).u32(at))
        }
        let status = op(target, buffer.baseAddress, &len)
        switch status {
        case srtp_err_status_ok: return .success(Int(len))
        case srtp_err_status_auth_fail: return .failure(.srtpAuthFailed)
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: return .failure(.srtpReplay)
        case srtp_err_status_bad_param: return .failure(.truncated)
        default: return .failure(.srtpOther)
        }
    }
}
