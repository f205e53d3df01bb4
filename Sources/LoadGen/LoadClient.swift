import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// A WebRTC client on the wire, as a browser or aiortc behaves towards the node, without media devices: its
/// own UDP socket, an SDP offer, ICE as the controlling agent (nominating the node's host candidate), a DTLS
/// client handshake, SRTP, and STUN consent checks every 2.5 s (RFC 7675). Driven by `poll(now:)` from one
/// loop, so one thread runs many clients.
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
        public init() {}

        public static func publisher(audio: Bool = true, video: Bool = false, levelExtension: Bool = true) -> Profile {
            var p = Profile()
            p.publishAudio = audio
            p.publishVideo = video
            p.levelExtension = levelExtension
            return p
        }

        public static func subscriber(audio: Int, video: Int = 0) -> Profile {
            var p = Profile()
            p.audioSlots = audio
            p.videoSlots = video
            return p
        }

        var publishes: Bool { publishAudio || publishVideo }
    }

    public let socket: UDPSocket
    public let profile: Profile
    public var publishes: Bool { profile.publishes }
    public private(set) var state: State = .new
    /// The node asked for a keyframe (PLI or FIR) since the flag was last cleared.
    public var keyframeRequested = false
    /// Every SRTP datagram a subscriber receives, still encrypted, with its length and arrival time; set it
    /// to count and sample without decrypting everything (`decrypt` opens one). Default: decrypt and count.
    public var onMedia: ((UnsafeMutableRawBufferPointer, Int, MonoTime) -> Void)?
    /// SRTP packets received and decrypted (a subscriber's audio).
    public private(set) var mediaPacketsReceived = 0
    public private(set) var mediaBytesReceived = 0
    public private(set) var mediaPacketsSent = 0
    /// The payload type video arrives with: 96 as this client offers it, or what a server's offer said.
    public private(set) var videoPayloadType: UInt8 = 96

    let ice = ICECredentials.random()
    let certificate: DTLSCertificate
    var checks: ICEControllingClient?
    var node: TransportAddress?
    var dtls: DTLSEndpoint?
    var tx: SRTPSession?
    var rx: SRTPSession?
    var pendingCheck: [UInt8]?
    var nextCheckAt = MonoTime.zero
    var writer: RTPStreamHeader
    var videoWriter: RTPStreamHeader
    private let rxBatch = ReceiveBatch(capacity: 64)
    private var scratch = [UInt8](repeating: 0, count: 1500)
    private let rtcpSSRC = UInt32.random(in: 1...UInt32.max)

    public init(certificate: DTLSCertificate, profile: Profile) throws {
        socket = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!, socketBufferBytes: 4 << 20)
        if !profile.publishes { try socket.enableReceiveTimestamps() }  // latency from kernel arrival, not from polling
        self.certificate = certificate
        self.profile = profile
        writer = RTPStreamHeader(ssrc: .random(in: 1...UInt32.max), payloadType: 111, levelExtension: profile.levelExtension)
        videoWriter = RTPStreamHeader(ssrc: .random(in: 1...UInt32.max), payloadType: 96, levelExtension: false)
    }

    /// Soak's clients: audio only.
    public convenience init(certificate: DTLSCertificate, publishes: Bool, audioSlots: Int = 0) throws {
        try self.init(certificate: certificate, profile: publishes ? .publisher() : .subscriber(audio: audioSlots))
    }

    /// A sendonly offer (Opus with the audio level extension as id 1, VP8 as 96) or a recvonly offer with
    /// the profile's audio and video slots (VP8 slots offer NACK, PLI, REMB and abs-send-time); one BUNDLE
    /// transport either way, its host candidate in every m-line.
    public func offer() -> String {
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
            if section.kind == "audio" {
                l += ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:\(i)", direction, "a=rtcp-mux", "a=setup:actpass",
                      "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1", "a=extmap:1 \(OfferAnswer.audioLevelURI)"]
                if section.send { l.append("a=ssrc:\(writer.ssrc) cname:load") }
                l += transportLines()
            } else {
                l += ["m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 0.0.0.0", "a=mid:\(i)", direction, "a=rtcp-mux", "a=setup:actpass",
                      "a=rtpmap:96 VP8/90000", "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli", "a=rtcp-fb:96 goog-remb",
                      "a=extmap:3 \(OfferAnswer.absSendTimeURI)"]
                if section.send { l.append("a=ssrc:\(videoWriter.ssrc) cname:load") }
                l += transportLines()
            }
        }
        return l.joined(separator: "\r\n") + "\r\n"
    }

    /// Reads the server's answer to `offer()` (credentials, fingerprint, host candidate, DTLS role) and sends
    /// the first check.
    public func start(answer: String, now: MonoTime) throws {
        try connect(to: SessionDescription.parse(answer), now: now)
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
        socket.send(checks.bindingRequest(nominate: true, transactionID: tid), to: node)
        nextCheckAt = now + (state == .connected ? .milliseconds(2500) : .milliseconds(200))
    }

    /// Receives what is waiting, answers it, retransmits, and keeps consent fresh.
    public func poll(now: MonoTime) {
        guard let node, state != .closed else { return }
        while let n = try? socket.receive(into: rxBatch), n > 0 {
            for i in 0..<n { handle(rxBatch, i, now: now, node: node) }
            if n < rxBatch.capacity { break }
        }
        if now >= nextCheckAt, state == .checking || state == .connected || state == .handshaking { sendCheck(now: now) }
        if state == .handshaking, let dtls {
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
                if state == .checking, let dtls {
                    state = .handshaking
                    for d in dtls.start(now: now) { socket.send(d, to: node) }
                }
            case .error(let code): state = .failed("ICE error \(code)")
            case .invalid: break
            }
        case .dtls:
            guard let dtls else { return }
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
                if publishes, case .success(let n) = rx.unprotectRTCP(buffer, length: length) { readFeedback(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) }
                return
            }
            if let onMedia {
                onMedia(buffer, length, batch.arrival(i) ?? now)
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
            }
        }
    }

    /// Sends one Opus frame, with the audio level extension when the profile has it (level in -dBov, 127 =
    /// silence).
    public func sendAudio(_ frame: [UInt8], level: UInt8, samples: UInt32 = 960) {
        send(frame, marker: false, writer: &writer, level: level)
        writer.advance(samples: samples)
    }

    /// Sends one video frame's RTP payloads (the last with the marker bit), then advances the timestamp.
    public func sendVideo(_ payloads: [[UInt8]], samples: UInt32) {
        for (i, p) in payloads.enumerated() { send(p, marker: i == payloads.count - 1, writer: &videoWriter, level: nil) }
        videoWriter.advance(samples: samples)
    }

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

    /// Sends raw bytes from this client's validated address: what a broken or hostile client would do.
    public func sendRaw(_ bytes: [UInt8]) {
        guard let node else { return }
        socket.send(bytes, to: node)
    }
}

/// RTP headers of one stream: sequence numbers per packet, timestamps per frame.
struct RTPStreamHeader {
    let ssrc: UInt32
    let payloadType: UInt8
    let levelExtension: Bool
    var sequenceNumber = UInt16.random(in: 0...UInt16.max)
    var timestamp = UInt32.random(in: 0...UInt32.max)

    init(ssrc: UInt32, payloadType: UInt8, levelExtension: Bool) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.levelExtension = levelExtension
    }

    mutating func write(payload: [UInt8], level: UInt8?, marker: Bool, into out: UnsafeMutableRawBufferPointer) -> Int {
        var extensions: [(id: UInt8, value: [UInt8])] = []
        if levelExtension, let level { extensions.append((1, [AudioLevelExtension(voiceActivity: level < 127, level: level).byte])) }
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
