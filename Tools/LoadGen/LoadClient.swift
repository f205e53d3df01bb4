import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// A WebRTC client on the wire, as a browser or aiortc behaves towards the node, without media devices: its
/// own UDP socket, an SDP offer, ICE as the controlling agent (nominating the node's host candidate), a DTLS
/// client handshake, SRTP, and STUN consent checks every 2.5 s (RFC 7675). Driven by `poll(now:)` from one
/// loop, so one thread runs many clients.
///
/// A client can offer again on its transport (`offer(profile:restartICE:)` then `update(answer:now:)`): a
/// renegotiation keeps its ICE credentials and DTLS association, an ICE restart brings new credentials on
/// both sides and checks again with them while SRTP goes on. A client with a new certificate is a new
/// transport (a replacement, to the node). The hostile suite also makes clients misbehave: stop mid-DTLS
/// (`stallDTLS`), vanish without a goodbye (`vanish()`), and send keyed RTCP of its choosing (`sendRTCP`).
public final class LoadClient {
    public enum State: Equatable { case new, checking, handshaking, connected, failed(String), closed }

    /// What the client sends and receives.
    public struct Profile: Sendable {
        public var publishAudio = false
        public var publishVideo = false
        /// Publishers: send the RFC 6464 audio level extension (without it the node must decode).
        public var levelExtension = true
        public var audioSlots = 0
        public var videoSlots = 0
        /// The SSRCs the client sends with (and announces); random when nil.
        public var audioSSRC: UInt32?
        public var videoSSRC: UInt32?
        /// Subscribers: offer transport-cc on every slot and RTX on video slots, as a browser does; the node
        /// then stamps every packet with the transport-wide sequence number, which the client records and
        /// reports in transport-cc feedback every 100 ms (instead of REMB).
        public var transportCC = false
        /// Publishers: the video is sent as this many simulcast layers (`a=ssrc-group:SIM`, RFC 8853), lowest
        /// first; 0 or 1: one stream.
        public var simulcastLayers = 0
        /// Publishers with simulcast layers: offer them by rid (`a=rid`, `a=simulcast`, RFC 8853) without
        /// `a=ssrc` lines, as browsers do: each layer's SSRC is learned from the MID and RID header extensions
        /// its first `ridTaggedPackets` packets carry (RFC 8852), those of a moved stream too (`moveVideo`).
        public var ridSimulcast = false
        /// Publishers: the first sequence numbers of the audio and video streams (random when nil); a stream
        /// started near 65,535 wraps within seconds (SRTP's rollover counter then counts 1).
        public var audioSequenceStart: UInt16?
        public var videoSequenceStart: UInt16?
        /// The Opus payload type offered (publishers send with it): a renegotiation may change it.
        public var opusPayloadType: UInt8 = 111
        /// Publishers: the audio level extension's id (1-14) when `levelExtension`.
        public var audioLevelID: UInt8 = 1
        /// Publishers: also offer RED over Opus (RFC 2198) as payload type 63 (the client still sends Opus).
        public var offerRED = false
        /// Publishers: offer NACK on the video m-line.
        public var videoNACK = true
        /// Publishers: the audio m-line stays (same mid) as `a=inactive` without SSRC lines, as a browser's
        /// paused transceiver; nothing is sent on it until an offer makes it sendonly again.
        public var audioInactive = false
        public init() {}

        public static func publisher(audio: Bool = true, video: Bool = false, levelExtension: Bool = true,
                                     simulcastLayers: Int = 0) -> Profile {
            var p = Profile()
            p.publishAudio = audio
            p.publishVideo = video
            p.levelExtension = levelExtension
            p.simulcastLayers = simulcastLayers
            return p
        }

        public static func subscriber(audio: Int, video: Int = 0, transportCC: Bool = false) -> Profile {
            var p = Profile()
            p.audioSlots = audio
            p.videoSlots = video
            p.transportCC = transportCC
            return p
        }

        var publishes: Bool { publishAudio || publishVideo }
    }

    public let socket: UDPSocket
    /// What the last offer asked for (a renegotiation may change the slots).
    public private(set) var profile: Profile
    public var publishes: Bool { profile.publishes }
    public private(set) var state: State = .new
    /// The node asked for a keyframe (PLI or FIR) since the flag was last cleared.
    public var keyframeRequested = false
    /// The SSRCs the node asked keyframes of since the caller last cleared the set (a simulcast publisher
    /// answers each layer's PLI on that layer).
    public var keyframeRequestedSSRCs: Set<UInt32> = []
    /// PLIs and FIRs received, ever.
    public private(set) var keyframeRequests = 0
    /// Interval of consent checks once connected (RFC 7675 allows 4-6 s; browsers use about 5 s). A node whose
    /// consent lifetime is short needs them more often.
    public var consentInterval: MonoTime.Interval = .milliseconds(2500)
    /// Stop after the first DTLS flight: send the ClientHello, then ignore the server (a handshake that never
    /// finishes).
    public var stallDTLS = false
    /// Every decrypted RTCP compound the client receives.
    public var onRTCP: ((UnsafeRawBufferPointer) -> Void)?
    /// Datagrams of any kind that reached the socket while polled (after `vanish()` too).
    public private(set) var datagramsReceived = 0
    /// Successful answers to this client's connectivity checks, ever, and since the last ICE restart.
    public private(set) var checksSucceeded = 0
    public private(set) var checksSucceededSinceRestart = 0
    /// The last nominating Binding request sent, and the last one the node answered (what a man in the
    /// middle could capture and replay).
    public private(set) var lastCheckSent: [UInt8]?
    public private(set) var lastAnsweredCheck: [UInt8]?
    /// The slots the node's last answer gave (recvonly m-lines), in m-line order, with the SSRC it sends on.
    public private(set) var answeredSlots: [(mid: String, kind: String, ssrc: UInt32)] = []
    /// The node's ICE credentials from the last answer.
    public private(set) var remoteICE: ICECredentials?
    /// The client stopped answering and checking (`vanish()`): polling only counts what still arrives.
    public private(set) var vanished = false
    /// Every SRTP datagram a subscriber receives, still encrypted, with its length and arrival time; set it
    /// to count and sample without decrypting everything (`decrypt` opens one). Default: decrypt and count.
    public var onMedia: ((UnsafeMutableRawBufferPointer, Int, MonoTime) -> Void)?
    /// SRTP packets received and decrypted (a subscriber's audio).
    public private(set) var mediaPacketsReceived = 0
    public private(set) var mediaBytesReceived = 0
    public private(set) var mediaPacketsSent = 0
    /// The payload type video arrives with: 96 as this client offers it, or what a server's offer said.
    public private(set) var videoPayloadType: UInt8 = 96
    /// The RTX payload type the answer kept for video (97 as offered with transport-cc), nil without RTX.
    /// With no NACKs from this client, what arrives on it is the node's probe padding.
    public private(set) var rtxPayloadType: UInt8?
    /// The transport-wide sequence number's extension id the answer kept; nil when transport-cc was not
    /// negotiated (the client then has no feedback to send).
    public private(set) var transportCCExtensionID: UInt8?
    /// Transport-cc feedback packets sent, and packets whose transport-wide sequence number was recorded.
    public private(set) var transportFeedbackSent = 0
    public private(set) var transportSequencesRecorded = 0
    /// Arrival times by transport-wide sequence number, and the feedback about them (the SFU's own writer).
    var feedbackRecorder = TransportFeedbackRecorder()
    /// The id this client offers the transport-wide sequence number extension with.
    static let transportCCOfferID: UInt8 = 5
    /// The ids a rid-simulcast publisher offers the MID and RID extensions with, the rids of its layers
    /// (lowest first), and how many first packets of a stream carry them.
    static let midOfferID: UInt8 = 4
    static let ridOfferID: UInt8 = 10
    static let rids = ["l", "m", "h"]
    public static let ridTaggedPackets = 5

    public private(set) var ice = ICECredentials.random()
    public let certificate: DTLSCertificate
    var checks: ICEControllingClient?
    var node: TransportAddress?
    var dtls: DTLSEndpoint?
    var tx: SRTPSession?
    var rx: SRTPSession?
    var pendingCheck: [UInt8]?
    var nextCheckAt = MonoTime.zero
    var writer: RTPStreamHeader
    var videoWriter: RTPStreamHeader
    /// Simulcast layers above the lowest (which `videoWriter` sends).
    var layerWriters: [RTPStreamHeader] = []
    private let rxBatch = ReceiveBatch(capacity: 64)
    private var scratch = [UInt8](repeating: 0, count: 1500)
    private var rtcpScratch = [UInt8](repeating: 0, count: 1500 + SRTPSession.maxOverhead)
    /// The sender SSRC of this client's own RTCP.
    public let rtcpSSRC = UInt32.random(in: 1...UInt32.max)

    /// A client on a socket of its own, or on `socket` (a client that starts over on the same address).
    public init(certificate: DTLSCertificate, profile: Profile, socket shared: UDPSocket? = nil) throws {
        socket = try shared ?? UDPSocket(bind: TransportAddress("127.0.0.1:0")!, socketBufferBytes: 4 << 20)
        if !profile.publishes, shared == nil { try socket.enableReceiveTimestamps() }  // latency from kernel arrival, not from polling
        self.certificate = certificate
        self.profile = profile
        writer = RTPStreamHeader(ssrc: profile.audioSSRC ?? .random(in: 1...UInt32.max), payloadType: profile.opusPayloadType,
                                 levelID: profile.levelExtension ? profile.audioLevelID : nil)
        videoWriter = RTPStreamHeader(ssrc: profile.videoSSRC ?? .random(in: 1...UInt32.max), payloadType: 96, levelExtension: false)
        layerWriters = (1..<max(1, profile.simulcastLayers)).map { _ in
            RTPStreamHeader(ssrc: .random(in: 1...UInt32.max), payloadType: 96, levelExtension: false)
        }
        if let s = profile.audioSequenceStart { writer.sequenceNumber = s }
        if let s = profile.videoSequenceStart {
            videoWriter.sequenceNumber = s
            for i in layerWriters.indices { layerWriters[i].sequenceNumber = s }
        }
        if ridSimulcast { for layer in 0..<profile.simulcastLayers { tagLayer(layer) } }
    }

    /// Rid-based simulcast: the layers are announced by rid, their SSRCs learned from the extensions.
    var ridSimulcast: Bool { profile.ridSimulcast && profile.simulcastLayers > 1 }

    /// The next `ridTaggedPackets` packets of a simulcast layer carry its MID and RID (a new stream's first).
    private func tagLayer(_ layer: Int) {
        let tags: [(id: UInt8, value: [UInt8])] = [(Self.midOfferID, Array("\(videoMid)".utf8)), (Self.ridOfferID, Array(Self.rids[layer].utf8))]
        if layer == 0 { videoWriter.tag(tags, packets: Self.ridTaggedPackets) } else { layerWriters[layer - 1].tag(tags, packets: Self.ridTaggedPackets) }
    }

    /// The video m-line's mid: after the audio one when the client publishes audio.
    private var videoMid: Int { profile.publishAudio ? 1 : 0 }

    /// Moves a video layer (0: the lowest, or the only stream) to a new SSRC, as a sender resolving an SSRC
    /// collision does (RFC 3550 section 8.2): a new sequence space, and with rid-based simulcast the MID and
    /// RID on the new stream's first packets. Nothing is signalled.
    public func moveVideo(layer: Int = 0, to ssrc: UInt32) {
        if layer == 0 { videoWriter.move(to: ssrc) } else { layerWriters[layer - 1].move(to: ssrc) }
        if ridSimulcast { tagLayer(layer) }
    }

    /// Video layers whose every packet goes on a new SSRC (`moveVideo` before each): a sender that keeps
    /// changing SSRCs, each new stream's first packet naming the layer's MID and RID.
    public var videoSSRCFlips: Set<Int> = []

    /// The sequence number the next audio packet goes with (past 65,535 it wraps to 0).
    public var nextAudioSequence: UInt16 { writer.sequenceNumber }
    public func nextVideoSequence(layer: Int = 0) -> UInt16 { layer == 0 ? videoWriter.sequenceNumber : layerWriters[layer - 1].sequenceNumber }

    /// The SSRCs this client sends audio and video with.
    public var audioSSRC: UInt32 { writer.ssrc }
    public var videoSSRC: UInt32 { videoWriter.ssrc }

    /// Soak's clients: audio only.
    public convenience init(certificate: DTLSCertificate, publishes: Bool, audioSlots: Int = 0) throws {
        try self.init(certificate: certificate, profile: publishes ? .publisher() : .subscriber(audio: audioSlots))
    }

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
                l += ["m=video 9 UDP/TLS/RTP/SAVPF 96\(tcc ? " 97" : "")", "c=IN IP4 0.0.0.0", "a=mid:\(i)", direction, "a=rtcp-mux",
                      "a=setup:actpass", "a=rtpmap:96 VP8/90000"]
                if !section.send || profile.videoNACK { l += ["a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli"] }
                l += ["a=rtcp-fb:96 goog-remb", "a=extmap:3 \(OfferAnswer.absSendTimeURI)"]
                if tcc {
                    l += ["a=rtcp-fb:96 transport-cc", "a=extmap:\(Self.transportCCOfferID) \(OfferAnswer.transportCCURI)",
                          "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96"]
                }
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
        return ["a=ice-ufrag:\(ice.ufrag)", "a=ice-pwd:\(ice.password)", "a=fingerprint:\(certificate.fingerprint)",
                "a=candidate:1 1 udp 2130706431 \(a.host) \(a.port) typ host", "a=end-of-candidates"]
    }

    /// The remote's transport from its description (media level first, then session level), the DTLS role
    /// its `a=setup` leaves this client (`active` there: this client is the server), and the first check.
    private func connect(to sdp: SessionDescription, now: MonoTime) throws {
        func find(_ key: String) -> String? { sdp.media.lazy.compactMap { $0.attribute(key) }.first ?? sdp.attribute(key) }
        guard let ufrag = find("ice-ufrag"), let pwd = find("ice-pwd"), let fp = find("fingerprint").flatMap(DTLSFingerprint.init(sdp:)),
              let candidate = sdp.media.lazy.flatMap({ $0.values("candidate") }).first(where: { $0.lowercased().contains(" udp ") }) else {
            throw LoadError("the remote description lacks ICE credentials, fingerprint or a UDP candidate")
        }
        let f = candidate.split(separator: " ")
        guard f.count >= 6, let port = UInt16(f[5]), let address = TransportAddress("\(f[4]):\(port)") else {
            throw LoadError("cannot read the candidate '\(candidate)'")
        }
        node = address
        remoteICE = ICECredentials(ufrag: ufrag, password: pwd)
        checks = ICEControllingClient(local: ice, remote: ICECredentials(ufrag: ufrag, password: pwd))
        let role: DTLSEndpoint.Role = find("setup") == "active" ? .server : .client
        dtls = try DTLSEndpoint(role: role, certificate: certificate, remoteFingerprint: fp, profiles: Self.srtpProfiles,
                                initialRetransmitTimeout: .milliseconds(200))
        state = .checking
        sendCheck(now: now)
    }

    /// AEAD_AES_128_GCM first, as the benchmark targets measure it; AES-CM for servers without GCM.
    static let srtpProfiles: [SRTPProfile] = [.aeadAES128GCM, .aesCM128HmacSHA1_80]

    /// The SRTP profile the DTLS handshake chose.
    public var srtpProfile: SRTPProfile? { dtls?.keys?.profile }

    private func sendCheck(now: MonoTime) {
        guard let checks, let node else { return }
        let tid = ICEControllingClient.randomTransactionID()
        pendingCheck = tid
        let request = checks.bindingRequest(nominate: true, transactionID: tid)
        lastCheckSent = request
        socket.send(request, to: node)
        nextCheckAt = now + (state == .connected ? consentInterval : .milliseconds(200))
    }

    /// The client goes away without a word: no more checks, answers, DTLS or media. `poll` only counts
    /// what still arrives (`datagramsReceived`), which after consent expiry must be nothing.
    public func vanish() { vanished = true }

    /// Receives what is waiting, answers it, retransmits, and keeps consent fresh.
    public func poll(now: MonoTime) {
        if vanished {
            while let n = try? socket.receive(into: rxBatch), n > 0 {
                datagramsReceived += n
                if n < rxBatch.capacity { break }
            }
            return
        }
        guard let node, state != .closed else { return }
        while let n = try? socket.receive(into: rxBatch), n > 0 {
            datagramsReceived += n
            for i in 0..<n { handle(rxBatch, i, now: now, node: node) }
            if n < rxBatch.capacity { break }
        }
        if now >= nextCheckAt, state == .checking || state == .connected || state == .handshaking { sendCheck(now: now) }
        if transportCCExtensionID != nil, state == .connected, feedbackRecorder.isDue(now) { sendTransportFeedback(now: now) }
        if state == .handshaking, !stallDTLS, let dtls {
            for d in dtls.tick(now: now) { socket.send(d, to: node) }
            if case .failed(let reason) = dtls.state { state = .failed("DTLS: \(reason)") }
        }
    }

    private func handle(_ batch: ReceiveBatch, _ i: Int, now: MonoTime, node: TransportAddress) {
        let datagram = batch.datagram(i)
        switch PacketClass(datagram) {
        case .stun:
            guard let checks else { return }
            let source = batch.source(i)
            if let reply = checks.answer(request: datagram, from: source) {
                socket.send(reply, to: source)
                return
            }
            guard let tid = pendingCheck else { return }
            switch checks.check(response: Array(datagram), transactionID: tid) {
            case .success:
                pendingCheck = nil
                lastAnsweredCheck = lastCheckSent
                checksSucceeded += 1
                checksSucceededSinceRestart += 1
                if state == .checking, let dtls {
                    state = .handshaking
                    for d in dtls.start(now: now) { socket.send(d, to: node) }
                }
            case .error(let code): state = .failed("ICE error \(code)")
            case .invalid: break
            }
        case .dtls:
            guard let dtls, !stallDTLS else { return }
            for reply in dtls.receive(datagram, now: now) { socket.send(reply, to: node) }
            // A server that is the DTLS client (Janus answers `a=setup:active`) may start before this client
            // has read the answer to its nominating check.
            if state == .handshaking || state == .checking, dtls.state == .connected, let keys = dtls.keys {
                tx = try? SRTPSession(keys: keys.outbound, direction: .outbound)
                rx = try? SRTPSession(keys: keys.inbound, direction: .inbound)
                state = tx != nil && rx != nil ? .connected : .failed("SRTP setup")
            }
            if state == .connected, dtls.state != .connected { state = .closed }  // close_notify from the node
        case .rtp:
            guard let rx else { return }
            let buffer = batch.buffer(i)
            let length = batch.length(i)
            if isRTCP(datagram) {
                if publishes || onRTCP != nil, case .success(let n) = rx.unprotectRTCP(buffer, length: length) {
                    let plain = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                    if publishes { readFeedback(plain) }
                    onRTCP?(plain)
                }
                return
            }
            let arrival = batch.arrival(i) ?? now
            if let id = transportCCExtensionID,
               let seq = TransportWideSequence.read(UnsafeRawBufferPointer(rebasing: buffer[0..<length]), id: id) {
                feedbackRecorder.record(sequence: seq, arrival: arrival)
                transportSequencesRecorded += 1
            }
            if let onMedia {
                onMedia(buffer, length, arrival)
            } else if case .success(let n) = rx.unprotectRTP(buffer, length: length) {
                mediaPacketsReceived += 1
                mediaBytesReceived += n
            }
        default:
            break
        }
    }

    /// Decrypts a datagram `onMedia` was given, in place; returns the RTP packet's length.
    public func decrypt(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Int? {
        guard let rx, case .success(let n) = rx.unprotectRTP(buffer, length: length) else { return nil }
        return n
    }

    /// PLI and FIR from the node ask for a keyframe.
    private func readFeedback(_ p: UnsafeRawBufferPointer) {
        _ = RTCPCompound.forEach(p) { pkt in
            if pkt.type == .payloadFeedback, pkt.countOrFormat == FeedbackFormat.pli || pkt.countOrFormat == FeedbackFormat.fir {
                keyframeRequested = true
                keyframeRequests += 1
                // RFC 4585 section 6.1: the media source follows the packet sender's SSRC.
                let at = pkt.range.lowerBound + 8
                if p.count >= at + 4 {
                    keyframeRequestedSSRCs.insert(UInt32(p[at]) << 24 | UInt32(p[at + 1]) << 16 | UInt32(p[at + 2]) << 8 | UInt32(p[at + 3]))
                }
            }
        }
    }

    /// Sends one Opus frame, with the audio level extension when the profile has it (level in -dBov, 127 =
    /// silence).
    public func sendAudio(_ frame: [UInt8], level: UInt8, samples: UInt32 = 960) {
        guard !profile.audioInactive else { return }
        send(frame, marker: false, writer: &writer, level: level)
        writer.advance(samples: samples)
    }

    /// Sends one video frame's RTP payloads (the last with the marker bit) on simulcast layer `layer` (0: the
    /// lowest, or the only stream), then advances that layer's timestamp.
    public func sendVideo(_ payloads: [[UInt8]], samples: UInt32, layer: Int = 0) {
        for (i, p) in payloads.enumerated() {
            if videoSSRCFlips.contains(layer) { moveVideo(layer: layer, to: .random(in: 1...UInt32.max)) }
            if layer == 0 {
                send(p, marker: i == payloads.count - 1, writer: &videoWriter, level: nil)
            } else {
                send(p, marker: i == payloads.count - 1, writer: &layerWriters[layer - 1], level: nil)
            }
        }
        if layer == 0 { videoWriter.advance(samples: samples) } else { layerWriters[layer - 1].advance(samples: samples) }
    }

    /// The SSRC of simulcast layer `layer` (0: the lowest, or the only stream).
    public func videoSSRC(layer: Int) -> UInt32 { layer == 0 ? videoWriter.ssrc : layerWriters[layer - 1].ssrc }

    private func send(_ payload: [UInt8], marker: Bool, writer w: inout RTPStreamHeader, level: UInt8?) {
        guard state == .connected, let tx, let node else { return }
        var n = 0
        scratch.withUnsafeMutableBytes { out in
            n = w.write(payload: payload, level: level, marker: marker, into: out)
            if case .success(let sealed) = tx.protectRTP(out, length: n) { n = sealed } else { n = 0 }
        }
        guard n > 0 else { return }
        _ = scratch.withUnsafeBytes { socket.send(Array($0[0..<n]), to: node) }
        mediaPacketsSent += 1
    }

    /// A subscriber's downlink estimate (REMB, RFC draft-alvestrand-rmcat-remb).
    public func sendREMB(bitsPerSecond: UInt64) {
        guard state == .connected, let tx, let node else { return }
        var n = 0
        scratch.withUnsafeMutableBytes { out in
            guard let written = REMB(senderSSRC: rtcpSSRC, bitrate: bitsPerSecond, ssrcs: [1]).write(into: out),
                  case .success(let sealed) = tx.protectRTCP(out, length: written) else { return }
            n = sealed
        }
        guard n > 0 else { return }
        _ = scratch.withUnsafeBytes { socket.send(Array($0[0..<n]), to: node) }
    }

    /// Transport-cc feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01) for what arrived since the
    /// last one, as a browser sends it: protected RTCP, one packet per feedback (several after a long gap).
    func sendTransportFeedback(now: MonoTime) {
        guard let tx, let node else { return }
        let media = answeredSlots.first?.ssrc ?? 0
        while true {
            var n = 0
            var more = false
            rtcpScratch.withUnsafeMutableBytes { out in
                guard let written = feedbackRecorder.writeFeedback(sender: rtcpSSRC, media: media, now: now,
                                                                    into: UnsafeMutableRawBufferPointer(rebasing: out[0..<1200])) else { return }
                more = true
                if case .success(let sealed) = tx.protectRTCP(out, length: written) { n = sealed }
            }
            guard more else { return }
            if n > 0, rtcpScratch.withUnsafeBytes({ socket.send(Array($0[0..<n]), to: node) }) { transportFeedbackSent += 1 }
        }
    }

    /// Writes the feedback for what was recorded into `out` (for tests: what `sendTransportFeedback` protects).
    func writeTransportFeedback(now: MonoTime, into out: UnsafeMutableRawBufferPointer) -> Int? {
        feedbackRecorder.writeFeedback(sender: rtcpSSRC, media: answeredSlots.first?.ssrc ?? 0, now: now, into: out)
    }

    /// Records one received packet's transport-wide sequence number, as `poll` does for each datagram (for
    /// tests: a clear RTP header is enough).
    func recordTransportSequence(_ packet: UnsafeRawBufferPointer, arrival: MonoTime) {
        guard let id = transportCCExtensionID, let seq = TransportWideSequence.read(packet, id: id) else { return }
        feedbackRecorder.record(sequence: seq, arrival: arrival)
        transportSequencesRecorded += 1
    }

    /// Sends raw bytes from this client's validated address: what a broken or hostile client would do.
    public func sendRaw(_ bytes: [UInt8]) {
        guard let node else { return }
        socket.send(bytes, to: node)
    }

    /// Protects a plain RTCP compound with this client's SRTCP keys and sends it, whatever the state (a
    /// hostile client goes on after the node closed its transport). The first packet's sender SSRC picks the
    /// SRTCP stream. False when there are no keys yet or the compound is too large.
    @discardableResult
    public func sendRTCP(_ plain: [UInt8]) -> Bool { sendProtected(plain, rtcp: true) }

    /// Protects a plain RTP packet with this client's SRTP keys and sends it (any SSRC, any payload).
    @discardableResult
    public func sendProtectedRTP(_ plain: [UInt8]) -> Bool { sendProtected(plain, rtcp: false) }

    private func sendProtected(_ plain: [UInt8], rtcp: Bool) -> Bool {
        guard let tx, let node, plain.count + SRTPSession.maxOverhead <= rtcpScratch.count else { return false }
        var n = 0
        rtcpScratch.withUnsafeMutableBytes { out in
            plain.withUnsafeBytes { out.copyMemory(from: $0) }
            let sealed = rtcp ? tx.protectRTCP(out, length: plain.count) : tx.protectRTP(out, length: plain.count)
            if case .success(let m) = sealed { n = m }
        }
        guard n > 0 else { return false }
        return rtcpScratch.withUnsafeBytes { socket.send(Array($0[0..<n]), to: node) }
    }

    /// The node's address this client sends to (its host candidate from the answer).
    public var nodeAddress: TransportAddress? { node }
}

/// RTP headers of one stream: sequence numbers per packet, timestamps per frame.
struct RTPStreamHeader {
    private(set) var ssrc: UInt32
    var payloadType: UInt8
    /// The audio level extension's id; none written when nil.
    var levelID: UInt8?
    var sequenceNumber = UInt16.random(in: 0...UInt16.max)
    var timestamp = UInt32.random(in: 0...UInt32.max)
    /// Extensions the next `taggedLeft` packets carry (a new stream's MID and RID).
    private var tags: [(id: UInt8, value: [UInt8])] = []
    private var taggedLeft = 0

    init(ssrc: UInt32, payloadType: UInt8, levelExtension: Bool) {
        self.init(ssrc: ssrc, payloadType: payloadType, levelID: levelExtension ? 1 : nil)
    }

    init(ssrc: UInt32, payloadType: UInt8, levelID: UInt8?) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.levelID = levelID
    }

    /// The next `packets` packets carry `extensions`.
    mutating func tag(_ extensions: [(id: UInt8, value: [UInt8])], packets: Int) {
        tags = extensions
        taggedLeft = packets
    }

    /// The stream goes on under another SSRC, in a sequence space of its own.
    mutating func move(to ssrc: UInt32) {
        self.ssrc = ssrc
        sequenceNumber = .random(in: 0...UInt16.max)
    }

    mutating func write(payload: [UInt8], level: UInt8?, marker: Bool, into out: UnsafeMutableRawBufferPointer) -> Int {
        var extensions: [(id: UInt8, value: [UInt8])] = []
        if let levelID, let level { extensions.append((levelID, [AudioLevelExtension(voiceActivity: level < 127, level: level).byte])) }
        if taggedLeft > 0 {
            extensions += tags
            taggedLeft -= 1
        }
        let n = payload.withUnsafeBytes { p in
            RTPPacketBuilder(payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc, marker: marker)
                .write(extensions: extensions, payload: p, into: out)
        }
        sequenceNumber &+= 1
        return n ?? 0
    }

    mutating func advance(samples: UInt32) { timestamp &+= samples }
}

public struct LoadError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}
