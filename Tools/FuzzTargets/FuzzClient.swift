import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// The client end of one transport on a virtual network: ICE checks, the DTLS client, SRTP both ways,
/// what the node's answer said. Certificates come from a small pool made once per process (generating a
/// P-256 key per transport would dominate a fuzz run).
final class FuzzClient: VirtualTransportClient {
    static let certificates: [DTLSCertificate] = (0..<4).map { _ in try! DTLSCertificate(commonName: "fuzz") }
    /// A fingerprint no pooled certificate has: the node's DTLS must refuse the client.
    static let foreignFingerprint = DTLSFingerprint(bytes: [UInt8](repeating: 0xAB, count: 32))
    /// The SDP text of each identity's fingerprint (formatting one costs 32 `String(format:)` calls).
    static let fingerprintTexts = (certificates.map(\.fingerprint) + [foreignFingerprint]).map(\.description)

    /// Index into the certificate pool; `certificates.count` means the offer carries a foreign fingerprint.
    var identity: Int
    var nodeFingerprint: DTLSFingerprint?
    /// The SSRC the answer gave each slot, by mid.
    var slotSSRCs: [String: UInt32] = [:]
    /// Addresses this client nominated with a valid check: the only places media for it may go.
    var nominated: Set<TransportAddress> = []
    /// When each address this client checked from was last answered: the most the node may hold validated.
    var checkedFrom: [TransportAddress: MonoTime] = [:]

    init(address: TransportAddress, ice: ICECredentials, identity: Int) {
        self.identity = identity
        super.init(address: address, ice: ice)
    }

    var certificate: DTLSCertificate { Self.certificates[identity % Self.certificates.count] }
    var fingerprint: String { Self.fingerprintTexts[min(identity, Self.certificates.count)] }

    /// Reads the node's answer: its ICE credentials, fingerprint and slot SSRCs. A new transport (`created`,
    /// `replaced`) gets a new DTLS client; a renegotiation or ICE restart keeps the association.
    func accept(_ answer: SessionAnswer, _ sdp: SessionDescription?) {
        guard let sdp, let m = sdp.media.first(where: { $0.port != 0 }),
              let ufrag = m.attribute("ice-ufrag"), let pwd = m.attribute("ice-pwd") else { return }
        checks = ICEControllingClient(local: ice, remote: ICECredentials(ufrag: ufrag, password: pwd))
        nodeFingerprint = m.attribute("fingerprint").flatMap { DTLSFingerprint(sdp: $0) }
        slotSSRCs = [:]
        for m in sdp.media where m.port != 0 {
            if let mid = m.mid, let s = m.ssrcs.first { slotSSRCs[mid] = s }
        }
        if answer.change == .created || answer.change == .replaced {
            dtls = nil
            tx = nil
            rx = nil
            nominated = []
        }
    }

    /// The DTLS client's first flight (a new association when there is none).
    func startDTLS(now: MonoTime) -> [[UInt8]] {
        if dtls == nil {
            dtls = try? DTLSEndpoint(role: .client, certificate: certificate, remoteFingerprint: nodeFingerprint)
        }
        guard let dtls, dtls.state == .new else { return [] }
        return dtls.start(now: now)
    }
}
