import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// The server's side of the session: reading its answers (the first, then a renegotiation's or an ICE
/// restart's), reaching its candidate with ICE checks and keying SRTP through DTLS.
extension LoadClient {
    /// Reads the server's answer to `offer()` (credentials, fingerprint, host candidate, DTLS role) and sends
    /// the first check.
    public func start(answer: String, now: MonoTime) throws {
        let sdp = try SessionDescription.parse(answer)
        readSlots(sdp)
        try connect(to: sdp, now: now)
    }

    /// Reads the node's answer to a later offer on the same transport: the slots it gives, and, after an ICE
    /// restart, its new credentials, which the next check (sent at once) uses. DTLS and SRTP go on.
    public func update(answer: String, now: MonoTime) throws {
        guard checks != nil else { return try start(answer: answer, now: now) }
        let sdp = try SessionDescription.parse(answer)
        readSlots(sdp)
        func find(_ key: String) -> String? { sdp.media.lazy.compactMap { $0.attribute(key) }.first ?? sdp.attribute(key) }
        guard let ufrag = find("ice-ufrag"), let pwd = find("ice-pwd") else { throw LoadError("the answer lacks ICE credentials") }
        let remote = ICECredentials(ufrag: ufrag, password: pwd)
        if remote != remoteICE || checks?.local != ice {
            remoteICE = remote
            checks = ICEControllingClient(local: ice, remote: remote)
            checksSucceededSinceRestart = 0
            sendCheck(now: now)
        }
    }

    /// The answer's slots: each live recvonly-answered m-line's mid, kind and the SSRC the node sends on;
    /// and whether it kept transport-cc (its extension id) and RTX for video (its payload type).
    private func readSlots(_ sdp: SessionDescription) {
        answeredSlots = sdp.media.compactMap { m in
            guard m.port != 0, let mid = m.mid,
                  let ssrc = m.values("ssrc").lazy.compactMap({ $0.split(separator: " ").first.flatMap { UInt32($0) } }).first else { return nil }
            return (mid, m.kind, ssrc)
        }
        let live = sdp.media.filter { $0.port != 0 }
        transportCCExtensionID = profile.transportCC
            ? live.lazy.compactMap { $0.extmaps.first { $0.value == OfferAnswer.transportCCURI }?.key }.first : nil
        rtxPayloadType = live.lazy.filter { $0.kind == "video" }.compactMap { $0.rtpmaps.first { $0.value.name == "rtx" }?.key }.first
    }

    /// The remote's transport from its description (media level first, then session level), the DTLS role
    /// its `a=setup` leaves this client (`active` there: this client is the server), and the first check.
    func connect(to sdp: SessionDescription, now: MonoTime) throws {
        func find(_ key: String) -> String? { sdp.media.lazy.compactMap { $0.attribute(key) }.first ?? sdp.attribute(key) }
        guard let ufrag = find("ice-ufrag"), let pwd = find("ice-pwd"), let fp = find("fingerprint").flatMap(DTLSFingerprint.init(sdp:)),
              let candidate = sdp.media.lazy.flatMap({ $0.values("candidate") }).first(where: {
                  let f = $0.split(separator: " ")
                  guard f.count >= 6, f[4].contains(":") == profile.ipv6 else { return false }  // the family asked for
                  return profile.overTCP ? $0.lowercased().contains(" tcp ") && $0.contains("tcptype passive") : $0.lowercased().contains(" udp ")
              }) else {
            throw LoadError("the remote description lacks ICE credentials, fingerprint or a \(profile.overTCP ? "passive TCP" : "UDP") candidate")
        }
        let f = candidate.split(separator: " ")
        guard f.count >= 6, let port = UInt16(f[5]), let address = TransportAddress(f[4].contains(":") ? "[\(f[4])]:\(port)" : "\(f[4]):\(port)") else {
            throw LoadError("cannot read the candidate '\(candidate)'")
        }
        if profile.overTCP {
            // RFC 6544: this client is the active end; the node's candidate is passive.
            if stream == nil { stream = try TCPStream(connect: address) }
            node = address.over(tcp: true)
        } else {
            node = address
        }
        remoteICE = ICECredentials(ufrag: ufrag, password: pwd)
        checks = ICEControllingClient(local: ice, remote: ICECredentials(ufrag: ufrag, password: pwd))
        let role: DTLSEndpoint.Role = find("setup") == "active" ? .server : .client
        dtls = try DTLSEndpoint(role: role, certificate: certificate, remoteFingerprint: fp, profiles: Self.srtpProfiles,
                                initialRetransmitTimeout: .milliseconds(200))
        state = .checking
        sendCheck(now: now)
    }

    /// Sends one datagram to the node: on the TCP connection when the client uses one, else from its socket.
    @discardableResult
    func transmit(_ bytes: [UInt8], to: TransportAddress? = nil) -> Bool {
        if let stream { return stream.send(bytes) }
        guard let to = to ?? node else { return false }
        return socket.send(bytes, to: to)
    }

    /// Reads what waits, from the TCP connection or the socket; nil or 0 when nothing does.
    func receiveWaiting() -> Int? {
        if let stream { return stream.receive(into: rxBatch) }
        return try? socket.receive(into: rxBatch)
    }

    /// AEAD_AES_128_GCM first, as the benchmark targets measure it; AES-CM for servers without GCM.
    static let srtpProfiles: [SRTPProfile] = [.aeadAES128GCM, .aesCM128HmacSHA1_80]

    func sendCheck(now: MonoTime) {
        guard let checks, let node else { return }
        let tid = ICEControllingClient.randomTransactionID()
        pendingCheck = tid
        let request = checks.bindingRequest(nominate: true, transactionID: tid)
        lastCheckSent = request
        transmit(request)
        nextCheckAt = now + (state == .connected ? consentInterval : .milliseconds(200))
    }
}
