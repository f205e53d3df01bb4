extension LoadClient {
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
        /// Reach the node over ICE-TCP (its passive candidate, RFC 6544) instead of UDP.
        public var overTCP = false
        /// Reach the node over IPv6: the client's socket on ::1 and the node's IPv6 candidate.
        public var ipv6 = false
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
}
