import NodeIO
import SFU
import WebRTCEdge

/// The client end of one transport on a virtual network: ICE checks, the DTLS client, SRTP both ways,
/// what the node's answer said. Certificates come from a small pool made once per process (generating a
/// P-256 key per transport would dominate a fuzz run).
final class FuzzClient {
    static let certificates: [DTLSCertificate] = (0..<4).map { _ in try! DTLSCertificate(commonName: "fuzz") }
    /// A fingerprint no pooled certificate has: the node's DTLS must refuse the client.
    static let foreignFingerprint = DTLSFingerprint(bytes: [UInt8](repeating: 0xAB, count: 32))
    /// The SDP text of each identity's fingerprint (formatting one costs 32 `String(format:)` calls).
    static let fingerprintTexts = (certificates.map(\.fingerprint) + [foreignFingerprint]).map(\.description)

    var address: TransportAddress
    var ice: ICECredentials
    /// Index into the certificate pool; `certificates.count` means the offer carries a foreign fingerprint.
    var identity: Int
    var checks: ICEControllingClient?
    var nodeFingerprint: DTLSFingerprint?
    var dtls: DTLSEndpoint?
    var tx: SRTPSession?
    var rx: SRTPSession?
    /// The SSRC the answer gave each slot, by mid.
    var slotSSRCs: [String: UInt32] = [:]
    /// Addresses this client nominated with a valid check: the only places media for it may go.
    var nominated: Set<TransportAddress> = []
    /// When each address this client checked from was last answered: the most the node may hold validated.
    var checkedFrom: [TransportAddress: MonoTime] = [:]
    var lastCheck: [UInt8]?
    var lastTransaction: [UInt8]?
    var checkAnswered = false
    var rtpReceived = 0
    var rtcpReceived = 0
    var undecryptable = 0
    var datagramsReceived = 0
    private var scratch = [UInt8](repeating: 0, count: 2048)

    init(address: TransportAddress, ice: ICECredentials, identity: Int) {
        self.address = address
        self.ice = ice
        self.identity = identity
    }

    var certificate: DTLSCertificate { Self.certificates[identity % Self.certificates.count] }
    var fingerprint: String { Self.fingerprintTexts[min(identity, Self.certificates.count)] }

    var connected: Bool { tx != nil && dtls?.state == .connected }

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

    func check(nominate: Bool, transactionID: [UInt8]? = nil) -> [UInt8]? {
        guard let checks else { return nil }
        let tid = transactionID ?? ICEControllingClient.randomTransactionID()
        lastTransaction = tid
        checkAnswered = false
        let c = checks.bindingRequest(nominate: nominate, transactionID: tid)
        lastCheck = c
        return c
    }

    /// The DTLS client's first flight (a new association when there is none).
    func startDTLS(now: MonoTime) -> [[UInt8]] {
        if dtls == nil {
            dtls = try? DTLSEndpoint(role: .client, certificate: certificate, remoteFingerprint: nodeFingerprint)
        }
        guard let dtls, dtls.state == .new else { return [] }
        return dtls.start(now: now)
    }

    /// What the node sent: STUN answers, DTLS (replies returned), SRTP (decrypted and counted).
    func receive(_ d: [UInt8], now: MonoTime) -> [[UInt8]] {
        datagramsReceived += 1
        guard let first = d.first else { return [] }
        switch PacketClass(firstByte: first) {
        case .stun:
            if let tid = lastTransaction, case .success = checks?.check(response: d, transactionID: tid) { checkAnswered = true }
            return []
        case .dtls:
            guard let dtls else { return [] }
            let replies = d.withUnsafeBytes { dtls.receive($0, now: now) }
            if tx == nil, dtls.state == .connected, let k = dtls.keys {
                tx = try? SRTPSession(keys: k.outbound, direction: .outbound)
                rx = try? SRTPSession(keys: k.inbound, direction: .inbound)
            }
            return replies
        case .rtp:
            guard let rx, d.count <= scratch.count else { undecryptable += 1; return [] }
            let control = d.withUnsafeBytes { isRTCP($0) }
            let ok = scratch.withUnsafeMutableBytes { buf -> Bool in
                buf.copyBytes(from: d)
                let r = control ? rx.unprotectRTCP(buf, length: d.count) : rx.unprotectRTP(buf, length: d.count)
                if case .success = r { return true }
                return false
            }
            if !ok { undecryptable += 1 } else if control { rtcpReceived += 1 } else { rtpReceived += 1 }
            return []
        default:
            return []
        }
    }

    /// Protects a plain RTP or RTCP packet; nil before DTLS is done or when libsrtp refuses it.
    func protect(_ plain: [UInt8]) -> [UInt8]? {
        guard let tx, plain.count + SRTPSession.maxOverhead <= scratch.count else { return nil }
        let control = plain.withUnsafeBytes { isRTCP($0) }
        return scratch.withUnsafeMutableBytes { buf -> [UInt8]? in
            buf.copyBytes(from: plain)
            let r = control ? tx.protectRTCP(buf, length: plain.count) : tx.protectRTP(buf, length: plain.count)
            guard case .success(let n) = r else { return nil }
            return Array(buf[0..<n])
        }
    }
}
