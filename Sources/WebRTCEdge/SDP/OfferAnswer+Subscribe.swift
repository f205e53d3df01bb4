import SFUBase

extension OfferAnswer {
    /// The answer to a receiving connection's offer, the slots it gives, and the client's transport.
    public struct Subscribe: Sendable {
        public var answer: SessionDescription
        public var slots: [SlotDescription]
        public var remote: RemoteTransport
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
        var answer = baseAnswer()
        var slots: [SlotDescription] = []
        for m in offer.media {
            // A paused transceiver stays in the session, answered inactive, and is no slot (see answerPublish).
            if m.mid != nil, pausedMedia(m, receiving: true), let codec = chooseCodec(m) {
                try requireBundledAndMuxed(m, offer)
                answer.media.append(acceptedMedia(m, codecs: [codec], direction: "inactive", local: local, first: answer.media.allSatisfy { $0.port == 0 }))
                continue
            }
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
        guard !slots.isEmpty || answer.media.contains(where: { $0.port != 0 }) else {
            throw SDPError(line: 0, text: "", reason: "no recvonly audio (Opus) or video (VP8) m-line to subscribe with")
        }
        finishBundle(&answer)
        return Subscribe(answer: answer, slots: slots, remote: remote)
    }

    /// The id the offer gives `uri` when the node can write it: the node sends the one-byte header form
    /// (RFC 8285 section 4.2), whose ids are 1-14, so an extension the offer numbers 15-255 is left out of the
    /// answer (not negotiated) rather than written under another id (`OutgoingRTP`'s precondition).
    static func oneByteID(_ m: MediaDescription, _ uri: String) -> UInt8? {
        guard let id = m.extmapID(uri), OutgoingRTP.oneByteIDs.contains(id) else { return nil }
        return id
    }
}
