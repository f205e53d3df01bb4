import CSRTP

/// libsrtp's process-wide initialisation, done once (`srtp_init` is not idempotent-safe to race).
enum LibSRTP {
    static let initialised: Bool = srtp_init() == srtp_err_status_ok
}

/// An SRTP/SRTCP context for one direction of one transport (RFC 3711), wrapping a libsrtp session.
///
/// Inbound sessions accept any SSRC (`ssrc_any_inbound`) with a 1024-packet replay window; outbound sessions
/// allow repeated sequence numbers so NACKed packets can be protected again. The session is freed when the
/// object is released. Not thread-safe: a session belongs to the one worker that owns its connection.
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
        var keyAndSalt = keys.masterKey + keys.masterSalt
        var created: srtp_t?
        let status = keyAndSalt.withUnsafeMutableBufferPointer { buf -> srtp_err_status_t in
            policy.key = buf.baseAddress
            return srtp_create(&created, &policy)
        }
        // Wipe our copy of the key; libsrtp keeps its own derived session keys.
        for i in keyAndSalt.indices { keyAndSalt[i] = 0 }
        guard status == srtp_err_status_ok, let created else { throw .createFailed(code: Int32(status.rawValue)) }
        session = created
    }

    deinit {
        if let session { srtp_dealloc(session) }
    }

    /// Encrypts and authenticates the RTP packet of `length` bytes at the start of `buffer`, in place.
    /// Returns the protected length. `buffer` needs `maxOverhead` spare bytes past `length`.
    public func protectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Result<Int, DropReason> {
        run(buffer, length, growing: true, srtp_protect)
    }

    /// Checks and decrypts an SRTP packet in place; returns the plain RTP length.
    public func unprotectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Result<Int, DropReason> {
        run(buffer, length, growing: false, srtp_unprotect)
    }

    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Result<Int, DropReason> {
        run(buffer, length, growing: true, srtp_protect_rtcp)
    }

    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Result<Int, DropReason> {
        run(buffer, length, growing: false, srtp_unprotect_rtcp)
    }

    /// Protecting appends a trailer, so it needs `maxOverhead` spare bytes; unprotecting only shrinks.
    private func run(
        _ buffer: UnsafeMutableRawBufferPointer, _ length: Int, growing: Bool,
        _ op: (srtp_t?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> srtp_err_status_t
    ) -> Result<Int, DropReason> {
        guard length >= 4 else { return .failure(.truncated) }
        guard length + (growing ? SRTPSession.maxOverhead : 0) <= buffer.count else { return .failure(.tooLarge) }
        var len = Int32(length)
        let status = op(session, buffer.baseAddress, &len)
        switch status {
        case srtp_err_status_ok: return .success(Int(len))
        case srtp_err_status_auth_fail: return .failure(.srtpAuthFailed)
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: return .failure(.srtpReplay)
        case srtp_err_status_bad_param: return .failure(.truncated)
        default: return .failure(.srtpOther)
        }
    }
}
