/// A participant's subscribing transport: its slots (what it receives), its talker list and slot map as last
/// reported, its downlink estimate and the number of videos that estimate allows (ABWD), what it may spend
/// on retransmissions, and its probes. It answers its own feedback: reception reports, NACKs and key frame
/// requests go to the slot they name.
final class Subscriber {
    unowned let participant: Participant
    let connection: Connection
    let effects: RoomEffects
    var audioSlots: [SlotSender] = []
    var videoSlots: [SlotSender] = []
    /// Slot SSRC -> slot, for the subscriber's feedback.
    var slotsBySSRC: [UInt32: SlotSender] = [:]
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
    var resendBudget = TokenBucket()
    let resendPolicy: ResendPolicy
    /// Probe clusters that let a transport-cc estimate climb to what the downlink carries.
    var probe = ProbePlanner()
    /// The lowest its estimate has been lately: what a layer must fit to be climbed to (`reviewLayers`).
    var estimateFloor = EstimateFloor()
    /// A relay's: each slot shows the layer it was bound to, whole (`RelayLink`); no estimate moves or caps it.
    var passesEveryLayer = false

    init(participant: Participant, connection: Connection, videoCount: VideoCountPolicy, resendPolicy: ResendPolicy, effects: RoomEffects) {
        self.participant = participant
        self.connection = connection
        self.videoCount = videoCount
        self.resendPolicy = resendPolicy
        self.effects = effects
    }

    var slots: [SlotSender] { audioSlots + videoSlots }
    func slots(_ kind: MediaKind) -> [SlotSender] { kind == .audio ? audioSlots : videoSlots }

    /// Takes a subscribe offer's slots: those whose mid and SSRC it keeps go on (described anew when their
    /// description changed, `SlotSender.redescribe`), the others are new, and those it leaves out stop.
    /// Returns whether the slot map changed shape.
    func bind(_ descriptions: [SlotDescription], startBitrate: Double) -> Bool {
        let old = Dictionary(slots.map { ($0.description.mid, $0) }, uniquingKeysWith: { a, _ in a })
        let before = (audioSlots.map(\.description), videoSlots.map(\.description))
        var kept = Set<ObjectIdentifier>()
        func make(_ d: SlotDescription, _ position: Int) -> SlotSender {
            if let s = old[d.mid], s.description.ssrc == d.ssrc, s.kind == d.codec.kind {
                if s.description != d { s.redescribe(d) }
                s.position = position
                kept.insert(ObjectIdentifier(s))
                return s
            }
            let s = SlotSender(d, position: position, connection: connection, effects: effects)
            s.subscriber = self
            return s
        }
        audioSlots = descriptions.filter { $0.codec.kind == .audio }.enumerated().map { make($1, $0) }
        videoSlots = descriptions.filter { $0.codec.kind == .video }.enumerated().map { make($1, $0) }
        for s in old.values where !kept.contains(ObjectIdentifier(s)) {
            s.clear()
            s.subscriber = nil
        }
        slotsBySSRC = [:]
        for s in slots { slotsBySSRC[s.description.ssrc] = s }
        videoCount.clamp(maxVideos: videoSlots.count)
        // transport-cc when the subscriber negotiated it: every packet to it carries the transport-wide
        // sequence number and its feedback drives a GCC estimate; otherwise its REMB is the estimate.
        let tcc = descriptions.contains { $0.transportCCExtensionID != nil }
        if tcc, connection.sendHistory == nil { connection.sendHistory = SendHistory() }
        if !tcc { connection.sendHistory = nil }
        if tcc != (estimator is GCCEstimator) {
            estimator = tcc ? GCCEstimator(startBitrate: startBitrate) : REMBEstimator()
        }
        let same = before.0 == audioSlots.map(\.description) && before.1 == videoSlots.map(\.description)
        if !same { lastEmittedMap = [] }  // the slot map changed shape: report it
        return !same
    }

    /// The subscriber goes: its slots let go of what they showed.
    func unbind() {
        for s in slots {
            s.clear()
            s.subscriber = nil
        }
        audioSlots = []
        videoSlots = []
        slotsBySSRC = [:]
    }

    // MARK: Feedback

    /// The subscriber's reception reports on its slots: loss, and round-trip time (`SlotSender.onReport`),
    /// which the estimator takes too.
    func onReports(_ blocks: [ReportBlock], now: MonoTime) {
        for b in blocks {
            guard let slot = slotsBySSRC[b.ssrc] else { continue }
            slot.onReport(b, now: now)
            if let rtt = slot.rtt { estimator.setRTT(rtt) }
        }
    }

    /// PLI or FIR on a video slot reach its current source and the source it is switching to, throttled per
    /// source (`PublishedTrack.requestKeyframe`).
    func onKeyframeRequest(slotSSRC: UInt32, now: MonoTime, into out: DatagramBatch) {
        guard let slot = slotsBySSRC[slotSSRC], slot.kind == .video else { return }
        for t in [slot.current, slot.pending].compactMap({ $0 }) { t.requestKeyframe(now: now, into: out, effects: effects) }
    }

    /// A NACK on a video slot: what it sent under each lost number, again (`SlotSender.resend`).
    func onNACK(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket, mediaSSRC: UInt32, tracks: [Int: PublishedTrack], now: MonoTime,
                into out: DatagramBatch) {
        guard let slot = slotsBySSRC[mediaSSRC], slot.kind == .video else { return }
        _ = GenericNACK.forEachLost(p, pkt) { seq in slot.resend(seq, subscriber: self, policy: resendPolicy, tracks: tracks, now: now, into: out) }
    }

    /// What the node sent it since the last estimate (kbit/s), for ABWD's "capped by what is sent" reading.
    func sentKbps(now: MonoTime) -> Int? {
        // Counted in place, not through `filter` and `+` on the slot arrays: this runs for every feedback.
        var bytes: UInt64 = 0
        for s in audioSlots { bytes &+= s.bytesSent }
        for s in videoSlots { bytes &+= s.bytesSent }
        return egress.kbps(bytes: bytes, now: now)
    }

    /// Audio slots sending something now, each of which keeps `audioReserveKbps` of the estimate.
    var audioSlotsInUse: Int { audioSlots.count { $0.current != nil } }
}
