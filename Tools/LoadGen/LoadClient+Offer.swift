import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// The descriptions the client writes: its own offers (first, renegotiated, ICE-restarted) and its answer to
/// a server that offers (Janus), each carrying its transport's lines.
extension LoadClient {
    /// A sendonly offer (Opus with the audio level extension as id 1, VP8 as 96) or a recvonly offer with
    /// the profile's audio and video slots (VP8 slots offer NACK, PLI, REMB and abs-send-time; with
    /// `transportCC`, every slot also offers transport-cc as extension 5 and VP8 slots RTX as 97, like a
    /// browser); one BUNDLE transport either way, its host candidate in every m-line. A later offer on the same transport may
    /// change the profile (a renegotiation) or bring new ICE credentials (an ICE restart, RFC 8445 section 9). A
    /// publisher's renegotiation keeps its SSRCs and sequence numbers whatever else it changes (Opus payload type,
    /// audio level id, RED, video NACK, an inactive audio transceiver): the same streams described anew.
    public func offer(profile newProfile: Profile? = nil, restartICE: Bool = false) -> String {
        if let newProfile {
            profile = newProfile
            // What the new description says of the streams already sent: same SSRCs and sequence, new attributes.
            writer.payloadType = profile.opusPayloadType
            writer.levelID = profile.levelExtension ? profile.audioLevelID : nil
        }
        if restartICE { ice = .random() }
        var sections: [(kind: String, send: Bool)] = []
        if profile.publishAudio { sections.append(("audio", true)) }
        if profile.publishVideo { sections.append(("video", true)) }
        sections += Array(repeating: ("audio", false), count: profile.audioSlots)
        sections += Array(repeating: ("video", false), count: profile.videoSlots)
        if sections.isEmpty { sections = [("audio", false)] }
        var l = ["v=0", "o=- \(UInt32.random(in: 1...UInt32.max)) 1 IN IP4 0.0.0.0", "s=-", "t=0 0",
                 "a=group:BUNDLE \(sections.indices.map(String.init).joined(separator: " "))"]
        for (i, section) in sections.enumerated() {
            let direction = section.send ? "a=sendonly" : "a=recvonly"
            let tcc = profile.transportCC && !section.send
            if section.kind == "audio" {
                let pt = profile.opusPayloadType
                let red = section.send && profile.offerRED
                let inactive = section.send && profile.audioInactive
                l += ["m=audio 9 UDP/TLS/RTP/SAVPF \(pt)\(red ? " 63" : "")", "c=IN IP4 0.0.0.0", "a=mid:\(i)", inactive ? "a=inactive" : direction,
                      "a=rtcp-mux", "a=setup:actpass", "a=rtpmap:\(pt) opus/48000/2", "a=fmtp:\(pt) minptime=10;useinbandfec=1"]
                if red { l += ["a=rtpmap:63 red/48000/2", "a=fmtp:63 \(pt)/\(pt)"] }
                l.append("a=extmap:\(section.send ? profile.audioLevelID : 1) \(OfferAnswer.audioLevelURI)")
                if tcc { l += ["a=rtcp-fb:\(pt) transport-cc", "a=extmap:\(Self.transportCCOfferID) \(OfferAnswer.transportCCURI)"] }
                if section.send, !inactive { l.append("a=ssrc:\(writer.ssrc) cname:load") }
                l += transportLines()
            } else {
                // A receiving video section takes RTX as browsers' do (under AES-GCM a slot without it does not
                // answer NACKs: `DropReason.resendNeedsRTX`); a sending one offers it with transport-cc.
                let rtx = tcc || !section.send
                l += ["m=video 9 UDP/TLS/RTP/SAVPF 96\(rtx ? " 97" : "")", "c=IN IP4 0.0.0.0", "a=mid:\(i)", direction, "a=rtcp-mux",
                      "a=setup:actpass", "a=rtpmap:96 VP8/90000"]
                if !section.send || profile.videoNACK { l += ["a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli"] }
                l += ["a=rtcp-fb:96 goog-remb", "a=extmap:3 \(OfferAnswer.absSendTimeURI)"]
                if tcc { l += ["a=rtcp-fb:96 transport-cc", "a=extmap:\(Self.transportCCOfferID) \(OfferAnswer.transportCCURI)"] }
                if rtx { l += ["a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96"] }
                if section.send, ridSimulcast {
                    let rids = Self.rids.prefix(1 + layerWriters.count)
                    l += ["a=extmap:\(Self.midOfferID) \(OfferAnswer.midURI)", "a=extmap:\(Self.ridOfferID) \(SimulcastOffer.ridURI)"]
                    l += rids.map { "a=rid:\($0) send" }
                    l.append("a=simulcast:send " + rids.joined(separator: ";"))
                } else if section.send, layerWriters.isEmpty {
                    l.append("a=ssrc:\(videoWriter.ssrc) cname:load")
                } else if section.send {
                    let ssrcs = [videoWriter.ssrc] + layerWriters.map(\.ssrc)
                    l.append("a=ssrc-group:SIM " + ssrcs.map(String.init).joined(separator: " "))
                    l += ssrcs.map { "a=ssrc:\($0) cname:load" }
                }
                l += transportLines()
            }
        }
        return l.joined(separator: "\r\n") + "\r\n"
    }

    /// Answers a server's offer, as a subscriber of a server that offers (Janus VideoRoom): every live m-line
    /// is received (`recvonly`) with its offered Opus or VP8 payload type, the rest rejected; bundled as
    /// offered; DTLS client (`a=setup:active`, RFC 5763 section 5). Starts ICE at once.
    public func answer(offer text: String, now: MonoTime) throws -> String {
        let offer = try SessionDescription.parse(text)
        var l = ["v=0", "o=- \(UInt32.random(in: 1...UInt32.max)) 1 IN IP4 0.0.0.0", "s=-", "t=0 0"]
        if let group = offer.attribute("group") { l.append("a=group:\(group)") }
        for m in offer.media {
            let codec = m.kind == "audio" ? "opus/48000" : "vp8/90000"
            let pt = m.values("rtpmap").first { $0.lowercased().contains(codec) }?.split(separator: " ").first.map(String.init)
            guard m.port != 0, let pt, let mid = m.mid else {
                l += ["m=\(m.kind) 0 \(m.proto) \(m.formats.first ?? "0")", "c=IN IP4 0.0.0.0"] + (m.mid.map { ["a=mid:\($0)"] } ?? [])
                continue
            }
            if m.kind == "video", let n = UInt8(pt) { videoPayloadType = n }
            l += ["m=\(m.kind) 9 \(m.proto) \(pt)", "c=IN IP4 0.0.0.0", "a=mid:\(mid)", "a=recvonly", "a=rtcp-mux", "a=setup:active",
                  "a=rtpmap:\(pt) \(m.kind == "audio" ? "opus/48000/2" : "VP8/90000")"]
            if m.kind == "video" { l += ["a=rtcp-fb:\(pt) nack", "a=rtcp-fb:\(pt) nack pli"] }
            l += transportLines()
        }
        try connect(to: offer, now: now)
        return l.joined(separator: "\r\n") + "\r\n"
    }

    /// What every m-line says about this client's transport: ICE credentials, fingerprint and its one host
    /// candidate (an ICE-lite server such as Janus learns the address from it as well as from the checks).
    private func transportLines() -> [String] {
        let a = socket.local
        // An ICE-TCP client is active (RFC 6544 section 4.5: port 9, it connects rather than listens).
        let candidate = profile.overTCP ? "a=candidate:1 1 tcp 1518280447 \(a.host) 9 typ host tcptype active"
                                        : "a=candidate:1 1 udp 2130706431 \(a.host) \(a.port) typ host"
        return ["a=ice-ufrag:\(ice.ufrag)", "a=ice-pwd:\(ice.password)", "a=fingerprint:\(certificate.fingerprint)",
                candidate, "a=end-of-candidates"]
    }
}
