import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// What an offer asks for, written out as real SDP text (so the parser and OfferAnswer see what browsers
/// send) by the session and edge fuzz targets.
struct FuzzOffer {
    struct Media {
        var video = false
        var mid: String
        /// "sendonly", "recvonly", "sendrecv", "inactive".
        var direction: String
        var ssrc: UInt32?
        var rtxSSRC: UInt32?
        var payloadType: UInt8 = 111
        var rtxPayloadType: UInt8?
        var levelExtension: UInt8?
        var midExtension: UInt8?
        var rejected = false
        var bundleOnly = false
        var bundled = true
        var muxed = true
        /// An extra codec offered before the real one (RED, H264): answered around it.
        var extraCodec = false
        var simulcast = false

        init(video: Bool, mid: String, direction: String) {
            self.video = video
            self.mid = mid
            self.direction = direction
            if video { payloadType = 96 }
        }
    }

    var ice: ICECredentials
    /// The a=fingerprint value ("sha-256 AB:CD:..."), formatted once.
    var fingerprint: String
    var media: [Media] = []
    var setup = "actpass"

    init(ice: ICECredentials, fingerprint: String) {
        self.ice = ice
        self.fingerprint = fingerprint
    }

    var text: String {
        var l = ["v=0", "o=- 4611731400430051336 2 IN IP4 127.0.0.1", "s=-", "t=0 0",
                 "a=group:BUNDLE " + media.filter(\.bundled).map(\.mid).joined(separator: " "), "a=msid-semantic: WMS"]
        for m in media {
            var formats = ["\(m.payloadType)"]
            if let rtx = m.rtxPayloadType { formats.append("\(rtx)") }
            if m.extraCodec { formats.insert(m.video ? "102" : "63", at: 0) }
            l.append("m=\(m.video ? "video" : "audio") \(m.rejected ? 0 : 9) UDP/TLS/RTP/SAVPF \(formats.joined(separator: " "))")
            l += ["c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0", "a=ice-ufrag:\(ice.ufrag)", "a=ice-pwd:\(ice.password)",
                  "a=ice-options:trickle", "a=fingerprint:\(fingerprint)", "a=setup:\(setup)", "a=mid:\(m.mid)"]
            if m.bundleOnly { l.append("a=bundle-only") }
            if let id = m.levelExtension { l.append("a=extmap:\(id) \(OfferAnswer.audioLevelURI)") }
            if let id = m.midExtension { l.append("a=extmap:\(id) \(OfferAnswer.midURI)") }
            l.append("a=\(m.direction)")
            if m.muxed { l.append("a=rtcp-mux") }
            l.append("a=rtcp-rsize")
            if m.extraCodec { l.append(m.video ? "a=rtpmap:102 H264/90000" : "a=rtpmap:63 red/48000/2") }
            if m.video {
                l.append("a=rtpmap:\(m.payloadType) VP8/90000")
                l += ["a=rtcp-fb:\(m.payloadType) goog-remb", "a=rtcp-fb:\(m.payloadType) nack", "a=rtcp-fb:\(m.payloadType) nack pli"]
                if let rtx = m.rtxPayloadType { l += ["a=rtpmap:\(rtx) rtx/90000", "a=fmtp:\(rtx) apt=\(m.payloadType)"] }
            } else {
                l += ["a=rtpmap:\(m.payloadType) opus/48000/2", "a=fmtp:\(m.payloadType) minptime=10;useinbandfec=1"]
            }
            if m.simulcast { l += ["a=rid:h send", "a=rid:l send", "a=simulcast:send h;l"] }
            if let s = m.ssrc {
                if let r = m.rtxSSRC { l.append("a=ssrc-group:FID \(s) \(r)") }
                l.append("a=ssrc:\(s) cname:fuzz")
                if let r = m.rtxSSRC { l.append("a=ssrc:\(r) cname:fuzz") }
            }
        }
        return l.joined(separator: "\r\n") + "\r\n"
    }
}
