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

    public let socket: UDPSocket
    public let publishes: Bool
    public let audioSlots: Int
    public private(set) var state: State = .new
    /// SRTP packets received and decrypted (a subscriber's audio).
    public private(set) var mediaPacketsReceived = 0
    public private(set) var mediaBytesReceived = 0
    public private(set) var mediaPacketsSent = 0

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
    private let rxBatch = ReceiveBatch(capacity: 32)
    private var scratch = [UInt8](repeating: 0, count: 1500)

    public init(certificate: DTLSCertificate, publishes: Bool, audioSlots: Int = 0, ssrc: UInt32 = .random(in: 1...UInt32.max)) throws {
        socket = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!, socketBufferBytes: 1 << 20)
        self.certificate = certificate
        self.publishes = publishes
        self.audioSlots = audioSlots
        writer = RTPStreamHeader(ssrc: ssrc)
    }

    /// A sendonly offer with one Opus m-line (the audio level extension as id 1), or a recvonly offer with
    /// `audioSlots` Opus m-lines; one BUNDLE transport either way.
    public func offer() -> String {
        let mids = publishes ? ["0"] : (0..<max(1, audioSlots)).map(String.init)
        var l = ["v=0", "o=- \(UInt32.random(in: 1...UInt32.max)) 1 IN IP4 0.0.0.0", "s=-", "t=0 0",
                 "a=group:BUNDLE \(mids.joined(separator: " "))", "a=fingerprint:\(certificate.fingerprint)",
                 "a=ice-ufrag:\(ice.ufrag)", "a=ice-pwd:\(ice.password)"]
        for mid in mids {
            l += ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:\(mid)", publishes ? "a=sendonly" : "a=recvonly",
                  "a=rtcp-mux", "a=setup:actpass", "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1",
                  "a=extmap:1 \(OfferAnswer.audioLevelURI)"]
            if publishes { l.append("a=ssrc:\(writer.ssrc) cname:load") }
        }
        return l.joined(separator: "\r\n") + "\r\n"
    }

    /// Reads the node's answer (credentials, fingerprint, host candidate) and sends the first check.
    public func start(answer: String, now: MonoTime) throws {
        let sdp = try SessionDescription.parse(answer)
        guard let m = sdp.media.first, let ufrag = m.attribute("ice-ufrag"), let pwd = m.attribute("ice-pwd"),
              let fp = m.attribute("fingerprint").flatMap(DTLSFingerprint.init(sdp:)),
              let candidate = m.attributes.first(where: { $0.key == "candidate" })?.value else {
            throw LoadError("the answer lacks ICE credentials, fingerprint or a candidate")
        }
        let f = candidate.split(separator: " ")
        guard f.count >= 6, let port = UInt16(f[5]), let address = TransportAddress("\(f[4]):\(port)") else {
            throw LoadError("cannot read the candidate '\(candidate)'")
        }
        node = address
        checks = ICEControllingClient(local: ice, remote: ICECredentials(ufrag: ufrag, password: pwd))
        dtls = try DTLSEndpoint(role: .client, certificate: certificate, remoteFingerprint: fp, initialRetransmitTimeout: .milliseconds(200))
        state = .checking
        sendCheck(now: now)
    }

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
            guard let checks, let tid = pendingCheck else { return }
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
            if state == .handshaking, dtls.state == .connected, let keys = dtls.keys {
                tx = try? SRTPSession(keys: keys.outbound, direction: .outbound)
                rx = try? SRTPSession(keys: keys.inbound, direction: .inbound)
                state = tx != nil && rx != nil ? .connected : .failed("SRTP setup")
            }
            if state == .connected, dtls.state != .connected { state = .closed }  // close_notify from the node
        case .rtp:
            guard let rx else { return }
            let buffer = batch.buffer(i)
            let length = batch.length(i)
            guard !isRTCP(datagram) else { return }
            if case .success(let n) = rx.unprotectRTP(buffer, length: length) {
                mediaPacketsReceived += 1
                mediaBytesReceived += n
            }
        default:
            break
        }
    }

    /// Sends one Opus frame with the audio level extension (level in -dBov, 127 = silence).
    public func sendAudio(_ frame: [UInt8], level: UInt8, samples: UInt32 = 960) {
        guard state == .connected, let tx, let node else { return }
        var n = 0
        scratch.withUnsafeMutableBytes { out in
            n = writer.write(payload: frame, level: level, into: out)
            if case .success(let sealed) = tx.protectRTP(out, length: n) { n = sealed } else { n = 0 }
        }
        writer.advance(samples: samples)
        guard n > 0 else { return }
        scratch.withUnsafeBytes { socket.send(Array($0[0..<n]), to: node) }
        mediaPacketsSent += 1
    }

    /// Sends raw bytes from this client's validated address: what a broken or hostile client would do.
    public func sendRaw(_ bytes: [UInt8]) {
        guard let node else { return }
        socket.send(bytes, to: node)
    }
}

/// RTP headers of one audio stream: sequence numbers and timestamps that advance per frame.
struct RTPStreamHeader {
    let ssrc: UInt32
    var sequenceNumber = UInt16.random(in: 0...UInt16.max)
    var timestamp = UInt32.random(in: 0...UInt32.max)

    init(ssrc: UInt32) { self.ssrc = ssrc }

    mutating func write(payload: [UInt8], level: UInt8, into out: UnsafeMutableRawBufferPointer) -> Int {
        let ext = AudioLevelExtension(voiceActivity: level < 127, level: level).byte
        let n = payload.withUnsafeBytes { p in
            RTPPacketBuilder(payloadType: 111, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc, marker: false)
                .write(extensions: [(id: 1, value: [ext])], payload: p, into: out)
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
