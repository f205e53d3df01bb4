/// What the SDP layer and the engine say about media: codecs, formats and the descriptions of a published
/// track and of a subscriber's slot, as an offer declared them.

public enum MediaKind: String, Sendable, Codable {
    case audio, video
}

/// What rooms forward: Opus for audio; VP8, VP9 (RFC 9628) and H.264 (RFC 6184, packetization-mode 1) for
/// video, each at the 90 kHz clock of its payload format.
public enum Codec: String, Sendable, Codable, CaseIterable {
    case opus, vp8, vp9, h264

    // Inlinable: read per packet from the engine, another module.
    @inlinable public var kind: MediaKind { self == .opus ? .audio : .video }
    @inlinable public var clockRate: Int { self == .opus ? 48_000 : 90_000 }
}

/// A track a participant publishes, as its SDP offer declares it (the edge binds SSRCs to tracks).
///
/// When the offer signals no SSRC (RFC 8843 section 9.2: mid-based demultiplexing), `ssrc` is nil and the
/// room learns it from the first packet that carries `mid` in the RTP MID header extension and passes SRTP
/// authentication; packets with `rtxPayloadType` bind the RTX SSRC the same way.
public struct TrackDescription: Sendable, Equatable {
    public var codec: Codec
    public var ssrc: UInt32?
    public var rtxSSRC: UInt32?
    public var payloadType: UInt8
    /// H.264: the sub-profile and level the publisher's format declares (its fmtp), which a subscriber's
    /// format must accept (`SlotDescription.format(for:)`).
    public var h264: H264ProfileLevelID?
    /// The negotiated id of the RFC 6464 audio level extension, if any.
    public var audioLevelExtensionID: UInt8?
    public var mid: String?
    public var midExtensionID: UInt8?
    public var rtxPayloadType: UInt8?
    /// The negotiated id of the transport-wide sequence number extension: the node sends the publisher
    /// transport-cc feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01).
    public var transportCCExtensionID: UInt8?
    /// Audio: the RED payload type (RFC 2198) when the publisher may send Opus with redundancy.
    public var redPayloadType: UInt8?
    /// Video: the publisher takes NACK (the node asks for lost packets, RFC 4585) and REMB (the node caps its
    /// rate at what its subscribers can take).
    public var nack = false
    public var remb = false
    /// abs-send-time's id when the publisher takes REMB but not transport-cc: the node estimates its uplink.
    public var absSendTimeExtensionID: UInt8?
    /// One spatial layer of a simulcast video (RFC 8853): its place in the offer's `a=simulcast` list (or
    /// `a=ssrc-group:SIM`), and, rid-based, its rid and the ids of the RID and repaired-RID header extensions
    /// (RFC 8852) that bind its SSRCs when the offer gives none.
    public var simulcast: SimulcastLayer?
    /// Video: a camera or a screen share (a participant may publish one of each).
    public var source: VideoSource = .camera

    public init(codec: Codec, ssrc: UInt32?, rtxSSRC: UInt32? = nil, payloadType: UInt8, audioLevelExtensionID: UInt8? = nil,
                mid: String? = nil, midExtensionID: UInt8? = nil, rtxPayloadType: UInt8? = nil,
                transportCCExtensionID: UInt8? = nil, redPayloadType: UInt8? = nil, nack: Bool = false, remb: Bool = false) {
        self.codec = codec
        self.ssrc = ssrc
        self.rtxSSRC = rtxSSRC
        self.payloadType = payloadType
        self.audioLevelExtensionID = audioLevelExtensionID
        self.mid = mid
        self.midExtensionID = midExtensionID
        self.rtxPayloadType = rtxPayloadType
        self.transportCCExtensionID = transportCCExtensionID
        self.redPayloadType = redPayloadType
        self.nack = nack
        self.remb = remb
    }
}

/// Where a video comes from. A screen share is a second video source of its participant, with its own slots
/// at subscribers (`SlotDescription.source`) and its own rule (`ScreenShareRule`), not a talker's camera.
public enum VideoSource: String, Sendable, Codable, CaseIterable {
    case camera, screen
}

/// A published video's spatial layer (see `TrackDescription.simulcast`).
public struct SimulcastLayer: Sendable, Equatable {
    public var index: Int
    public var rid: String?
    public var ridExtensionID: UInt8?
    public var repairedRidExtensionID: UInt8?

    public init(index: Int, rid: String? = nil, ridExtensionID: UInt8? = nil, repairedRidExtensionID: UInt8? = nil) {
        self.index = index
        self.rid = rid
        self.ridExtensionID = ridExtensionID
        self.repairedRidExtensionID = repairedRidExtensionID
    }
}

/// One recvonly m-line of a subscriber: a slot the node fills with whichever talker the rules choose.
public struct SlotDescription: Sendable, Equatable {
    /// The formats the subscriber takes on this slot, in its offer's order, never empty: Opus for audio; for
    /// video each VP8, VP9 and H.264 (packetization-mode 1) format it offered, under its own payload type and
    /// RTX payload type. One slot can so carry sources of different codecs: RFC 3264 section 5.1 lets the
    /// sender move among an answer's formats at any time, and the node moves at a key frame of the new source.
    public var formats: [PayloadFormat]
    public var mid: String
    /// The SSRC the node sends this slot with (in the SDP answer).
    public var ssrc: UInt32
    /// The subscriber's id for the audio level extension, to pass levels on.
    public var audioLevelExtensionID: UInt8?
    /// The subscriber's id for abs-send-time, stamped on video so its receiver can estimate bandwidth (REMB).
    public var absSendTimeExtensionID: UInt8?
    /// The subscriber's id for the transport-wide sequence number: every packet to the connection carries
    /// one, and the subscriber's transport-cc feedback drives the node's estimate of its downlink.
    public var transportCCExtensionID: UInt8?
    /// Video: the slot's RTX stream (RFC 4588) for NACKed packets and probe padding; each format names its
    /// own RTX payload type.
    public var rtxSSRC: UInt32?
    /// Audio: the subscriber takes Opus with redundancy (RFC 2198) under this payload type.
    public var redPayloadType: UInt8?
    /// Video: what the slot shows, talkers' cameras or screen shares (a slot kind of its own: screen shares
    /// are not ranked as talkers).
    public var source: VideoSource = .camera

    /// At most this many formats per slot: every codec and H.264 profile Chromium offers fits.
    public static let maxFormats = 8

    /// The first format's codec: the slot's kind, and what a single-format slot carries.
    public var codec: Codec {
        get { formats[0].codec }
        set { formats[0].codec = newValue }
    }

    /// The first format's payload type.
    public var payloadType: UInt8 {
        get { formats[0].payloadType }
        set { formats[0].payloadType = newValue }
    }

    /// The first format's RTX payload type.
    public var rtxPayloadType: UInt8? {
        get { formats[0].rtxPayloadType }
        set { formats[0].rtxPayloadType = newValue }
    }

    public init(codec: Codec, mid: String, ssrc: UInt32, payloadType: UInt8, audioLevelExtensionID: UInt8? = nil,
                absSendTimeExtensionID: UInt8? = nil, transportCCExtensionID: UInt8? = nil, rtxPayloadType: UInt8? = nil,
                rtxSSRC: UInt32? = nil, redPayloadType: UInt8? = nil, otherFormats: [PayloadFormat] = []) {
        self.formats = [PayloadFormat(codec: codec, payloadType: payloadType, rtxPayloadType: rtxPayloadType)] + otherFormats
        self.mid = mid
        self.ssrc = ssrc
        self.audioLevelExtensionID = audioLevelExtensionID
        self.absSendTimeExtensionID = absSendTimeExtensionID
        self.transportCCExtensionID = transportCCExtensionID
        self.rtxSSRC = rtxSSRC
        self.redPayloadType = redPayloadType
    }

    /// The format this slot sends `source` in, nil when the subscriber cannot decode it: the first with the
    /// source's codec; for H.264 the first whose profile and level accept the source's
    /// (`H264ProfileLevelID.isDecodable(by:)`; an absent profile-level-id is RFC 6184's default), one of the
    /// source's own sub-profile before one that takes it as a subset, so that a stream goes under the format
    /// that names it whenever the subscriber offered one.
    public func format(for source: TrackDescription) -> PayloadFormat? {
        guard source.codec == .h264 else { return formats.first { $0.codec == source.codec } }
        let sent = source.h264 ?? .absent
        func takes(_ f: PayloadFormat) -> Bool { f.codec == .h264 && sent.isDecodable(by: f.h264 ?? .absent) }
        return formats.first { takes($0) && ($0.h264 ?? .absent).profile == sent.profile } ?? formats.first(where: takes)
    }
}

/// A codec under one payload type, with its RTX payload type (RFC 4588 `apt`) and, for H.264, the profile and
/// level its fmtp declares.
public struct PayloadFormat: Sendable, Equatable {
    public var codec: Codec
    public var payloadType: UInt8
    public var rtxPayloadType: UInt8?
    public var h264: H264ProfileLevelID?

    public init(codec: Codec, payloadType: UInt8, rtxPayloadType: UInt8? = nil, h264: H264ProfileLevelID? = nil) {
        self.codec = codec
        self.payloadType = payloadType
        self.rtxPayloadType = rtxPayloadType
        self.h264 = h264
    }
}
