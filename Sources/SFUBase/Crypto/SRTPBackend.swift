import CSRTP
import Glibc

/// Which crypto libsrtp runs on, and what a protect costs with it: Debian's libsrtp2 is built on NSS, whose
/// AES goes through the PKCS#11 softoken on every packet (3-5x slower than OpenSSL's, `limits.md`); the
/// README's command links libsrtp built on OpenSSL instead. The node logs this at start-up, exports it in
/// `/metrics`, and warns when it runs on the slow one, so an operator knows which they run.
public struct SRTPBackend: Sendable, Equatable {
    /// "openssl" or "nss".
    public var name: String
    public var version: String
    /// Nanoseconds per AEAD_AES_128_GCM protect of a 1200-byte packet, measured once.
    public var protectNanoseconds: Double

    public var isSlow: Bool { name == "nss" }

    /// The backend this process links: NSS when its initialisation symbol is loaded (Debian's libsrtp2
    /// links libnss3), OpenSSL otherwise.
    public static let current: SRTPBackend = {
        let nss = dlsym(nil, "NSS_Init") != nil  // RTLD_DEFAULT (a null handle on glibc): every loaded object
        let version = String(cString: srtp_get_version_string())
        return SRTPBackend(name: nss ? "nss" : "openssl", version: version, protectNanoseconds: measure())
    }()

    /// Protects 2000 packets on a session of random keys and times it on CLOCK_MONOTONIC (the engine itself
    /// reads no clock; this runs once, at start-up).
    static func measure() -> Double {
        let key = SRTPKeyingMaterial(profile: .aeadAES128GCM, masterKey: [UInt8](repeating: 7, count: 16),
                                     masterSalt: [UInt8](repeating: 9, count: 12))
        guard let session = try? SRTPSession(keys: key, direction: .outbound) else { return .nan }
        var buf = [UInt8](repeating: 0, count: 1200 + SRTPSession.maxOverhead)
        buf[0] = 0x80; buf[1] = 96; buf[11] = 1
        var t0 = timespec(), t1 = timespec()
        let n = 2000
        clock_gettime(CLOCK_MONOTONIC, &t0)
        buf.withUnsafeMutableBytes { raw in
            for i in 0..<n {
                raw[2] = UInt8(truncatingIfNeeded: i >> 8); raw[3] = UInt8(truncatingIfNeeded: i)
                _ = session.protectRTP(raw, length: 1200)
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1)
        let ns = Double(t1.tv_sec - t0.tv_sec) * 1e9 + Double(t1.tv_nsec - t0.tv_nsec)
        return ns / Double(n)
    }
}
