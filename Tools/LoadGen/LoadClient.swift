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
///
/// This file holds the client's state; what it does is in extensions, one concern each: `LoadClient+Profile`
/// (what it sends and receives), `+Offer` (the descriptions it writes), `+Connection` (reading answers, ICE
/// and DTLS), `+Send` (media and made-up packets) and `+Receive` (polling, counting, transport-cc feedback).
public final class LoadClient {
    public enum State: Equatable { case new, checking, handshaking, connected, failed(String), closed }

    public let socket: UDPSocket
    /// The ICE-TCP connection to the node when the profile says `overTCP` (opened on the answer).
    public internal(set) var stream: TCPStream?
    /// What the last offer asked for (a renegotiation may change the slots).
    public internal(set) var profile: Profile
    public var publishes: Bool { profile.publishes }
    public internal(set) var state: State = .new
    /// The node asked for a keyframe (PLI or FIR) since the flag was last cleared.
    public var keyframeRequested = false
    /// The SSRCs the node asked keyframes of since the caller last cleared the set (a simulcast publisher
    /// answers each layer's PLI on that layer).
    public var keyframeRequestedSSRCs: Set<UInt32> = []
    /// PLIs and FIRs received, ever.
    public internal(set) var keyframeRequests = 0
    /// Interval of consent checks once connected (RFC 7675 allows 4-6 s; browsers use about 5 s). A node whose
    /// consent lifetime is short needs them more often.
    public var consentInterval: MonoTime.Interval = .milliseconds(2500)
    /// Stop after the first DTLS flight: send the ClientHello, then ignore the server (a handshake that never
    /// finishes).
    public var stallDTLS = false
    /// Every decrypted RTCP compound the client receives.
    public var onRTCP: ((UnsafeRawBufferPointer) -> Void)?
    /// Datagrams of any kind that reached the socket while polled (after `vanish()` too).
    public internal(set) var datagramsReceived = 0
    /// Successful answers to this client's connectivity checks since the last ICE restart.
    public internal(set) var checksSucceededSinceRestart = 0
    /// The last nominating Binding request sent, and the last one the node answered (what a man in the
    /// middle could capture and replay).
    public internal(set) var lastCheckSent: [UInt8]?
    public internal(set) var lastAnsweredCheck: [UInt8]?
    /// The slots the node's last answer gave (recvonly m-lines), in m-line order, with the SSRC it sends on.
    public internal(set) var answeredSlots: [(mid: String, kind: String, ssrc: UInt32)] = []
    /// The node's ICE credentials from the last answer.
    public internal(set) var remoteICE: ICECredentials?
    /// The client stopped answering and checking (`vanish()`): polling only counts what still arrives.
    public internal(set) var vanished = false
    /// Every SRTP datagram a subscriber receives, still encrypted, with its length and arrival time; set it
    /// to count and sample without decrypting everything (`decrypt` opens one). Default: decrypt and count.
    public var onMedia: ((UnsafeMutableRawBufferPointer, Int, MonoTime) -> Void)?
    /// SRTP packets received and decrypted (a subscriber's audio), and media packets sent.
    public internal(set) var mediaPacketsReceived = 0
    public internal(set) var mediaPacketsSent = 0
    /// The payload type video arrives with: 96 as this client offers it, or what a server's offer said.
    public internal(set) var videoPayloadType: UInt8 = 96
    /// The RTX payload type the answer kept for video (97 as offered with transport-cc), nil without RTX.
    /// With no NACKs from this client, what arrives on it is the node's probe padding.
    public internal(set) var rtxPayloadType: UInt8?
    /// The transport-wide sequence number's extension id the answer kept; nil when transport-cc was not
    /// negotiated (the client then has no feedback to send).
    public internal(set) var transportCCExtensionID: UInt8?
    /// Transport-cc feedback packets sent, and packets whose transport-wide sequence number was recorded.
    public internal(set) var transportFeedbackSent = 0
    public internal(set) var transportSequencesRecorded = 0
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

    public internal(set) var ice = ICECredentials.random()
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
    let rxBatch = ReceiveBatch(capacity: 64)
    var scratch = [UInt8](repeating: 0, count: 1500)
    var rtcpScratch = [UInt8](repeating: 0, count: 1500 + SRTPSession.maxOverhead)
    /// The sender SSRC of this client's own RTCP.
    public let rtcpSSRC = UInt32.random(in: 1...UInt32.max)
    /// Video layers whose every packet goes on a new SSRC (`moveVideo` before each): a sender that keeps
    /// changing SSRCs, each new stream's first packet naming the layer's MID and RID.
    public var videoSSRCFlips: Set<Int> = []

    /// A client on a socket of its own, or on `socket` (a client that starts over on the same address).
    public init(certificate: DTLSCertificate, profile: Profile, socket shared: UDPSocket? = nil) throws {
        socket = try shared ?? UDPSocket(bind: TransportAddress(profile.ipv6 ? "[::1]:0" : "127.0.0.1:0")!, socketBufferBytes: 4 << 20)
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

    /// Soak's clients: audio only.
    public convenience init(certificate: DTLSCertificate, publishes: Bool, audioSlots: Int = 0) throws {
        try self.init(certificate: certificate, profile: publishes ? .publisher() : .subscriber(audio: audioSlots))
    }

    /// Rid-based simulcast: the layers are announced by rid, their SSRCs learned from the extensions.
    var ridSimulcast: Bool { profile.ridSimulcast && profile.simulcastLayers > 1 }

    /// The video m-line's mid: after the audio one when the client publishes audio.
    var videoMid: Int { profile.publishAudio ? 1 : 0 }

    /// The sequence number the next audio packet goes with (past 65,535 it wraps to 0).
    public var nextAudioSequence: UInt16 { writer.sequenceNumber }
    public func nextVideoSequence(layer: Int = 0) -> UInt16 { layer == 0 ? videoWriter.sequenceNumber : layerWriters[layer - 1].sequenceNumber }

    /// The SSRCs this client sends audio and video with.
    public var audioSSRC: UInt32 { writer.ssrc }
    public var videoSSRC: UInt32 { videoWriter.ssrc }

    /// The SRTP profile the DTLS handshake chose.
    public var srtpProfile: SRTPProfile? { dtls?.keys?.profile }

    /// The node's address this client sends to (its host candidate from the answer).
    public var nodeAddress: TransportAddress? { node }
}
