/// A published track, the producer of forwarding: one RTP stream a participant sends (an audio track, a
/// camera, a screen share, or one simulcast layer of either), bound to its SSRCs, with what is known of its
/// reception (sequence unwrapping, statistics, NACK state, history), its level, its key frames and its layer
/// rates. It feeds its `consumers` - the slots showing it or waiting for its key frame - through direct
/// references: a packet goes to each without a lookup.
final class PublishedTrack {
    let index: Int
    /// The participant who publishes it (its index in the room).
    let owner: Int
    /// The publisher it arrives through (for its key frame requests and feedback); nil once it ended.
    var publisher: Publisher?
    /// What the publisher's offer declares. A renegotiation that changes it for the same RTP stream (the same
    /// SSRC, or the same mid and rid) replaces it here and keeps everything below (`Publisher.bind`).
    var description: TrackDescription
    /// SSRCs in use: signalled in SDP, or learned from the MID or RID extension.
    var ssrc: UInt32?
    var rtxSSRC: UInt32?
    /// When a MID- or RID-bound track (and its RTX) last moved to a new SSRC (`RoomLimits.ssrcRebindInterval`).
    var reboundAt: MonoTime?
    var rtxReboundAt: MonoTime?
    var unwrapper = SequenceUnwrapper()
    /// What arrived, for receiver reports and stats.
    var reception: ReceptionStatistics
    /// What it feeds now or after its next key frame: slots today, a relay or a recorder tomorrow.
    var consumers: [any MediaConsumer] = []
    // Audio
    var meter: LevelMeter
    var lastLevel: UInt8 = LevelMath.silence
    var levelSamples = LevelSampler()
    /// Its last packets, for a slot that takes it over as its publisher starts speaking to send the utterance
    /// from its onset (`SlotSender.replayOnset`); nil for video and when the room replays nothing.
    let onset: OnsetBuffer?
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

    init(index: Int, owner: Int, description: TrackDescription, levelSource: LevelSource, onsetReplay: MonoTime.Interval = .milliseconds(0)) {
        self.index = index
        self.owner = owner
        self.description = description
        ssrc = description.ssrc
        rtxSSRC = description.rtxSSRC
        meter = LevelMeter(source: levelSource)
        reception = ReceptionStatistics(clockRate: description.codec.clockRate)
        // Every video codec: NACKs are answered from it (RFC 4585 section 3.2), whatever the payload format.
        history = description.codec.kind == .video ? PacketHistory() : nil
        onset = description.codec.kind == .audio && onsetReplay.nanoseconds > 0 ? OnsetBuffer(span: onsetReplay) : nil
        layerRates = description.codec.kind == .video ? (0..<12).map { _ in RateMeter() } : []
        layerPictures = description.codec.kind == .video ? (0..<12).map { _ in RateMeter() } : []
    }

    var kind: MediaKind { description.codec.kind }

    // MARK: Consumers

    /// Sends a packet on to every consumer; one may take this track over at a key frame (`inOrder` only).
    @inline(__always)
    func forward(_ packet: ForwardedPacket, now: MonoTime, into out: DatagramBatch) {
        var i = 0
        while i < consumers.count {
            consumers[i].consume(packet, from: self, now: now, into: out)
            i += 1
        }
    }

    func attach(_ c: any MediaConsumer) {
        if !consumers.contains(where: { $0 === c }) { consumers.append(c) }
    }

    func detach(_ c: any MediaConsumer) { consumers.removeAll { $0 === c } }

    /// The track ends, or stops being sent (muted, floor taken): every consumer lets go of it.
    func releaseConsumers() {
        let all = consumers
        consumers.removeAll()
        for c in all { c.trackEnded(self) }
    }

    // MARK: The stream

    /// Whether `d`, from a new offer, describes this track's RTP stream: the SSRC it declares is this track's,
    /// or, declaring none, it has this track's mid and rid (RFC 8843 section 9.2, RFC 8852 section 3).
    func isStream(of d: TrackDescription) -> Bool {
        guard d.codec.kind == kind else { return false }
        if let s = d.ssrc { return s == ssrc }
        guard let mid = d.mid, mid == description.mid else { return false }
        return d.simulcast?.rid == description.simulcast?.rid
    }

    /// Takes a new offer's description of the same stream: SSRCs it declares replace the learned ones, an RTX
    /// stream it no longer has is forgotten; reception, history and rates go on.
    func redescribe(_ d: TrackDescription) {
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
        onset?.clear()
        lastSR = nil
        lastSRArrival = nil
    }

    /// Reception statistics for receiver reports, and what the stream costs on the wire (roughly: 40 bytes
    /// of IP, UDP and RTP headers per packet) for ABWD and the publisher's caps.
    func noteReception(_ header: RTPHeader, extendedSequence ext: Int64, now: MonoTime) {
        reception.record(extendedSequence: ext, timestamp: header.timestamp, payloadBytes: header.payloadLength, now: now)
        rate.add(bytes: header.payloadLength + 40, now: now)
    }

    // MARK: Audio

    /// Where an audio packet's Opus frame is: its payload, or the primary block of RFC 2198 redundancy under
    /// the track's RED payload type (whose primary must be the track's Opus). Nil: neither.
    func audioPayload(_ plain: UnsafeRawBufferPointer, _ header: RTPHeader) -> (primary: Range<Int>, red: REDPayload?)? {
        if header.payloadType == description.redPayloadType, description.redPayloadType != nil {
            guard case .success(let r) = REDPayload.parse(UnsafeRawBufferPointer(rebasing: plain[header.payloadRange])),
                  r.primaryPayloadType == description.payloadType else { return nil }
            return ((header.payloadOffset + r.primary.lowerBound)..<(header.payloadOffset + r.primary.upperBound), r)
        }
        return header.payloadType == description.payloadType ? (header.payloadRange, nil) : nil
    }

    // MARK: Video

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

    /// Pictures per second of the base spatial layer's temporal layers up to `temporal`, measured: the frame
    /// rate a slot capped there shows.
    func pictureRate(temporal: Int, now: MonoTime) -> Double {
        (0...min(temporal, 3)).reduce(0) { $0 + (layerPictures[$1].bitsPerSecond(now: now) ?? 0) / 8 }
    }

    /// Whether a consumer waits for this track's next key frame: one about to take it over, or a slot whose
    /// spatial layer cap rose (a higher layer comes back only at a key frame).
    var keyframeAwaited: Bool { consumers.contains { $0.awaitsKeyframe(of: self) } }

    /// A consumer waits for this track's key frame: asked for until it comes (`retryKeyframeRequest`).
    func awaitKeyframe(now: MonoTime, effects: RoomEffects) {
        keyframes.startWaiting(now: now)
        if let retry = keyframes.nextRetry(rtt: nil) { effects.wake(at: retry) }
    }

    /// Sends a PLI to the publisher, at most one per 200 ms (RFC 4585 section 6.3.1); its retry is scheduled.
    func requestKeyframe(now: MonoTime, into out: DatagramBatch, effects: RoomEffects) {
        // The SSRC first: an unbound layer must not spend the throttle on a PLI that cannot be sent.
        guard let publisher, publisher.connection.outbound != nil, let media = ssrc, keyframes.request(now: now) else { return }
        if let retry = keyframes.nextRetry(rtt: nil) { effects.wake(at: retry) }
        let conn = publisher.connection
        let batch = conn.batch(for: out)
        guard let buf = batch.nextBuffer() else { return effects.drop(.egressFull) }
        guard let n = PictureLossIndication.write(sender: Room.nodeSSRC, media: media, into: buf) else { return }
        effects.counters.keyframeRequestsSent &+= 1
        conn.commitRTCP(buf, length: n, into: batch, effects: effects)
    }

    /// Repeats the PLI while a consumer still waits for the key frame, stops waiting when none does.
    func retryKeyframeRequest(now: MonoTime, into out: DatagramBatch, effects: RoomEffects) {
        guard kind == .video, let due = keyframes.nextRetry(rtt: nil) else { return }
        guard due <= now else { return effects.wake(at: due) }
        if keyframeAwaited { requestKeyframe(now: now, into: out, effects: effects) } else { keyframes.keyframeArrived() }
    }
}
