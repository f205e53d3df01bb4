/// A slot sender, the consumer of forwarding: one of a subscriber's slots - a fixed SSRC and mid towards it -
/// and everything that keeps it one continuous stream while its source changes: the source it shows and the
/// one waiting for a key frame, the format it sends it in, the layers it passes, the rewriter, the send log
/// its NACKs are answered from, its RTX sequence and its counts (mediasoup's Consumer).
final class SlotSender: MediaConsumer {
    private(set) var description: SlotDescription
    /// Its place among its subscriber's slots of its kind (what the slot planner and layer plans index).
    var position: Int
    /// The subscriber's transport: where its packets go (its SRTP context, its egress).
    let connection: Connection
    /// The subscriber it belongs to, for its resend budget and estimate (cold paths only); nil once it left.
    /// (No weak references in the engine: a weak reference outliving its object reads as a leak to
    /// LeakSanitizer, which the fuzz targets run under; the references are untied where they end.)
    var subscriber: Subscriber?
    let effects: RoomEffects
    /// The participant the rules placed here (what the slot map reports).
    var assignee: Participant?
    var assigned: Int? { assignee?.index }
    /// The source track forwarded now.
    var current: PublishedTrack?
    /// Video: the source track waiting for its keyframe to take over.
    var pending: PublishedTrack?
    /// The format `current` is sent in: its codec's payload type and RTX payload type on this slot.
    var format: PayloadFormat
    /// Video: the temporal and spatial layers of `current` this slot sends (`LayerCaps`).
    var layers = LayerFilter()
    /// Video: a source the rules placed here that the subscriber cannot decode (no format of the slot takes
    /// its codec or profile): nothing of it is sent, and the slot map says so.
    var undecodable: PublishedTrack?
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
    /// When the slot may move up a layer of the source it shows (`Subscriber.reviewLayers`' and
    /// `reviewLayerCaps`' up hold, longer after moves up that did not hold).
    var climb = LayerClimb()
    /// Sender report forwarded last: NTP middle 32 bits and when, for the RTT in the receiver's reports.
    var lastSRMiddle: UInt32 = 0
    var lastSRSentAt: MonoTime?
    var rtt: MonoTime.Interval?
    var fractionLost: UInt8 = 0
    /// Audio: the track the slot last stopped showing and the newest packet of it then (`noteLeaving`).
    var lastLeft: (track: Int, newest: Int64)?
    /// The slot's RTX stream's next sequence number (its own space, RFC 4588 section 4).
    var rtxSequence = UInt16.random(in: 0...UInt16.max)

    init(_ d: SlotDescription, position: Int, connection: Connection, effects: RoomEffects) {
        description = d
        self.position = position
        self.connection = connection
        self.effects = effects
        format = d.formats[0]
        kind = d.codec.kind
        rewriter = SlotRewriter(clockRate: d.codec.clockRate, framesSpanPackets: d.codec.kind == .video)
        sendLog = d.codec.kind == .video ? SlotSendLog() : nil
    }

    /// Audio or video, for the slot's life (a renegotiation keeps it). Stored: read for every packet, and
    /// `description.codec` is a call into SFUBase that reads the formats array (2 % of the node's CPU in a
    /// profile of the video conference bench).
    let kind: MediaKind

    /// A renegotiation describes the slot anew under the same mid and SSRC: the same RTP stream to the
    /// subscriber, so it keeps its continuity - rewriter (sequence numbers, timestamps, picture ids), RTX
    /// sequence, send log, counts, what it shows and its reports. A new slot there started at offset 0 with a
    /// random RTX sequence, and libsrtp refused the backward jump as a replay for up to 2^15 packets (issue
    /// 23). What it shows stays if a format of `d` takes it; otherwise it lets go and is placed again.
    func redescribe(_ d: SlotDescription) {
        precondition(d.ssrc == description.ssrc && d.codec.kind == kind)
        if description.rtxSSRC != d.rtxSSRC { rtxSequence = UInt16.random(in: 0...UInt16.max) }
        description = d
        guard kind == .video else {
            format = d.formats[0]
            return
        }
        if let c = current {
            if let f = d.format(for: c.description) { format = f } else { stopShowing(c); rewriter.switchTo(nil) }
        }
        if let p = pending, d.format(for: p.description) == nil { stopShowing(p) }
        if current == nil, pending == nil {
            assignee = nil
            undecodable = nil
        }
    }

    /// The slot shows nothing and is assigned no one (its subscriber left, or the rules took it away).
    func clear() {
        if kind == .audio, let c = current { noteLeaving(c) }
        for t in [current, pending].compactMap({ $0 }) { t.detach(self) }
        current = nil
        pending = nil
        assignee = nil
        undecodable = nil
        rewriter.switchTo(nil)
        layers = LayerFilter()
    }

    /// The slot shows nothing of `track` any more (it stays assigned: the caller decides what comes next).
    func stopShowing(_ track: PublishedTrack) {
        if current === track { current = nil }
        if pending === track { pending = nil }
        if current !== track, pending !== track { track.detach(self) }
    }

    // MARK: MediaConsumer

    func trackEnded(_ track: PublishedTrack) {
        if current === track {
            current = nil
            rewriter.switchTo(nil)
        }
        if pending === track { pending = nil }
    }

    func trackRestarted(_ track: PublishedTrack) {
        if current === track { rewriter.resume() }
    }

    func senderReport(_ sr: SenderReport, of track: PublishedTrack, now: MonoTime, into out: DatagramBatch) {
        forwardSenderReport(sr, of: track, now: now, into: out)
    }

    func videoShareCap(audioReserveKbps: Int) -> Double? {
        guard kind == .video, let s = subscriber, let estimate = s.estimator.estimate else { return nil }
        let audio = Double(audioReserveKbps * 1000 * s.audioSlots.count { $0.current != nil })
        return max(0, Double(estimate) - audio) / Double(max(1, s.videoCount.numberOfVideos))
    }

    func awaitsKeyframe(of track: PublishedTrack) -> Bool {
        pending === track || (kind == .video && current === track && layers.awaitsKeyframe(top: track.topLayers.spatial))
    }

    /// Sends the slot's copy of a source packet: video takes a waiting source over at its key frame, leaves
    /// out the layers above its caps (closing up over them), and rewrites numbering; audio passes RED through
    /// to a subscriber that takes it, else its primary Opus frame.
    func consume(_ p: ForwardedPacket, from track: PublishedTrack, now: MonoTime, into out: DatagramBatch) {
        guard connection.attached, connection.outbound != nil else { return }
        if kind == .video {
            if pending === track {
                // The new source takes over at its key frame, in the slot's format for its codec.
                guard p.inOrder, p.video?.isKeyframeStart == true, let f = description.format(for: track.description) else { return }
                let old = current
                current = track
                format = f
                // The caps the slot wants for it from this key frame on (`Room.place` cleared them for another
                // participant's source: every layer until they are chosen).
                layers.reset()
                pending = nil
                rewriter.switchTo(track.index)
                if let old, old !== track { old.detach(self) }
            }
            guard current === track else { return }
            // Layers above the slot's caps are left out, the output closing up over them.
            var marker = p.header.marker
            if let video = p.video {
                switch layers.admit(video, marker: p.header.marker, extendedSequence: p.extendedSequence) {
                case .skip(let closesPicture):
                    let unfilled = rewriter.skip(extendedSequence: p.extendedSequence, timestamp: p.header.timestamp, closesPicture: closesPicture)
                    effects.drop(.layerNotSent)
                    // Late: the output went past its number, which nothing else will fill.
                    if let unfilled { fillWithPadding(track: track, extendedSequence: p.extendedSequence, rewrite: unfilled, now: now, into: out) }
                    return
                case .forward(let endsPicture):
                    marker = endsPicture
                }
            }
            guard let rw = rewriter.rewrite(extendedSequence: p.extendedSequence, timestamp: p.header.timestamp, marker: marker,
                                            picture: p.video?.numbering, now: now)
            else { return effects.drop(.staleAfterSwitch) }
            if emit(source: p.plain, payload: p.header.payloadRange, payloadType: nil, video: p.video, rewrite: rw, marker: marker,
                    level: nil, now: now, into: out) {
                sendLog?.log(.init(outSequence: rw.sequenceNumber, source: track.index, sourceSequence: p.extendedSequence, output: rw,
                                   marker: marker, sentAt: now, lastResend: nil))
            }
        } else {
            guard current === track else { return }
            guard let rw = rewriter.rewrite(extendedSequence: p.extendedSequence, timestamp: p.header.timestamp, marker: p.header.marker,
                                            picture: nil, now: now)
            else { return effects.drop(.staleAfterSwitch) }
            // RED to subscribers that take it (block payload types rewritten to theirs), the primary Opus block
            // to the others. RFC 3551 section 4.1: the marker flags the first packet after silence.
            let redPT = description.redPayloadType
            let keepRED = p.red != nil && redPT != nil
            emit(source: p.plain, payload: keepRED ? p.header.payloadRange : p.primary, payloadType: keepRED ? redPT : nil,
                 red: keepRED ? p.red : nil, video: nil, rewrite: rw, marker: p.header.marker || rw.firstAfterSwitch, level: p.level,
                 now: now, into: out)
        }
    }

    // MARK: Writing

    /// Writes the slot's copy of a source packet: slot SSRC and the payload type of the slot's format for the
    /// source (`format`, or the slot's current one), rewritten sequence number, timestamp and VP8/VP9 picture
    /// numbering, the extensions the subscriber negotiated (audio level under its id, abs-send-time, the
    /// transport-wide sequence number; the publisher's own extensions are not passed on), then protects it.
    /// `retransmission` makes it an RTX packet on the slot's RTX stream (RFC 4588) carrying that original
    /// sequence number, under the RTX payload type whose apt is the packet's own.
    @discardableResult
    func emit(source: UnsafeRawBufferPointer, payload: Range<Int>, payloadType: UInt8?, red: REDPayload? = nil, video: VideoDescriptor?,
              format: PayloadFormat? = nil, rewrite rw: SlotRewriter.Output, marker: Bool, level: UInt8?, retransmission: Bool = false,
              now: MonoTime, into local: DatagramBatch) -> Bool {
        guard let srtp = connection.outbound else { return false }
        let out = connection.batch(for: local)
        guard let buf = out.nextBuffer() else { effects.drop(.egressFull); return false }
        var h: OutgoingRTP
        let format = format ?? self.format
        if retransmission, let rtxPT = format.rtxPayloadType, let rtxSSRC = description.rtxSSRC {
            h = OutgoingRTP(payloadType: rtxPT, sequenceNumber: rtxSequence, timestamp: rw.timestamp, ssrc: rtxSSRC, marker: marker)
            rtxSequence &+= 1
        } else {
            h = OutgoingRTP(payloadType: payloadType ?? format.payloadType, sequenceNumber: rw.sequenceNumber, timestamp: rw.timestamp,
                            ssrc: description.ssrc, marker: marker)
        }
        if let id = description.audioLevelExtensionID, let level { h.audioLevel = (id, level) }
        if let id = description.absSendTimeExtensionID { h.absSendTime = (id, absSendTime(now)) }
        if connection.sendHistory != nil { h.transportSequenceID = description.transportCCExtensionID }
        var w = ByteWriter(buf)
        var tccAt: Int?
        guard h.write(&w, transportSequenceOffset: &tccAt) else { effects.drop(.tooLarge); return false }
        if h.ssrc == description.rtxSSRC { w.u16(rw.sequenceNumber) }  // RTX: the original sequence number first
        let payloadStart = w.offset
        guard w.bytes(UnsafeRawBufferPointer(rebasing: source[payload])),
              w.offset + SRTPSession.maxOverhead <= buf.count else { effects.drop(.tooLarge); return false }
        let written = UnsafeMutableRawBufferPointer(rebasing: buf[payloadStart..<w.offset])
        if let video { video.rewrite(rw, in: written) }
        if let red { red.rewritePayloadTypes(format.payloadType, in: written) }
        if let at = tccAt { buf.setU16(stampTransportSequence(size: w.offset + 16, now: now, into: out), at: at) }
        return protectAndCommit(srtp, buf, length: w.offset, payloadBytes: payload.count, into: out)
    }

    /// Protects the `length` bytes written in `buf` and commits them to `out`, counted as one of the slot's RTP
    /// data packets (the sender report's counts, RFC 3550 section 6.4.1) and `payloadBytes` of its payload.
    /// False, with the drop counted, when SRTP refuses.
    func protectAndCommit(_ srtp: SRTPSession, _ buf: UnsafeMutableRawBufferPointer, length: Int, payloadBytes: Int,
                          into out: DatagramBatch) -> Bool {
        switch connection.protect(srtp, buf, length: length) {
        case .success(let n):
            out.commit(length: n, to: connection.id)
            packetsSent &+= 1
            bytesSent &+= UInt64(payloadBytes)
            effects.counters.packetsOut &+= 1
            effects.counters.bytesOut &+= UInt64(n)
            return true
        case .failure(let r):
            effects.drop(r)
            return false
        }
    }

    /// The next transport-wide sequence number for a packet of `size` bytes (with SRTP's tag) to this slot's
    /// subscriber, sent for now at `now`: its time becomes the batch's departure (`DatagramBatch.sent(at:)`).
    func stampTransportSequence(size: Int, now: MonoTime, probeCluster: Int? = nil, into out: DatagramBatch) -> UInt16 {
        out.awaitDeparture(connection)
        return connection.sendHistory!.stamp(size: size, now: now, probeCluster: probeCluster)
    }
}

/// `now` as abs-send-time: seconds in 6.18 fixed point, low 24 bits.
func absSendTime(_ now: MonoTime) -> UInt32 {
    let ns = UInt64(bitPattern: now.nanoseconds)
    return UInt32(truncatingIfNeeded: ((ns / 1000) << 18) / 1_000_000) & 0xFF_FFFF
}
