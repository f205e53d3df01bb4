import SFUBase

extension OfferAnswer {
    /// The answer to a sending connection's offer, the tracks it binds, and the client's transport.
    public struct Publish: Sendable {
        public var answer: SessionDescription
        public var tracks: [TrackDescription]
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
        var answer = baseAnswer()
        var tracks: [TrackDescription] = []
        var refusals: [String] = []
        for m in offer.media {
            let kind = m.kind
            let source = kind == "video" ? source(of: m, screenShareMids: screenShareMids) : .camera
            // A transceiver the client paused (inactive, or only receiving on a sending connection) stays in the
            // session, answered inactive, and sends nothing: rejecting it (port 0) would stop it for good, and a
            // re-offer of nothing but paused transceivers ends the tracks instead of being refused.
            if pausedMedia(m), let codec = chooseCodec(m) {
                try requireBundledAndMuxed(m, offer)
                answer.media.append(acceptedMedia(m, codecs: [codec], direction: "inactive", local: local, first: answer.media.allSatisfy { $0.port == 0 }))
                continue
            }
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
        guard !tracks.isEmpty || answer.media.contains(where: { $0.port != 0 }) else {
            let why = refusals.isEmpty ? "" : ": " + refusals.joined(separator: "; ")
            throw SDPError(line: 0, text: "", reason: "no sendonly/sendrecv audio (Opus) or video (VP8, VP9, H.264) m-line to publish" + why)
        }
        finishBundle(&answer)
        return Publish(answer: answer, tracks: tracks, remote: remote)
    }
}
