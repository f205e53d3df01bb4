/// Mutable per-participant state of a room. Internal: the room is the only writer.
final class Participant {
    let id: String
    let index: Int
    var name: String
    var role: Role
    var talkerCount: Int?
    var hardMutedAudio = false
    var hardMutedVideo = false
    /// The client says its camera is off (signaling); stale video also counts as off.
    var videoMuted = false
    var publishConnection: ConnectionID?
    var subscribeConnection: ConnectionID?
    var audioTrack: Int?
    /// The published camera: one track, or one per simulcast layer (lowest first).
    var cameraTracks: [Int] = []
    /// The published screen share, the same way.
    var screenTracks: [Int] = []
    /// Each source's live simulcast layers, lowest first, and the rate of each that can be trusted (nil: still
    /// ramping or unmeasured), re-read at most every 250 ms: layer choice runs on every subscriber's feedback.
    var layerRankings: [VideoSource: LayerRanking] = [:]
    /// Since when its screen share has been arriving (without a gap of `videoStaleAfter`): under
    /// `ScreenShareRule.always` the oldest share keeps the screen slot when another begins.
    var screenSharedSince: MonoTime?
    var subscriber: SubscriberState?
    /// Drops counted on connections this participant no longer has (replaced or closed transports).
    var retiredDrops = DropCounters()
    /// When the current talkspurt began (the detector said speaking), and whether it has lasted long
    /// enough (or won dominance) to count as holding the floor.
    var speakingSince: MonoTime?
    var holdsFloor = false

    init(id: String, index: Int, name: String, role: Role, talkerCount: Int?) {
        self.id = id
        self.index = index
        self.name = name
        self.role = role
        self.talkerCount = talkerCount
    }
}

extension Participant {
    /// Every video track of both sources: what hard mute, floor, feedback and stats cover.
    var videoTracks: [Int] { screenTracks.isEmpty ? cameraTracks : cameraTracks + screenTracks }

    func tracks(_ source: VideoSource) -> [Int] { source == .camera ? cameraTracks : screenTracks }
}

/// A video source's live layers, lowest first, with their trusted rates, as ranked at `at`.
struct LayerRanking {
    var at: MonoTime
    var layers: [Int]
    var rates: [Double?]
}

/// A subscriber's slots, talker list and downlink estimate.
final class SubscriberState {
    /// The subscribing connection, held so fan-out reaches it without a table lookup per sink.
    var connection: Connection?
    var audioSlots: [Slot]
    var videoSlots: [Slot]
    var talkers: [TalkerEntry] = []
    var lastEmittedMap: [Int?] = []
    /// The simulcast and temporal layer each video slot showed when the slot map was last reported.
    var lastEmittedLayers: [[Int?]] = []
    /// The codec and decodability each video slot showed when the slot map was last reported.
    var lastEmittedCodecs: [RoomEvent.SlotCodec?] = []
    var estimator: any DownlinkEstimator = REMBEstimator()
    var videoCount: VideoCountPolicy
    var egress = EgressRate()
    /// What retransmissions to this subscriber may still cost (`RoomLimits.resendKbps`).
    var resendBudget = ByteBudget()
    /// Probe clusters that let a transport-cc estimate climb to what the downlink carries.
    var probe = ProbePlanner()

    init(audioSlots: [Slot], videoSlots: [Slot], videoCount: VideoCountPolicy) {
        self.audioSlots = audioSlots
        self.videoSlots = videoSlots
        self.videoCount = videoCount
    }

    func slot(_ ref: SlotRef) -> Slot { ref.kind == .audio ? audioSlots[ref.index] : videoSlots[ref.index] }

    /// Whether `ref` names one of this subscriber's slots: refs come from tables a renegotiation rebuilds,
    /// and a stale one must be skipped, never followed out of range.
    func has(_ ref: SlotRef) -> Bool { ref.index >= 0 && ref.index < (ref.kind == .audio ? audioSlots.count : videoSlots.count) }
}

/// What the node sent one subscriber lately (kbps), measured between downlink estimates over at least 500 ms.
struct EgressRate {
    private var lastBytes: UInt64 = 0
    private var lastTime: MonoTime?
    private var rate: Int?

    mutating func kbps(bytes: UInt64, now: MonoTime) -> Int? {
        guard let t = lastTime else {
            lastBytes = bytes
            lastTime = now
            return nil
        }
        // Fewer bytes than last time: slots were removed (a renegotiation) and took their counts with them.
        guard bytes >= lastBytes else {
            lastBytes = bytes
            lastTime = now
            return rate
        }
        let dt = now - t
        guard dt >= .milliseconds(500) else { return rate }
        rate = Int(Double(bytes &- lastBytes) * 8 / dt.seconds / 1000)
        lastBytes = bytes
        lastTime = now
        return rate
    }
}

/// A slot: fixed SSRC and mid towards the subscriber, fed by at most one source at a time.
struct Slot {
    private(set) var description: SlotDescription
    /// The participant the rules placed here (what the slot map reports).
    var assigned: Int?
    /// The source track currently forwarded.
    var current: Int?
    /// Video: the source track waiting for its keyframe to take over.
    var pending: Int?
    /// The format `current` is sent in: its codec's payload type and RTX payload type on this slot.
    var format: PayloadFormat
    /// Video: the temporal and spatial layers of `current` this slot sends (`Room+LayerCaps`).
    var layers = LayerFilter()
    /// Video: a source the rules placed here that the subscriber cannot decode (no format of the slot takes
    /// its codec or profile): nothing of it is sent, and the slot map says so.
    var undecodable: Int?
    var rewriter: SlotRewriter
    var sendLog: SlotSendLog?
    var packetsSent: UInt64 = 0
    var bytesSent: UInt64 = 0
    var retransmissions: UInt64 = 0
    var silenceFramesLeft = 0
    var nextSilenceAt: MonoTime = .never
    /// Video: the size the subscriber renders this slot at, at most (its hint): a simulcast source is sent no
    /// larger a layer than the smallest that covers it.
    var renderLimit: RenderLimit?
    /// When the slot last moved between layers of one source (`reviewLayers`' up hold).
    var layerChangedAt: MonoTime = .zero
    /// Sender report forwarded last: NTP middle 32 bits and when, for the RTT in the receiver's reports.
    var lastSRMiddle: UInt32 = 0
    var lastSRSentAt: MonoTime?
    var rtt: MonoTime.Interval?
    var fractionLost: UInt8 = 0
    /// The slot's RTX stream's next sequence number (its own space, RFC 4588 section 4).
    var rtxSequence = UInt16.random(in: 0...UInt16.max)

    init(_ d: SlotDescription) {
        description = d
        format = d.formats[0]
        rewriter = SlotRewriter(clockRate: d.codec.clockRate, framesSpanPackets: d.codec.kind == .video)
        sendLog = d.codec.kind == .video ? SlotSendLog() : nil
    }

    /// The slot a renegotiation describes anew under the same mid and SSRC: the same RTP stream to the
    /// subscriber, so it keeps its continuity - rewriter (sequence numbers, timestamps, picture ids), RTX
    /// sequence, send log, counts, what it shows and its reports. A new slot there started at offset 0 with a
    /// random RTX sequence, and libsrtp refused the backward jump as a replay for up to 2^15 packets (issue 23).
    /// The caller checks that its source still fits a format of `d` (`Room.attachSubscriber`).
    init(_ d: SlotDescription, continuing old: Slot) {
        precondition(d.ssrc == old.description.ssrc && d.codec.kind == old.description.codec.kind)
        self = old
        description = d
        if old.description.rtxSSRC != d.rtxSSRC { rtxSequence = UInt16.random(in: 0...UInt16.max) }
        if d.codec.kind == .audio { format = d.formats[0] }
    }
}

/// Points at one slot of one subscriber.
struct SlotRef: Hashable {
    var subscriber: Int
    var kind: MediaKind
    var index: Int
}

/// A published track: the source side of forwarding.
final class SourceTrack {
    let index: Int
    let owner: Int
    /// What the publisher's offer declares. A renegotiation that changes it for the same RTP stream (the same
    /// SSRC, or the same mid and rid) replaces it here and keeps everything below (`Room.attachPublisher`).
    var description: PublishedTrack
    /// SSRCs in use: signalled in SDP, or learned from the MID or RID extension.
    var ssrc: UInt32?
    var rtxSSRC: UInt32?
    /// When a MID- or RID-bound track (and its RTX) last moved to a new SSRC (`RoomLimits.ssrcRebindInterval`).
    var reboundAt: MonoTime?
    var rtxReboundAt: MonoTime?
    var unwrapper = SequenceUnwrapper()
    /// What arrived, for receiver reports and stats.
    var reception: ReceptionStatistics
    /// Slots fed by this track now or waiting for its keyframe.
    var sinks: [SlotRef] = []
    // Audio
    var meter: LevelMeter
    var lastLevel: UInt8 = LevelMath.silence
    var levelSamples = LevelSampler()
    // Video
    let history: PacketHistory?
    var keyframes = KeyframeRequester()
    var live = false
    /// The frame size its last key frame said (a simulcast layer's resolution, for subscribers' render sizes).
    var frameSize: (width: Int, height: Int)?
    /// Since when it has been arriving without a gap (`videoStaleAfter`): a layer's rate means something only
    /// once its whole measuring window (2 s) is behind it.
    var liveSince: MonoTime?
    /// Packets the node asks the publisher to send again (RTX), when it takes NACK.
    var nacks = NackGenerator()
    /// What the stream costs, measured: ABWD's per-video bandwidth, and what publishers are asked for.
    var rate = RateMeter()
    /// Layered video (VP8 temporal layers, VP9 SVC): what each layer costs, index spatial x 4 + temporal, and
    /// the highest indices seen; per-slot layer caps are chosen from them.
    var layerRates: [RateMeter]
    /// Pictures per second each layer starts (1-byte counts): a temporal step's frame rate.
    var layerPictures: [RateMeter]
    var topLayers: (spatial: UInt8, temporal: UInt8) = (0, 0)
    var lastSRMiddle: UInt32 = 0
    var lastSRArrival: MonoTime?
    var lastSR: SenderReport?

    init(index: Int, owner: Int, description: PublishedTrack, levelSource: LevelSource) {
        self.index = index
        self.owner = owner
        self.description = description
        ssrc = description.ssrc
        rtxSSRC = description.rtxSSRC
        meter = LevelMeter(source: levelSource)
        reception = ReceptionStatistics(clockRate: description.codec.clockRate)
        // Every video codec: NACKs are answered from it (RFC 4585 section 3.2), whatever the payload format.
        history = description.codec.kind == .video ? PacketHistory() : nil
        layerRates = description.codec.kind == .video ? (0..<12).map { _ in RateMeter() } : []
        layerPictures = description.codec.kind == .video ? (0..<12).map { _ in RateMeter() } : []
    }

    /// Whether `d`, from a new offer, describes this track's RTP stream: the SSRC it declares is this track's,
    /// or, declaring none, it has this track's mid and rid (RFC 8843 section 9.2, RFC 8852 section 3).
    func isStream(of d: PublishedTrack) -> Bool {
        guard d.codec.kind == kind else { return false }
        if let s = d.ssrc { return s == ssrc }
        guard let mid = d.mid, mid == description.mid else { return false }
        return d.simulcast?.rid == description.simulcast?.rid
    }

    /// Takes a new offer's description of the same stream: SSRCs it declares replace the learned ones, an RTX
    /// stream it no longer has is forgotten; reception, history and rates go on.
    func redescribe(_ d: PublishedTrack) {
        description = d
        if let s = d.ssrc { ssrc = s }
        if let r = d.rtxSSRC { rtxSSRC = r } else if d.ssrc != nil || d.rtxPayloadType == nil { rtxSSRC = nil }
    }

    /// The track's stream moved to a new SSRC: a new sequence number space, so what was learned of the old
    /// one (unwrapping, reception statistics, NACK state, history) starts again.
    func restartStream(ssrc: UInt32, now: MonoTime) {
        self.ssrc = ssrc
        reboundAt = now
        unwrapper = SequenceUnwrapper()
        reception = ReceptionStatistics(clockRate: description.codec.clockRate)
        nacks = NackGenerator()
        history?.clear()
        lastSR = nil
        lastSRArrival = nil
    }

    /// Whether the source sends more than one temporal or spatial layer.
    var layered: Bool { topLayers.spatial > 0 || topLayers.temporal > 0 }

    /// Counts a packet of layer (spatial, temporal) for the per-layer rates (`pictureStart`: the first packet
    /// of that layer's frame, for its frame rate).
    func noteLayer(_ l: (spatial: UInt8, temporal: UInt8), bytes: Int, pictureStart: Bool, now: MonoTime) {
        layerRates[Int(l.spatial) * 4 + Int(l.temporal)].add(bytes: bytes, now: now)
        if pictureStart { layerPictures[Int(l.spatial) * 4 + Int(l.temporal)].add(bytes: 1, now: now) }
        if l.spatial > topLayers.spatial { topLayers.spatial = l.spatial }
        if l.temporal > topLayers.temporal { topLayers.temporal = l.temporal }
    }

    /// What the layers at or below (`spatial`, `temporal`) cost together, bits per second (0 before measured).
    func layersBitsPerSecond(spatial: Int, temporal: Int, now: MonoTime) -> Double {
        var total = 0.0
        for s in 0...spatial { for t in 0...temporal { total += layerRates[s * 4 + t].bitsPerSecond(now: now) ?? 0 } }
        return total
    }

    /// The cheapest form this source can be sent in: its base layer when layered (a slot can be capped to it),
    /// else the whole stream. ABWD weighs a video at this.
    func cheapestBitsPerSecond(now: MonoTime) -> Double? {
        layered ? layerRates[0].bitsPerSecond(now: now) : rate.bitsPerSecond(now: now)
    }

    var kind: MediaKind { description.codec.kind }

    /// Pictures per second of the base spatial layer's temporal layers up to `temporal`, measured: the frame
    /// rate a slot capped there shows.
    func pictureRate(temporal: Int, now: MonoTime) -> Double {
        (0...min(temporal, 3)).reduce(0) { $0 + (layerPictures[$1].bitsPerSecond(now: now) ?? 0) / 8 }
    }
}

/// A client transport bound to a participant, with its SRTP contexts and SSRC routing.
public final class Connection: DepartureStamped {
    public let id: ConnectionID
    let participant: Int
    /// False once the room let go of it (participant left, transport detached, room destroyed): a holder of
    /// the reference (the worker's connection table) must not feed it any more.
    public internal(set) var attached = true
    var inbound: SRTPSession?
    var outbound: SRTPSession?
    /// What this connection sent that the room dropped (its participant's share of `RoomCounters.drops`).
    var drops = DropCounters()
    /// Inbound SSRC -> (track, is RTX).
    var tracksBySSRC: [UInt32: (track: Int, rtx: Bool)] = [:]
    /// Slot SSRC -> slot, for the subscriber's feedback.
    var slotsBySSRC: [UInt32: SlotRef] = [:]
    /// SSRCs libsrtp keeps an inbound stream for (each authenticated one), retired ones included: bounded by
    /// `RoomLimits.ssrcsPerConnection`.
    var inboundSSRCs = InboundStreams()
    /// Publishing: the transport-wide sequence number's id, and the arrivals the publisher gets feedback on.
    var transportCCExtensionID: UInt8?
    var feedback: TransportFeedbackRecorder?
    /// When the node next tells the publisher how much its subscribers can take (REMB).
    var nextREMB: MonoTime = .never
    /// A REMB-only publisher's uplink, estimated from abs-send-time (its video track's id).
    var uplink: ReceiveSideEstimator?
    var absSendTimeExtensionID: UInt8?
    /// Subscribing: what the node sent, by transport-wide sequence number, for the subscriber's feedback.
    var sendHistory: SendHistory?
    /// On the batch's list of connections whose stamped packets await their departure time.
    public var awaitingDeparture = false
    public func departed(at now: MonoTime) { sendHistory?.departed(at: now) }
    /// Tracks bound by the MID extension (or a simulcast layer's RID), whose SSRCs are learned from packets,
    /// and followed when the sender moves them to a new SSRC.
    var midRoutes: [MidRoute] = []
    var nextReceiverReport: MonoTime = .never
    /// Set when the shell sends this connection's datagrams from somewhere other than the room's own batch
    /// (NodeIO: a transport another worker hosts, for a room spread across cores). Nil: the room's batch.
    public var egress: (any Egress)?

    init(id: ConnectionID, participant: Int) {
        self.id = id
        self.participant = participant
    }
}

extension Connection {
    /// The batch this connection's datagrams are written into: its egress's, or the room's own.
    @inline(__always)
    func egress(_ local: DatagramBatch) -> DatagramBatch { egress?.batch ?? local }

    /// Protects an outgoing packet in place with `srtp`, this connection's outbound context; one written into
    /// an egress of the shell's is left plain, for the shell to protect as it sends (a transport another
    /// worker hosts is protected there with its own copy of the context: a hosted listener costs the room's
    /// worker only the rewrite).
    @inline(__always)
    func protect(_ srtp: SRTPSession, _ buf: UnsafeMutableRawBufferPointer, length: Int, rtcp: Bool = false) -> Result<Int, DropReason> {
        if egress != nil { return .success(length) }
        let r = rtcp ? srtp.protectRTCP(buf, length: length) : srtp.protectRTP(buf, length: length)
        if case .failure(.srtpReplay) = r { return .failure(.protectRefused) }
        return r
    }
}

/// A track whose SSRCs are learned from header extensions sent in clear (RFC 3711 section 3.1): its MID
/// (RFC 8843 section 9.2), or for a simulcast layer its RID and repaired RID (RFC 8852 section 3).
struct MidRoute {
    var mid: [UInt8]
    var midExtensionID: UInt8
    var track: Int
    var rid: [UInt8]?
    var ridExtensionID: UInt8?
    var repairedRidExtensionID: UInt8?
}

/// Counters the room keeps for stats and metrics.
public struct RoomCounters: Sendable, Equatable {
    public var packetsIn: UInt64 = 0
    public var bytesIn: UInt64 = 0
    public var packetsOut: UInt64 = 0
    public var bytesOut: UInt64 = 0
    public var rtcpIn: UInt64 = 0
    public var rtcpOut: UInt64 = 0
    public var keyframeRequestsSent: UInt64 = 0
    public var retransmissions: UInt64 = 0
    /// Padding-only packets sent under the number of a late packet a slot leaves out (`Room.fillWithPadding`),
    /// first or again when NACKed.
    public var gapsFilled: UInt64 = 0
    /// Repairs (RTX) publishers sent for packets the node NACKed, and padding-only packets (their probes).
    public var repairsIn: UInt64 = 0
    public var paddingIn: UInt64 = 0
    /// NACK packets the node sent publishers, and padding bytes it sent subscribers to probe their downlink.
    public var nacksSent: UInt64 = 0
    public var probeBytesSent: UInt64 = 0
    public var dominantSpeakerChanges: UInt64 = 0
    /// MID- or RID-bound tracks that followed their sender to a new SSRC.
    public var ssrcRebinds: UInt64 = 0
    /// Slots of any subscriber that took a new participant (a talker switch as the subscriber sees it).
    public var slotSwitches: UInt64 = 0
    public var drops = DropCounters()
    public init() {}

    /// Adds another room's counters: the node keeps destroyed rooms' totals so its metrics never go back.
    public mutating func add(_ o: RoomCounters) {
        packetsIn &+= o.packetsIn
        bytesIn &+= o.bytesIn
        packetsOut &+= o.packetsOut
        bytesOut &+= o.bytesOut
        rtcpIn &+= o.rtcpIn
        rtcpOut &+= o.rtcpOut
        keyframeRequestsSent &+= o.keyframeRequestsSent
        retransmissions &+= o.retransmissions
        gapsFilled &+= o.gapsFilled
        repairsIn &+= o.repairsIn
        paddingIn &+= o.paddingIn
        nacksSent &+= o.nacksSent
        probeBytesSent &+= o.probeBytesSent
        dominantSpeakerChanges &+= o.dominantSpeakerChanges
        ssrcRebinds &+= o.ssrcRebinds
        slotSwitches &+= o.slotSwitches
        for r in DropReason.allCases { drops[r] &+= o.drops[r] }
    }
}

/// Where the shell has a connection's datagrams written instead of the room's batch (`Connection.egress`).
/// The room writes them plain into `batch`, which the holder may replace between writes (a batch handed to
/// another thread is swapped for an empty one), and the holder protects them as it sends.
public protocol Egress: AnyObject {
    var batch: DatagramBatch { get }
}
