import SFUBase

/// What the publish and subscribe answers share: the codec an offered m-line leads to (with its RED or RTX),
/// the feedback it offers and the source it shows, and the answer's own m-lines: accepted, rejected, and the
/// BUNDLE group over them.
extension OfferAnswer {
    /// Whether a video m-line is a screen share: the signaling server named its mid (what browser apps do:
    /// browsers give media streams random ids), or the offer marks it with `a=content:slides` (RFC 4796
    /// section 5: presentation content) or with a media stream id that begins with "screen" (`a=msid`,
    /// RFC 8830 section 2; SDKs and aiortc choose their stream ids).
    static func source(of m: MediaDescription, screenShareMids: Set<String>) -> VideoSource {
        if let mid = m.mid, screenShareMids.contains(mid) { return .screen }
        if m.values("content").contains(where: { $0.split(separator: ",").contains("slides") }) { return .screen }
        let streams = m.values("msid").compactMap { $0.split(separator: " ").first }
            + m.values("ssrc").compactMap { v -> Substring? in
                guard let r = v.range(of: " msid:") else { return nil }
                return v[r.upperBound...].split(separator: " ").first
            }
        return streams.contains { $0.lowercased().hasPrefix("screen") } ? .screen : .camera
    }

    struct CodecChoice {
        var codec: Codec
        var pt: UInt8
        var rtx: UInt8?
        var rtpmap: String
        var fmtp: String?
        /// Opus with redundancy (RFC 2198) under this payload type, when offered for this Opus.
        var red: UInt8?
        /// H.264: the profile and level its fmtp declares.
        var h264: H264ProfileLevelID?
    }

    /// Opus/48000/2 (and RED over it, RFC 2198) for audio; for video the first format `videoFormats` takes
    /// (and its RTX, RFC 4588). ULPFEC and the rest are not accepted.
    static func chooseCodec(_ m: MediaDescription) -> CodecChoice? {
        if m.kind == "video" { return videoFormats(m, limit: 1).first }
        let maps = m.rtpmaps
        let fmtps = m.fmtps
        for f in m.formats {
            guard let pt = UInt8(f), let map = maps[pt] else { continue }
            if m.kind == "audio", map.name == "opus", map.clock == 48_000 {
                let red = maps.first { $0.value.name == "red" && $0.value.clock == 48_000 && fmtps[$0.key] == "\(pt)/\(pt)" }?.key
                return CodecChoice(codec: .opus, pt: pt, rtx: nil, rtpmap: "opus/48000/2", fmtp: fmtps[pt], red: red)
            }
        }
        return nil
    }

    /// The rtcp-fb values an m-line offers for a payload type (or for every one, `*`).
    static func feedback(_ m: MediaDescription, _ pt: UInt8) -> Set<String> {
        var out = Set<String>()
        for v in m.values("rtcp-fb") {
            guard let space = v.firstIndex(of: " ") else { continue }
            let target = v[..<space]
            if target == "*" || target == "\(pt)" { out.insert(String(v[v.index(after: space)...])) }
        }
        return out
    }

    /// The session level every answer starts from: a new origin, `a=ice-lite` and `a=msid-semantic: WMS *`.
    static func baseAnswer() -> SessionDescription {
        var a = SessionDescription()
        a.origin = "- \(UInt32.random(in: 1...UInt32.max)) 1 IN IP4 0.0.0.0"
        a.attributes = [SDPAttribute("ice-lite"), SDPAttribute("msid-semantic", " WMS *")]
        return a
    }

    /// An audio or video m-line the client keeps but does not use now: inactive, or only flowing the other
    /// way (a sending connection's recvonly line, a receiving connection's sendonly one).
    static func pausedMedia(_ m: MediaDescription, receiving: Bool = false) -> Bool {
        guard m.kind == "audio" || m.kind == "video", m.isLive else { return false }
        return m.direction == .inactive || m.direction == (receiving ? .sendonly : .recvonly)
    }

    static func rejected(_ m: MediaDescription) -> MediaDescription {
        var r = MediaDescription(kind: m.kind, port: 0, proto: m.proto, formats: m.formats.isEmpty ? ["0"] : m.formats)
        r.connection = "IN IP4 0.0.0.0"
        if let mid = m.mid { r.attributes.append(SDPAttribute("mid", mid)) }
        r.attributes.append(SDPAttribute("inactive"))
        return r
    }

    static func acceptedMedia(_ m: MediaDescription, codecs: [CodecChoice], direction: String, local: LocalTransport,
                              first: Bool) -> MediaDescription {
        let port = local.candidates.first.map { Int($0.port) } ?? 9
        var formats: [String] = []
        for codec in codecs {
            formats.append("\(codec.pt)")
            // RED first for a publisher, so a browser sends Opus with redundancy; the node sends either.
            if let red = codec.red { if direction == "recvonly" { formats.insert("\(red)", at: 0) } else { formats.append("\(red)") } }
            if let rtx = codec.rtx { formats.append("\(rtx)") }
        }
        var a = MediaDescription(kind: m.kind, port: port, proto: "UDP/TLS/RTP/SAVPF", formats: formats)
        a.connection = "IN IP4 " + (local.candidates.first.flatMap { if case .v4 = $0.ip { $0.host } else { nil } } ?? "0.0.0.0")
        a.attributes = [
            SDPAttribute("mid", m.mid ?? ""), SDPAttribute(direction),
            SDPAttribute("ice-ufrag", local.ice.ufrag), SDPAttribute("ice-pwd", local.ice.password),
            SDPAttribute("fingerprint", local.fingerprint.description), SDPAttribute("setup", "passive"),
            SDPAttribute("rtcp-mux"),
        ]
        if m.has("rtcp-rsize") { a.attributes.append(SDPAttribute("rtcp-rsize")) }
        for codec in codecs {
            a.attributes.append(SDPAttribute("rtpmap", "\(codec.pt) \(codec.rtpmap)"))
            // The offer's own fmtp (H.264's profile-level-id and packetization-mode): RFC 6184 section 8.2.2.
            if let f = codec.fmtp { a.attributes.append(SDPAttribute("fmtp", "\(codec.pt) \(f)")) }
            if let red = codec.red {
                a.attributes.append(SDPAttribute("rtpmap", "\(red) red/48000/2"))
                a.attributes.append(SDPAttribute("fmtp", "\(red) \(codec.pt)/\(codec.pt)"))
            }
            if let rtx = codec.rtx {
                a.attributes.append(SDPAttribute("rtpmap", "\(rtx) rtx/90000"))
                a.attributes.append(SDPAttribute("fmtp", "\(rtx) apt=\(codec.pt)"))
            }
        }
        for (i, c) in local.candidates.enumerated() {
            a.attributes.append(SDPAttribute("candidate", candidateLine(c, index: i)))
        }
        a.attributes.append(SDPAttribute("end-of-candidates"))
        return a
    }

    /// One host candidate of the answer (component 1). RFC 8445 section 5.1.2: host type preference 126, local
    /// preference by order. A TCP candidate is passive (the node accepts, the client connects: RFC 6544
    /// section 4.5), its local preference's direction bits 4 for passive (section 4.2), so every UDP candidate
    /// outranks it and a client uses TCP only when UDP fails.
    static func candidateLine(_ c: TransportAddress, index i: Int) -> String {
        if c.isTCP {
            let local = (4 << 13) | (8191 - min(i, 8191))
            return "\(i + 1) 1 tcp \((126 << 24) | (local << 8) | 255) \(c.host) \(c.port) typ host tcptype passive"
        }
        return "\(i + 1) 1 udp \((126 << 24) | ((65535 - i) << 8) | 255) \(c.host) \(c.port) typ host"
    }

    /// The answer's BUNDLE group holds the accepted mids, in order.
    static func finishBundle(_ answer: inout SessionDescription) {
        let mids = answer.media.filter { $0.port != 0 }.compactMap(\.mid)
        answer.attributes.insert(SDPAttribute("group", "BUNDLE " + mids.joined(separator: " ")), at: 0)
    }
}

extension MediaDescription {
    /// Not rejected: a non-zero port, or port 0 with `a=bundle-only` (RFC 8843 section 7.5: an offerer, such as
    /// Firefox, sends bundled m-lines other than the first that way).
    var isLive: Bool { port != 0 || has("bundle-only") }
}
