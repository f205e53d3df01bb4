import SFUBase

/// The video payload formats the node forwards, read from an offer's m-line: VP8 (RFC 7741), VP9 profile 0
/// (RFC 9628) and H.264 in packetization-mode 1 (RFC 6184), each with the RTX format whose `apt` names it
/// (RFC 4588 section 8.6). A publisher sends one of them; a subscriber's slot may take several, so that it can
/// carry sources of different codecs.
extension OfferAnswer {
    /// Every video format of `m` the node forwards, in the offer's order (at most `limit`): the publisher's
    /// preference, and the formats a slot may carry.
    static func videoFormats(_ m: MediaDescription, limit: Int = SlotDescription.maxFormats) -> [CodecChoice] {
        let maps = m.rtpmaps
        let fmtps = m.fmtps
        var out: [CodecChoice] = []
        for f in m.formats {
            guard out.count < limit, let pt = UInt8(f), let map = maps[pt], map.clock == 90_000 else { continue }
            let fmtp = fmtps[pt]
            let parameters = formatParameters(fmtp)
            var codec: Codec
            var rtpmap: String
            var h264: H264ProfileLevelID?
            switch map.name {
            case "vp8":
                (codec, rtpmap) = (.vp8, "VP8/90000")
            case "vp9":
                // Profile 0 (8-bit 4:2:0) only: what every WebRTC VP9 decoder takes. Absent means 0 (RFC 9628
                // section 6).
                guard (parameters["profile-id"] ?? "0") == "0" else { continue }
                (codec, rtpmap) = (.vp9, "VP9/90000")
            case "h264":
                // Packetization-mode 1 only (RFC 6184 section 6.3): the parser reads single NAL units, STAP-A and
                // FU-A. An unreadable profile-level-id could not be matched to any subscriber's.
                guard parameters["packetization-mode"] == "1", let id = H264ProfileLevelID(fmtp: fmtp) else { continue }
                (codec, rtpmap, h264) = (.h264, "H264/90000", id)
            default:
                continue
            }
            let rtx = maps.first { r in
                r.value.name == "rtx" && r.value.clock == 90_000 && fmtps[r.key] == "apt=\(pt)" && m.formats.contains("\(r.key)")
            }?.key
            out.append(CodecChoice(codec: codec, pt: pt, rtx: rtx, rtpmap: rtpmap, fmtp: codec == .vp8 ? nil : fmtp, h264: h264))
        }
        return out
    }

    /// Why a video m-line offers nothing the node forwards, for the refusal an offer with nothing else gets.
    static func videoRefusal(_ m: MediaDescription) -> String {
        let names = Set(m.formats.compactMap { UInt8($0).flatMap { m.rtpmaps[$0]?.name } })
        let mid = m.mid.map { "video m-line \($0)" } ?? "a video m-line"
        if names.contains("h264") {
            return "\(mid) offers H.264 only in packetization-mode 0 (or with an unreadable profile-level-id): the node "
                + "forwards packetization-mode 1 (RFC 6184 section 6.3)"
        }
        if names.contains("vp9") { return "\(mid) offers VP9 only in profiles other than 0" }
        return "\(mid) offers none of VP8, VP9 (profile 0) or H.264 (packetization-mode 1)"
    }

    /// `a=fmtp` parameters (`k=v;k=v`, RFC 4566 section 6), by name.
    static func formatParameters(_ fmtp: String?) -> [Substring: Substring] {
        var out: [Substring: Substring] = [:]
        for p in (fmtp ?? "").split(separator: ";") {
            let kv = p.split(separator: "=", maxSplits: 1)
            guard kv.count == 2 else { continue }
            out[kv[0].drop { $0 == " " }] = kv[1].drop { $0 == " " }
        }
        return out
    }

    /// The slot a subscriber's video m-line becomes: every format it takes, the first as the slot's own.
    static func slotFormats(_ choices: [CodecChoice]) -> [PayloadFormat] {
        choices.map { PayloadFormat(codec: $0.codec, payloadType: $0.pt, rtxPayloadType: $0.rtx, h264: $0.h264) }
    }
}
