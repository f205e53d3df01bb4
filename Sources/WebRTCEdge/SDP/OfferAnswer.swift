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

    public init(ufrag: String, password: String, fingerprint: DTLSFingerprint) {
        self.ufrag = ufrag
        self.password = password
        self.fingerprint = fingerprint
    }
}

/// JSEP offer/answer for the node's two kinds of connection (RFC 8829 subset, BUNDLE RFC 8843, rtcp-mux
/// RFC 5761). The node is ICE-lite and the DTLS server (`a=setup:passive`); every accepted m-line is bundled.
public enum OfferAnswer {
    public static let audioLevelURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"
    public static let midURI = "urn:ietf:params:rtp-hdrext:sdes:mid"
    public static let absSendTimeURI = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
    public static let transportCCURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

    public struct Publish: Sendable {
        public var answer: SessionDescription
        public var tracks: [TrackDescription]
        public var remote: RemoteTransport
    }

    public struct Subscribe: Sendable {
        public var answer: SessionDescription
        public var slots: [SlotDescription]
        public var remote: RemoteTransport
    }

    /// Answers a client's sending connection: accepts one Opus m-line and one video m-line in the first of
    /// VP8, VP9 and H.264 (packetization-mode 1) the client lists (with its RTX and fmtp), binds their SSRCs
    /// to tracks, rejects everything else (port 0). A second video m-line is accepted when it is a screen
    /// share (`source`): its mid is in `screenShareMids` (the signaling server says so), or the offer marks it.
    public static func answerPublish(_ offerText: String, local: LocalTransport, screenShareMids: Set<String> = []) throws(SDPError) -> Publish {
        try answerPublish(SessionDescription.parse(offerText), local: local, screenShareMids: screenShareMids)
    }

    public static func answerPublish(_ offer: SessionDescription, local: LocalTransport,
                                     screenShareMids: Set<String> = []) throws(SDPError) -> Publish {
        let remote = try remoteTransport(offer)
        var answer = baseAnswer(offer, local: local)
        var tracks: [TrackDescription] = []
        var refusals: [String] = []
        for m in offer.media {
            let kind = m.kind
            let source = kind == "video" ? source(of: m, screenShareMids: screenShareMids) : .camera
            guard (kind == "audio" || kind == "video"), m.isLive, m.direction == .sendonly || m.direction == .sendrecv,
                  !tracks.contains(where: { $0.codec.kind.rawValue == kind && $0.source == source }) else {
                answer.media.append(rejected(m))
                continue
            }
            try requireBundledAndMuxed(m, offer)
            guard var codec = chooseCodec(m) else {
                if kind == "video" { refusals.append(videoRefusal(m)) }
                answer.media.append(rejected(m))
                continue
            }
            let levelID = kind == "audio" ? m.extmapID(audioLevelURI) : nil
            let midID = m.extmapID(midURI)
            // transport-cc only with both its extension and its feedback (the publisher then reads the node's
            // feedback for its own estimator); REMB and NACK as the offer allows them.
            let fb = feedback(m, codec.pt)
            let tccID = fb.contains("transport-cc") ? m.extmapID(transportCCURI) : nil
            let nack = kind == "video" && fb.contains("nack")
            let remb = kind == "video" && fb.contains("goog-remb")
            let simulcast = kind == "video" ? try SimulcastOffer.parse(m) : nil
            let ridID = m.extmapID(SimulcastOffer.ridURI)
            let repairedID = m.extmapID(SimulcastOffer.repairedRidURI)
            var layers: [TrackDescription] = []
            if let simulcast, !simulcast.rids.isEmpty {
                // Rid-based: each layer's SSRCs are learned from the RID extensions of its first packets. Its
                // RTX could not be bound without the repaired RID: then the answer leaves RTX out.
                if repairedID == nil { codec.rtx = nil }
                guard let ridID, let midID, let mid = m.mid else {
                    throw SDPError(line: m.lineNumber, text: "m=\(kind)",
                                   reason: "rid-based simulcast needs the MID and RID header extensions (RFC 8852)")
                }
                for (i, rid) in simulcast.rids.enumerated() {
                    var t = TrackDescription(codec: codec.codec, ssrc: nil, payloadType: codec.pt, mid: mid, midExtensionID: midID,
                                           rtxPayloadType: codec.rtx)
                    t.simulcast = SimulcastLayer(index: i, rid: rid, ridExtensionID: ridID, repairedRidExtensionID: repairedID)
                    layers.append(t)
                }
            } else if let simulcast {
                for (i, ssrc) in simulcast.ssrcs.enumerated() {
                    let rtx = codec.rtx.flatMap { _ in m.fidGroups.first { $0.media == ssrc }?.rtx }
                    var t = TrackDescription(codec: codec.codec, ssrc: ssrc, rtxSSRC: rtx, payloadType: codec.pt, rtxPayloadType: codec.rtx)
                    t.simulcast = SimulcastLayer(index: i)
                    layers.append(t)
                }
            }
            var track: TrackDescription
            if let first = layers.first {
                track = first
            } else if let ssrc = m.fidGroups.first?.media ?? m.ssrcs.first {
                let rtx = codec.rtx.flatMap { _ in m.fidGroups.first { $0.media == ssrc }?.rtx }
                track = TrackDescription(codec: codec.codec, ssrc: ssrc, rtxSSRC: rtx, payloadType: codec.pt, audioLevelExtensionID: levelID,
                                       rtxPayloadType: codec.rtx)
            } else if let midID, let mid = m.mid {
                // No SSRC signalled: the room learns it from the MID extension (RFC 8843 section 9.2).
                track = TrackDescription(codec: codec.codec, ssrc: nil, payloadType: codec.pt, audioLevelExtensionID: levelID,
                                       mid: mid, midExtensionID: midID, rtxPayloadType: codec.rtx)
            } else {
                throw SDPError(line: m.lineNumber, text: "m=\(kind)",
                               reason: "neither a=ssrc lines nor the MID header extension: packets could not be bound to the track")
            }
            track.transportCCExtensionID = tccID
            track.source = source
            // Without transport-cc, abs-send-time lets the node estimate the uplink itself for its REMB.
            let sendTimeID = remb && tccID == nil ? m.extmapID(absSendTimeURI) : nil
            track.absSendTimeExtensionID = sendTimeID
            track.redPayloadType = codec.red
            track.nack = nack
            track.remb = remb
            track.h264 = codec.h264
            if layers.isEmpty {
                tracks.append(track)
            } else {
                for var layer in layers {
                    layer.source = source
                    layer.transportCCExtensionID = tccID
                    layer.absSendTimeExtensionID = sendTimeID
                    layer.nack = nack
                    layer.remb = remb
                    layer.h264 = codec.h264
                    tracks.append(layer)
                }
            }
            var a = acceptedMedia(m, codecs: [codec], direction: "recvonly", local: local, first: answer.media.allSatisfy { $0.port == 0 })
            // The ids the node reads, once each (an offer may list a URI twice; the answer names the one used).
            let rids = simulcast?.rids.isEmpty == false
            let answered: [(UInt8?, String)] = [(midID, midURI), (levelID, audioLevelURI), (tccID, transportCCURI), (sendTimeID, absSendTimeURI),
                                                (rids ? ridID : nil, SimulcastOffer.ridURI), (rids ? repairedID : nil, SimulcastOffer.repairedRidURI)]
            for (id, uri) in answered.compactMap({ e in e.0.map { ($0, e.1) } }).sorted(by: { $0.0 < $1.0 }) {
                a.attributes.append(SDPAttribute("extmap", "\(id) \(uri)"))
            }
            if let simulcast, !simulcast.rids.isEmpty {
                // RFC 8853 section 5.3: the answer receives the streams it names, and only those.
                for rid in simulcast.rids { a.attributes.append(SDPAttribute("rid", "\(rid) recv")) }
                a.attributes.append(SDPAttribute("simulcast", "recv " + simulcast.rids.joined(separator: ";")))
            }
            var fbs = kind == "video" ? ["nack", "nack pli", "ccm fir"] : []
            if remb { fbs.append("goog-remb") }
            if tccID != nil { fbs.append("transport-cc") }
            for f in fbs { a.attributes.append(SDPAttribute("rtcp-fb", "\(codec.pt) \(f)")) }
            answer.media.append(a)
        }
        guard !tracks.isEmpty else {
            let why = refusals.isEmpty ? "" : ": " + refusals.joined(separator: "; ")
            throw SDPError(line: 0, text: "", reason: "no sendonly/sendrecv audio (Opus) or video (VP8, VP9, H.264) m-line to publish" + why)
        }
        finishBundle(&answer)
        return Publish(answer: answer, tracks: tracks, remote: remote)
    }

    /// The id the offer gives `uri` when the node can write it: the node sends the one-byte header form
    /// (RFC 8285 section 4.2), whose ids are 1-14, so an extension the offer numbers 15-255 is left out of the
    /// answer (not negotiated) rather than written under another id (`OutgoingRTP`'s precondition).
    static func oneByteID(_ m: MediaDescription, _ uri: String) -> UInt8? {
        guard let id = m.extmapID(uri), OutgoingRTP.oneByteIDs.contains(id) else { return nil }
        return id
    }

    /// Answers a client's receiving connection: every recvonly audio (Opus) or video (VP8, VP9, H.264) m-line
    /// becomes a slot the node sends on with an SSRC from `ssrc(mid, kind, index)` (a renegotiation keeps a
    /// mid's SSRC). A video slot keeps every format of its m-line the node forwards (`videoFormats`). A video
    /// m-line whose mid is in `screenShareMids`, or that the offer marks as a screen share, is a screen slot
    /// (`SlotDescription.source`).
    public static func answerSubscribe(_ offerText: String, local: LocalTransport, screenShareMids: Set<String> = [],
                                       ssrc: (String, MediaKind, Int) -> UInt32) throws(SDPError) -> Subscribe {
        try answerSubscribe(SessionDescription.parse(offerText), local: local, screenShareMids: screenShareMids, ssrc: ssrc)
    }

    public static func answerSubscribe(_ offer: SessionDescription, local: LocalTransport, screenShareMids: Set<String> = [],
                                       ssrc: (String, MediaKind, Int) -> UInt32) throws(SDPError) -> Subscribe {
        let remote = try remoteTransport(offer)
        var answer = baseAnswer(offer, local: local)
        var slots: [SlotDescription] = []
        for m in offer.media {
            guard m.kind == "audio" || m.kind == "video", m.isLive, m.direction == .recvonly || m.direction == .sendrecv,
                  let mid = m.mid, let codec = chooseCodec(m) else {
                answer.media.append(rejected(m))
                continue
            }
            try requireBundledAndMuxed(m, offer)
            let kind: MediaKind = m.kind == "audio" ? .audio : .video
            let codecs = kind == .video ? videoFormats(m) : [codec]
            let index = slots.filter { $0.codec.kind == kind }.count
            let s = ssrc(mid, kind, index)
            let levelID = kind == .audio ? oneByteID(m, audioLevelURI) : nil
            let fb = feedback(m, codec.pt)
            let tccID = fb.contains("transport-cc") || kind == .audio ? oneByteID(m, transportCCURI) : nil
            let sendTimeID = kind == .video ? oneByteID(m, absSendTimeURI) : nil
            let rtxSSRC = codecs.contains { $0.rtx != nil } ? ssrc(mid + "/rtx", kind, index) : nil
            var slot = SlotDescription(codec: codec.codec, mid: mid, ssrc: s, payloadType: codec.pt, audioLevelExtensionID: levelID,
                                       absSendTimeExtensionID: sendTimeID, transportCCExtensionID: tccID,
                                       rtxPayloadType: codec.rtx, rtxSSRC: rtxSSRC, redPayloadType: codec.red)
            if kind == .video {
                slot.formats = slotFormats(codecs)
                slot.source = source(of: m, screenShareMids: screenShareMids)
            }
            slots.append(slot)
            var a = acceptedMedia(m, codecs: codecs, direction: "sendonly", local: local, first: answer.media.allSatisfy { $0.port == 0 })
            for (id, uri) in [(levelID, audioLevelURI), (sendTimeID, absSendTimeURI), (tccID, transportCCURI)] {
                if let id { a.attributes.append(SDPAttribute("extmap", "\(id) \(uri)")) }
            }
            if kind == .video {
                var fbs = ["nack", "nack pli", "ccm fir"]
                fbs.append(tccID != nil ? "transport-cc" : "goog-remb")
                for c in codecs { for f in fbs { a.attributes.append(SDPAttribute("rtcp-fb", "\(c.pt) \(f)")) } }
            } else if tccID != nil {
                a.attributes.append(SDPAttribute("rtcp-fb", "\(codec.pt) transport-cc"))
            }
            // Each slot is its own stream: slots carry whoever talks, so a browser must never lip-sync one
            // slot's audio with another slot's video (issue 13).
            let msid = "sfu-\(mid) slot-\(mid)"
            a.attributes.append(SDPAttribute("msid", msid))
            if let rtxSSRC { a.attributes.append(SDPAttribute("ssrc-group", "FID \(s) \(rtxSSRC)")) }
            for x in [s] + (rtxSSRC.map { [$0] } ?? []) {
                a.attributes.append(SDPAttribute("ssrc", "\(x) cname:sfu"))
                a.attributes.append(SDPAttribute("ssrc", "\(x) msid:\(msid)"))
            }
            answer.media.append(a)
        }
        guard !slots.isEmpty else {
            throw SDPError(line: 0, text: "", reason: "no recvonly audio (Opus) or video (VP8) m-line to subscribe with")
        }
        finishBundle(&answer)
        return Subscribe(answer: answer, slots: slots, remote: remote)
    }

    // MARK: Pieces

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
        return RemoteTransport(ufrag: ufrag, password: pwd, fingerprint: fingerprint)
    }

    static func requireBundledAndMuxed(_ m: MediaDescription, _ offer: SessionDescription) throws(SDPError) {
        guard let mid = m.mid, offer.bundleMids?.contains(mid) == true else {
            throw SDPError(line: m.lineNumber, text: "m=\(m.kind)", reason: "every m-line must be in the BUNDLE group (RFC 8843)")
        }
        guard m.has("rtcp-mux") else {
            throw SDPError(line: m.lineNumber, text: "m=\(m.kind)", reason: "a=rtcp-mux is required (RFC 5761)")
        }
    }

    static func baseAnswer(_ offer: SessionDescription, local: LocalTransport) -> SessionDescription {
        var a = SessionDescription()
        a.origin = "- \(UInt32.random(in: 1...UInt32.max)) 1 IN IP4 0.0.0.0"
        a.attributes = [SDPAttribute("ice-lite"), SDPAttribute("msid-semantic", " WMS *")]
        return a
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
            // RFC 8445 section 5.1.2: host type preference 126, local preference by order, component 1.
            let priority = (126 << 24) | ((65535 - i) << 8) | 255
            a.attributes.append(SDPAttribute("candidate", "\(i + 1) 1 udp \(priority) \(c.host) \(c.port) typ host"))
        }
        a.attributes.append(SDPAttribute("end-of-candidates"))
        return a
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
