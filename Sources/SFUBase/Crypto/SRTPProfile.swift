/// The SRTP protection profiles the node negotiates over DTLS-SRTP (RFC 5764 section 4.1.2, RFC 7714
/// section 14.2), with their master key and salt sizes.
public enum SRTPProfile: UInt16, CaseIterable, Sendable, CustomStringConvertible {
    case aesCM128HmacSHA1_80 = 0x0001
    case aesCM128HmacSHA1_32 = 0x0002
    case aeadAES128GCM = 0x0007
    case aeadAES256GCM = 0x0008

    /// AES-GCM (RFC 7714): a (key, SSRC, index) nonce must never protect two different packets.
    public var isAEAD: Bool { self == .aeadAES128GCM || self == .aeadAES256GCM }

    public var masterKeyLength: Int {
        switch self {
        case .aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32, .aeadAES128GCM: 16
        case .aeadAES256GCM: 32
        }
    }

    /// RFC 3711 uses a 112-bit master salt; RFC 7714 section 12 a 96-bit one.
    public var masterSaltLength: Int {
        switch self {
        case .aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32: 14
        case .aeadAES128GCM, .aeadAES256GCM: 12
        }
    }

    /// The OpenSSL name, as used in `SSL_CTX_set_tlsext_use_srtp`.
    public var description: String {
        switch self {
        case .aesCM128HmacSHA1_80: "SRTP_AES128_CM_SHA1_80"
        case .aesCM128HmacSHA1_32: "SRTP_AES128_CM_SHA1_32"
        case .aeadAES128GCM: "SRTP_AEAD_AES_128_GCM"
        case .aeadAES256GCM: "SRTP_AEAD_AES_256_GCM"
        }
    }
}

/// One direction's master key and salt, as exported from DTLS (RFC 5764 section 4.2).
public struct SRTPKeyingMaterial: Sendable, Equatable {
    public var profile: SRTPProfile
    public var masterKey: [UInt8]
    public var masterSalt: [UInt8]

    /// Measurement only, never negotiated: libsrtp's null cipher and null authentication, so benchmarks can
    /// tell the engine's own cost (and allocations) from the crypto library's.
    @_spi(Measurement) public var nullCipher = false

    public init(profile: SRTPProfile, masterKey: [UInt8], masterSalt: [UInt8]) {
        self.profile = profile
        self.masterKey = masterKey
        self.masterSalt = masterSalt
    }
}
