import COpenSSL
import COpenSSLShims

/// A certificate fingerprint as SDP carries it (RFC 8122 section 5): "sha-256 AB:CD:...".
public struct DTLSFingerprint: Equatable, Sendable, CustomStringConvertible {
    public var algorithm: String
    public var bytes: [UInt8]

    public init(algorithm: String = "sha-256", bytes: [UInt8]) {
        self.algorithm = algorithm.lowercased()
        self.bytes = bytes
    }

    /// Parses the value of an `a=fingerprint:` line; only sha-256 is accepted (RFC 8827 section 6.5 requires
    /// it; weaker hashes are refused).
    public init?(sdp value: String) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "sha-256" else { return nil }
        let octets = parts[1].split(separator: ":")
        guard octets.count == 32 else { return nil }
        var b: [UInt8] = []
        for o in octets {
            guard o.count == 2, let v = UInt8(o, radix: 16) else { return nil }
            b.append(v)
        }
        self.init(bytes: b)
    }

    public var description: String {
        "\(algorithm) " + bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
    }
}

/// The node's DTLS identity: an ECDSA P-256 key and self-signed certificate, generated at start (RFC 8827
/// section 6.5: the fingerprint in SDP, not a CA, authenticates it). Freed with the object.
public final class DTLSCertificate: @unchecked Sendable {
    let key: OpaquePointer
    let certificate: OpaquePointer
    public let fingerprint: DTLSFingerprint

    public enum Failure: Error, Equatable {
        case generationFailed
        /// The PEM text held no readable private key or certificate.
        case unreadablePEM
        /// The private key is not the certificate's.
        case keyDoesNotMatchCertificate
    }

    public init(commonName: String = "sfu", validDays: Int32 = 30) throws(Failure) {
        var k: OpaquePointer?
        var c: OpaquePointer?
        guard sfu_generate_p256_certificate(&k, &c, commonName, validDays) == 1, let k, let c else { throw .generationFailed }
        key = k
        certificate = c
        fingerprint = Self.fingerprint(of: c)!
    }

    /// Loads a key and certificate from PEM (configuration). The pair must match; any key type OpenSSL reads
    /// works, though browsers expect ECDSA P-256 or RSA.
    public init(keyPEM: String, certificatePEM: String) throws(Failure) {
        var k: OpaquePointer?
        var c: OpaquePointer?
        guard sfu_load_pem(keyPEM, Int32(keyPEM.utf8.count), certificatePEM, Int32(certificatePEM.utf8.count), &k, &c) == 1,
              let k, let c else { throw .unreadablePEM }
        guard sfu_key_matches_certificate(k, c) == 1 else {
            EVP_PKEY_free(k)
            X509_free(c)
            throw .keyDoesNotMatchCertificate
        }
        key = k
        certificate = c
        fingerprint = Self.fingerprint(of: c)!
    }

    /// The key (PKCS#8) and certificate as PEM, to save a generated identity.
    public var pem: (key: String, certificate: String) {
        var buf = [CChar](repeating: 0, count: 16_384)
        let kn = sfu_key_pem(key, &buf, Int32(buf.count))
        let keyText = String(decoding: buf[0..<max(0, Int(kn))].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let cn = sfu_cert_pem(certificate, &buf, Int32(buf.count))
        let certText = String(decoding: buf[0..<max(0, Int(cn))].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (keyText, certText)
    }

    deinit {
        EVP_PKEY_free(key)
        X509_free(certificate)
    }

    static func fingerprint(of x509: OpaquePointer) -> DTLSFingerprint? {
        var digest = [UInt8](repeating: 0, count: 32)
        guard sfu_certificate_sha256(x509, &digest) == 1 else { return nil }
        return DTLSFingerprint(bytes: digest)
    }
}

import Foundation
