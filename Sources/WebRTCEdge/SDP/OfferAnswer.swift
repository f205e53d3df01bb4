import SFUBase

/// What the node puts in every answer about its own transport.
public struct LocalTransport: Sendable {
    public var ice: ICECredentials
    public var fingerprint: DTLSFingerprint
    /// Host candidates: the worker's address, then any announced addresses (a node behind NAT or with a
    /// public IP, as mediasoup's announced address).
    public var candidates: [TransportAddress]

    public init(ice: ICECredentials, fingerprint: DTLSFingerprint, candidates: [TransportAddress]) {
        self.ice = ice
        self.fingerprint = fingerprint
        self.candidates = candidates
    }
}

/// What the client's offer says about its transport.
public struct RemoteTransport: Sendable, Equatable {
    public var ufrag: String
    public var password: String
    public var fingerprint: DTLSFingerprint
    /// Addresses the offer lists as `typ relay` candidates (RFC 8445 section 5.1.1.2: the client's TURN
    /// allocations), at most 16: a check from one of them means the client reaches the node through TURN.
    public var relayCandidates: [TransportAddress] = []

    public init(ufrag: String, password: String, fingerprint: DTLSFingerprint, relayCandidates: [TransportAddress] = []) {
        self.ufrag = ufrag
        self.password = password
        self.fingerprint = fingerprint
        self.relayCandidates = relayCandidates
    }

    /// How a pair the client nominated from `address` reaches the node.
    public func path(from address: TransportAddress) -> TransportPath {
        TransportPath(carrier: address.isTCP ? .tcp : .udp, family: address.family == "ipv6" ? .ipv6 : .ipv4,
                      relayed: relayCandidates.contains(address.over(tcp: false)))
    }
}

/// JSEP offer/answer for the node's two kinds of connection (RFC 8829 subset, BUNDLE RFC 8843, rtcp-mux
/// RFC 5761). The node is ICE-lite and the DTLS server (`a=setup:passive`); every accepted m-line is bundled.
///
/// This file holds what both answers read of an offer's transport and shape; the answers are in
/// `OfferAnswer+Publish` and `OfferAnswer+Subscribe`, and the m-lines they share (codec choice, feedback,
/// accepted and rejected m-lines, the BUNDLE group) in `OfferAnswer+MediaLines`.
public enum OfferAnswer {
    public static let audioLevelURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"
    public static let midURI = "urn:ietf:params:rtp-hdrext:sdes:mid"
    public static let absSendTimeURI = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
    public static let transportCCURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

    /// Live audio and video m-lines of an offer that send (`sending`) or receive: what a publish or a
    /// subscription asks the node to hold, counted before anything is built for it.
    public static func mediaCount(_ offer: SessionDescription, sending: Bool) -> Int {
        offer.media.filter { m in
            (m.kind == "audio" || m.kind == "video") && m.isLive
                && (sending ? m.direction == .sendonly || m.direction == .sendrecv : m.direction == .recvonly || m.direction == .sendrecv)
        }.count
    }

    /// The client's ICE credentials and DTLS fingerprint: what tells a renegotiation (the same), an ICE
    /// restart (new credentials) and a new transport (a new fingerprint) apart.
    public static func remoteTransport(_ offer: SessionDescription) throws(SDPError) -> RemoteTransport {
        func find(_ key: String) -> String? {
            offer.attribute(key) ?? offer.media.lazy.compactMap { $0.attribute(key) }.first
        }
        guard let ufrag = find("ice-ufrag"), let pwd = find("ice-pwd") else {
            throw SDPError(line: 0, text: "", reason: "missing a=ice-ufrag or a=ice-pwd")
        }
        guard (4...256).contains(ufrag.count), (22...256).contains(pwd.count) else {
            throw SDPError(line: 0, text: "a=ice-ufrag:\(ufrag)", reason: "ICE ufrag must be 4-256 and password 22-256 characters (RFC 8839)")
        }
        let prints = offer.attributes.filter { $0.key == "fingerprint" } + offer.media.flatMap { $0.attributes.filter { $0.key == "fingerprint" } }
        guard let fingerprint = prints.lazy.compactMap({ DTLSFingerprint(sdp: $0.value ?? "") }).first else {
            throw SDPError(line: 0, text: "", reason: "no a=fingerprint with sha-256")
        }
        let setup = find("setup") ?? "actpass"
        guard setup == "actpass" || setup == "active" else {
            throw SDPError(line: 0, text: "a=setup:\(setup)", reason: "the node is the DTLS server: the offer must be actpass or active")
        }
        return RemoteTransport(ufrag: ufrag, password: pwd, fingerprint: fingerprint, relayCandidates: relayCandidates(offer))
    }

    /// The offer's `typ relay` candidates' addresses (UDP relays: TURN relays to the node over UDP whatever
    /// the client's leg to TURN is), at most 16; unreadable ones are skipped.
    static func relayCandidates(_ offer: SessionDescription) -> [TransportAddress] {
        var found: [TransportAddress] = []
        for m in offer.media {
            for c in m.values("candidate") where found.count < 16 {
                // foundation component transport priority address port "typ" type ...
                let f = c.split(separator: " ", omittingEmptySubsequences: true)
                guard f.count >= 8, f[6] == "typ", f[7] == "relay", f[2].lowercased() == "udp", let port = UInt16(f[5]) else { continue }
                let host = f[4].contains(":") ? "[\(f[4])]:\(port)" : "\(f[4]):\(port)"
                if let a = TransportAddress(host), !found.contains(a) { found.append(a) }
            }
        }
        return found
    }

    /// Every m-line the node accepts rides the one transport: it is in the offer's BUNDLE group and muxes RTCP.
    static func requireBundledAndMuxed(_ m: MediaDescription, _ offer: SessionDescription) throws(SDPError) {
        guard let mid = m.mid, offer.bundleMids?.contains(mid) == true else {
            throw SDPError(line: m.lineNumber, text: "m=\(m.kind)", reason: "every m-line must be in the BUNDLE group (RFC 8843)")
        }
        guard m.has("rtcp-mux") else {
            throw SDPError(line: m.lineNumber, text: "m=\(m.kind)", reason: "a=rtcp-mux is required (RFC 5761)")
        }
    }
}
