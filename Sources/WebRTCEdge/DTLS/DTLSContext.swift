import COpenSSL
import COpenSSLShims
import SFUBase

/// One OpenSSL `SSL_CTX` for every DTLS association of one role, certificate and profile list. A context
/// holds the certificate, key and settings (a few kB, and its creation parses them); a worker with
/// thousands of connections shares one instead of building one per handshake. OpenSSL counts the
/// references each session takes, so the context outlives the last session whatever the release order.
public final class DTLSContext {
    public let role: DTLSEndpoint.Role
    public let certificate: DTLSCertificate
    let raw: OpaquePointer

    public init(role: DTLSEndpoint.Role, certificate: DTLSCertificate,
                profiles: [SRTPProfile] = DTLSEndpoint.defaultProfiles) throws {
        guard let ctx = sfu_dtls_context_new(role == .server ? 1 : 0, certificate.key, certificate.certificate,
                                             profiles.map(\.description).joined(separator: ":")) else {
            throw DTLSError.setup("cannot create the DTLS context")
        }
        self.role = role
        self.certificate = certificate
        raw = ctx
    }

    deinit { SSL_CTX_free(raw) }
}
