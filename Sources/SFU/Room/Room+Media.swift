/// The RTP path: decrypt, check, measure, fan out to slots.
extension Room {
    func drop(_ reason: DropReason) { counters.drops.count(reason) }

    /// A drop of something `conn` sent: counted for the room and for the connection's participant.
    func drop(_ reason: DropReason, _ conn: Connection) {
        counters.drops.count(reason)
        conn.drops.count(reason)
    }

    /// Handles one datagram (RTP or RTCP, RFC 5761 multiplexed) from a connection. The datagram is decrypted
    /// in place in `buffer`. Anything wrong with it becomes a counted drop.
    public func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, from id: ConnectionID,
                        now: MonoTime, arrival: MonoTime? = nil, into out: DatagramBatch) {
        guard let conn = connections[id] else {
            counters.packetsIn &+= 1
            counters.bytesIn &+= UInt64(length)
            return drop(.unknownConnection)
        }
        receive(buffer, length: length, from: conn, now: now, arrival: arrival, into: out)
    }

    /// `receive` for a caller that holds the connection (the worker's connection table): no lookup.
    ///
    /// `arrival`, when the socket stamps datagrams, is when the kernel received this one: what the
    /// publisher's estimator is told (transport-cc feedback, abs-send-time). `now`, when the worker got to
    /// it, runs everything else. On a busy worker the two differ by the time the datagram waited in the
    /// socket buffer, which the publisher's GCC would otherwise read as queueing on its uplink and back off.
    public func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, from conn: Connection,
                        now: MonoTime, arrival: MonoTime? = nil, into out: DatagramBatch) {
        counters.packetsIn &+= 1
        counters.bytesIn &+= UInt64(length)
        guard length <= buffer.count else { return drop(.badLength) }
        guard conn.attached else { return drop(.unknownConnection) }
        let packet = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
        if isRTCP(packet) { return receiveRTCP(buffer, length: length, conn: conn, now: now, into: out) }
        guard let ssrc = RTPHeader.peekSSRC(packet) else { return drop(.truncated, conn) }
        let known = conn.tracksBySSRC[ssrc]
        let route: (track: Int, rtx: Bool)
        if let known { route = known } else {
            switch midBinding(packet, conn: conn, now: now) {
            case .success(let r): route = r
            case .failure(let reason): return drop(reason, conn)
            }
        }
        guard let track = tracks[route.track] else { return drop(.unknownSSRC, conn) }
        guard let srtp = conn.inbound else { return drop(.noSRTPContext, conn) }
        // A new SSRC (bound from its MID or RID) must fit under the connection's stream cap before libsrtp
        // takes a stream for it.
        if known == nil, !conn.inboundSSRCs.reserve(ssrc, limit: limits.ssrcsPerConnection, srtp: srtp) { return drop(.ssrcLimit, conn) }
        // Decrypt even what policy will drop: the SRTP rollover counter must follow every packet, or the first
        // packet after a long hard mute fails to authenticate (media-core.md section 6).
        let plainLength: Int
        switch srtp.unprotectRTP(buffer, length: length) {
        case .success(let n): plainLength = n
        case .failure(let r): return drop(r, conn)
        }
        var plain = UnsafeRawBufferPointer(rebasing: buffer[0..<plainLength])
        if known == nil { bind(ssrc, to: route, conn: conn, now: now, into: out) }  // learned only once the packet authenticated
        var header: RTPHeader
        switch RTPHeader.parse(plain) {
        case .success(let h): header = h
        case .failure(let r): return drop(r, conn)
        }
        guard let owner = participants[track.owner] else { return drop(.unknownSSRC, conn) }
        // Every authenticated packet, padding and repairs included, is an arrival the publisher's own
        // estimator wants to hear about.
        // A stamp later than now, or implausibly early (the wall clock the kernel stamps with was stepped), is
        // not used.
        let arrivedAt = arrival.map { $0 <= now && now - $0 < .seconds(1) ? $0 : now } ?? now
        if let id = conn.transportCCExtensionID, let r = header.extensions(in: plain).find(id), r.count == 2 {
            conn.feedback?.record(sequence: plain.u16(r.lowerBound), arrival: arrivedAt)
        } else if let id = conn.absSendTimeExtensionID, let r = header.extensions(in: plain).find(id), r.count == 3 {
            conn.uplink?.packet(absSendTime: plain.u24(r.lowerBound), arrival: arrivedAt, size: length)
        }
        if route.rtx {
            // RFC 4588: back to the original packet, in place; padding alone is a bandwidth probe.
            guard let rtxPT = track.description.rtxPayloadType, header.payloadType == rtxPT else { return drop(.badCodecPayload, conn) }
            guard let n = RTXPayload.restore(buffer, header: header, payloadType: track.description.payloadType,
                                             ssrc: track.ssrc ?? 0) else { return counters.paddingIn &+= 1 }
            plain = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            guard case .success(let h) = RTPHeader.parse(plain) else { return drop(.badCodecPayload, conn) }
            header = h
            // A repair is of a packet before the newest: its number must not move the stream's position (an
            // RTX packet naming a number 2^15 ahead would make every packet after it read as old).
            guard let ext = track.unwrapper.peek(header.sequenceNumber), ext <= track.unwrapper.highest ?? .min,
                  track.nacks.repaired(ext, now: now) else { return drop(.duplicateRepair, conn) }
            counters.repairsIn &+= 1
            return ingest(track, owner: owner, plain: plain, header: header, extendedSequence: ext, repaired: true, inOrder: false,
                          conn: conn, now: now, into: out)
        }
        // Sequence and reception state follow every authenticated packet, as SRTP's does, policy or not: a
        // source muted (or waiting for the floor) for more than 2^15 packets must not read as old after.
        let newest = track.unwrapper.highest
        let ext = track.unwrapper.unwrap(header.sequenceNumber)
        noteReception(track, header: header, extendedSequence: ext, now: now)
        ingest(track, owner: owner, plain: plain, header: header, extendedSequence: ext, repaired: false,
               inOrder: newest.map { ext > $0 } ?? true, conn: conn, now: now, into: out)
    }

    /// A media packet of a track, original or repaired: policy, codec checks, level, history, fan-out.
    /// `inOrder` when it is newer than any packet of the track before it (never for a repair).
    private func ingest(_ track: SourceTrack, owner: Participant, plain: UnsafeRawBufferPointer, header: RTPHeader,
                        extendedSequence ext: Int64, repaired: Bool, inOrder: Bool, conn: Connection, now: MonoTime,
                        into out: DatagramBatch) {
        if let refused = refusal(owner, track.kind) { return drop(refused, conn) }
        if !repaired, track.description.nack {
            // What goes missing is asked for again (nothing is, for a muted or floor-less track).
            switch track.nacks.received(ext, now: now) {
            case .none: break
            case .nacking: deadlineCache = nil  // the NACK is due now
            case .tooWide: requestKeyframe(track, now: now, into: out)
            }
        }
        if track.kind == .audio {
            // Opus, or Opus with redundancy (RFC 2198): the level is the primary block's.
            var red: REDPayload?
            var media = header.payloadRange
            if header.payloadType == track.description.redPayloadType, track.description.redPayloadType != nil {
                guard case .success(let r) = REDPayload.parse(UnsafeRawBufferPointer(rebasing: plain[header.payloadRange])),
                      r.primaryPayloadType == track.description.payloadType else { return drop(.badCodecPayload, conn) }
                red = r
                media = (header.payloadOffset + r.primary.lowerBound)..<(header.payloadOffset + r.primary.upperBound)
            } else {
                guard header.payloadType == track.description.payloadType else { return drop(.badCodecPayload, conn) }
            }
            let payload = UnsafeRawBufferPointer(rebasing: plain[media])
            guard case .success(let opus) = OpusPacketInfo.parse(payload) else { return drop(.badCodecPayload, conn) }
            if !repaired {
                measureLevel(track, owner: owner, header: header, plain: plain, opus: opus, payload: payload, extendedSequence: ext, now: now)
            }
            forward(track, plain: plain, header: header, primary: media, red: red, video: nil, extendedSequence: ext, inOrder: inOrder,
                    now: now, into: out)
        } else {
            guard header.payloadType == track.description.payloadType else { return drop(.badCodecPayload, conn) }
            let payload = UnsafeRawBufferPointer(rebasing: plain[header.payloadRange])
            // Each codec says where its key frames start in its own way (`VideoDescriptor.isKeyframeStart`).
            guard case .success(let video) = VideoDescriptor.parse(track.description.codec, payload: payload) else {
                return drop(.badCodecPayload, conn)
            }
            track.history?.store(extendedSequence: ext, packet: plain)
            if !repaired, let l = video.layerIndices {
                track.noteLayer(l, bytes: header.payloadLength + 40, pictureStart: video.startsPicture, now: now)
            }
            // Only a key frame newer than anything before it answers the request for one. An older start (an
            // RTX repair, RFC 4588, or one reordered on the way) begins a picture whose other packets have gone
            // by, and what follows it refers to that picture: a slot switched there would show a broken picture,
            // and with the request cancelled it would wait for the publisher's next periodic key frame.
            if video.isKeyframeStart, inOrder {
                track.keyframes.keyframeArrived()
                if let size = video.keyframeSize(in: payload) { track.frameSize = size }
            }
            if !track.live {
                setLive(track, true, now: now)
                refreshAllSubscribers(now: now, into: out)
            }
            forward(track, plain: plain, header: header, primary: header.payloadRange, red: nil, video: video, extendedSequence: ext,
                    inOrder: inOrder, now: now, into: out)
        }
    }

    /// For a packet of unknown SSRC: the track its MID extension names, or for a simulcast layer its RID or
    /// repaired RID (header extensions are sent in clear under SRTP, RFC 3711 section 3.1), media or RTX by
    /// payload type. A track already bound to another SSRC moves to this one (a sender resolving an SSRC
    /// collision, RFC 3550 section 8.2), at most once per `ssrcRebindInterval`.
    private func midBinding(_ packet: UnsafeRawBufferPointer, conn: Connection, now: MonoTime) -> Result<(track: Int, rtx: Bool), DropReason> {
        guard !conn.midRoutes.isEmpty, case .success(let h) = RTPHeader.parse(packet, checkPadding: false) else { return .failure(.unknownSSRC) }
        let ext = h.extensions(in: packet)
        func carries(_ id: UInt8?, _ value: [UInt8]) -> Bool {
            guard let id, let r = ext.find(id) else { return false }
            return r.count == value.count && packet[r].elementsEqual(value)
        }
        for a in conn.midRoutes {
            guard let t = tracks[a.track] else { continue }
            let rtx: Bool
            if let rid = a.rid {
                // A simulcast layer: its RID names the media stream, the repaired RID its RTX (RFC 8852 section 3).
                if h.payloadType == t.description.payloadType, carries(a.ridExtensionID, rid) {
                    rtx = false
                } else if h.payloadType == t.description.rtxPayloadType, carries(a.repairedRidExtensionID, rid) {
                    rtx = true
                } else {
                    continue
                }
            } else {
                guard carries(a.midExtensionID, a.mid) else { continue }
                if h.payloadType == t.description.payloadType {
                    rtx = false
                } else if h.payloadType == t.description.rtxPayloadType {
                    rtx = true
                } else {
                    continue
                }
            }
            let bound = rtx ? t.rtxSSRC : t.ssrc
            let lastMove = rtx ? t.rtxReboundAt : t.reboundAt
            if bound != nil, let lastMove, now - lastMove < limits.ssrcRebindInterval { return .failure(.ssrcRebindLimit) }
            return .success((a.track, rtx))
        }
        return .failure(.unknownSSRC)
    }

    /// Routes `ssrc` to the track `midBinding` found, once a packet on it authenticated. A track that was on
    /// another SSRC leaves it: its libsrtp stream is freed, and its sequence space starts again, so the slots
    /// it feeds re-anchor their rewriters (sequence numbers stay gapless) and video asks for a key frame.
    private func bind(_ ssrc: UInt32, to route: (track: Int, rtx: Bool), conn: Connection, now: MonoTime, into out: DatagramBatch) {
        guard let t = tracks[route.track] else { return }
        if let old = route.rtx ? t.rtxSSRC : t.ssrc, old != ssrc {
            conn.tracksBySSRC[old] = nil
            conn.inboundSSRCs.retire(old)
            counters.ssrcRebinds &+= 1
            if route.rtx {
                t.rtxReboundAt = now
            } else {
                t.restartStream(ssrc: ssrc, now: now)
                for ref in t.sinks {
                    guard let s = participants[ref.subscriber]?.subscriber, s.has(ref) else { continue }
                    mutateSlot(s, ref) { slot in if slot.current == t.index { slot.rewriter.resume() } }
                }
                if t.kind == .video { requestKeyframe(t, now: now, into: out) }
            }
        }
        if route.rtx { t.rtxSSRC = ssrc } else { t.ssrc = ssrc }
        conn.tracksBySSRC[ssrc] = route
        conn.inboundSSRCs.use(ssrc)
    }

    /// Reception statistics for receiver reports, and what the stream costs on the wire (roughly: 40 bytes
    /// of IP, UDP and RTP headers per packet) for ABWD and the publisher's caps.
    private func noteReception(_ t: SourceTrack, header: RTPHeader, extendedSequence ext: Int64, now: MonoTime) {
        t.reception.record(extendedSequence: ext, timestamp: header.timestamp, payloadBytes: header.payloadLength, now: now)
        t.rate.add(bytes: header.payloadLength + 40, now: now)
    }

    /// Feeds the detector one sample per 20 ms of RTP time: a timestamp jump over contiguous sequence numbers
    /// (DTX) fills silence; a sequence gap (loss) is not filled (media-core.md section 1).
    private func measureLevel(_ t: SourceTrack, owner: Participant, header: RTPHeader, plain: UnsafeRawBufferPointer,
                              opus: OpusPacketInfo, payload: UnsafeRawBufferPointer, extendedSequence ext: Int64,
                              now: MonoTime) {
        var claimed: AudioLevelExtension?
        if let id = t.description.audioLevelExtensionID, let r = header.extensions(in: plain).find(id) {
            claimed = AudioLevelExtension.read(plain, range: r)
        }
        let (level, verdict) = t.meter.measure(claimed: claimed, opus: opus, payload: payload)
        if let verdict, verdict.meanDifference > configuration.levelMismatchThresholdDb {
            // The claims are off: this participant's levels are decoded from now on (the event says so).
            events.append(.levelMismatch(participant: owner.id, meanDifferenceDb: verdict.meanDifference))
            t.meter.setSource(.decode)
        }
        guard let level else { return }
        t.lastLevel = level
        let samples = t.levelSamples.samples(extendedSequence: ext, timestamp: header.timestamp)
        if samples > 0 { detector.push(owner.index, level: level, count: samples, now: now) }
    }

    /// Sends a source packet on every slot it feeds. A slot waiting for the source takes it over at a key frame
    /// start that is `inOrder` (see `ingest`).
    private func forward(_ track: SourceTrack, plain: UnsafeRawBufferPointer, header: RTPHeader, primary: Range<Int>,
                         red: REDPayload?, video: VideoDescriptor?, extendedSequence ext: Int64, inOrder: Bool, now: MonoTime,
                         into out: DatagramBatch) {
        let t = track.index
        var i = 0
        while i < track.sinks.count {
            let ref = track.sinks[i]
            i += 1
            guard let sub = participants[ref.subscriber], let s = sub.subscriber, s.has(ref),
                  let conn = s.connection, conn.outbound != nil else { continue }
            if ref.kind == .video {
                // Fields are read in place: a copy of the slot would make the send log below copy on write.
                if s.videoSlots[ref.index].pending == t {
                    // The new source takes over at its key frame, in the slot's format for its codec.
                    guard inOrder, video?.isKeyframeStart == true,
                          let format = s.videoSlots[ref.index].description.format(for: track.description) else { continue }
                    let old = s.videoSlots[ref.index].current
                    s.videoSlots[ref.index].current = t
                    s.videoSlots[ref.index].format = format
                    // The caps the slot wants for it from this key frame on (`place` cleared them for another
                    // participant's source: every layer until they are chosen).
                    s.videoSlots[ref.index].layers.reset()
                    s.videoSlots[ref.index].pending = nil
                    s.videoSlots[ref.index].rewriter.switchTo(t)
                    if let old, old != t, let oldTrack = tracks[old] { oldTrack.sinks.removeAll { $0 == ref } }
                }
                guard s.videoSlots[ref.index].current == t else { continue }
                // Layers above the slot's caps are left out, the output closing up over them.
                var marker = header.marker
                if let video {
                    switch s.videoSlots[ref.index].layers.admit(video, marker: header.marker, extendedSequence: ext) {
                    case .skip(let closesPicture):
                        let unfilled = s.videoSlots[ref.index].rewriter.skip(extendedSequence: ext, timestamp: header.timestamp,
                                                                             closesPicture: closesPicture)
                        drop(.layerNotSent)
                        if let unfilled {
                            // Late: the output went past its number, which nothing else will fill.
                            fillWithPadding(s, slot: ref.index, conn: conn, track: t, extendedSequence: ext, rewrite: unfilled,
                                            now: now, into: out)
                        }
                        continue
                    case .forward(let endsPicture):
                        marker = endsPicture
                    }
                }
                guard let rw = s.videoSlots[ref.index].rewriter.rewrite(
                    extendedSequence: ext, timestamp: header.timestamp, marker: marker, picture: video?.numbering, now: now)
                else { drop(.staleAfterSwitch); continue }
                if emit(&s.videoSlots[ref.index], conn: conn, source: plain, payload: header.payloadRange, payloadType: nil,
                        video: video, rewrite: rw, marker: marker, level: nil, now: now, into: out) {
                    s.videoSlots[ref.index].sendLog?.log(.init(
                        outSequence: rw.sequenceNumber, source: t, sourceSequence: ext, output: rw,
                        marker: marker, sentAt: now, lastResend: nil))
                }
            } else {
                guard s.audioSlots[ref.index].current == t else { continue }
                guard let rw = s.audioSlots[ref.index].rewriter.rewrite(
                    extendedSequence: ext, timestamp: header.timestamp, marker: header.marker, picture: nil, now: now)
                else { drop(.staleAfterSwitch); continue }
                // RED to subscribers that take it (block payload types rewritten to theirs), the primary Opus
                // block to the others. RFC 3551 section 4.1: the marker flags the first packet after silence.
                // Fields read in place, not `let d = ...description`: a copy retains its strings per packet.
                let redPT = s.audioSlots[ref.index].description.redPayloadType
                let keepRED = red != nil && redPT != nil
                _ = emit(&s.audioSlots[ref.index], conn: conn, source: plain, payload: keepRED ? header.payloadRange : primary,
                         payloadType: keepRED ? redPT : nil, red: keepRED ? red : nil, video: nil, rewrite: rw,
                         marker: header.marker || rw.firstAfterSwitch, level: track.lastLevel, now: now, into: out)
            }
        }
    }

    /// Writes the slot's copy of a source packet: slot SSRC and the payload type of the slot's format for the
    /// source (`format`, or the slot's current one), rewritten sequence number, timestamp and VP8/VP9 picture
    /// numbering, the extensions the subscriber negotiated (audio level under its id, abs-send-time, the
    /// transport-wide sequence number; the publisher's own extensions are not passed on), then protects it.
    /// `retransmission` makes it an RTX packet on the slot's RTX stream (RFC 4588) carrying that original
    /// sequence number, under the RTX payload type whose apt is the packet's own.
    @discardableResult
    func emit(_ slot: inout Slot, conn: Connection, source: UnsafeRawBufferPointer, payload: Range<Int>, payloadType: UInt8?,
              red: REDPayload? = nil, video: VideoDescriptor?, format: PayloadFormat? = nil, rewrite rw: SlotRewriter.Output,
              marker: Bool, level: UInt8?, retransmission: Bool = false, now: MonoTime, into local: DatagramBatch) -> Bool {
        guard let srtp = conn.outbound else { return false }
        let out = conn.egress(local)
        guard let buf = out.nextBuffer() else { drop(.egressFull); return false }
        var h: OutgoingRTP
        let format = format ?? slot.format
        // The description's fields are read in place: copying it would retain its strings for every packet.
        if retransmission, let rtxPT = format.rtxPayloadType, let rtxSSRC = slot.description.rtxSSRC {
            h = OutgoingRTP(payloadType: rtxPT, sequenceNumber: slot.rtxSequence, timestamp: rw.timestamp, ssrc: rtxSSRC, marker: marker)
            slot.rtxSequence &+= 1
        } else {
            h = OutgoingRTP(payloadType: payloadType ?? format.payloadType, sequenceNumber: rw.sequenceNumber, timestamp: rw.timestamp,
                            ssrc: slot.description.ssrc, marker: marker)
        }
        if let id = slot.description.audioLevelExtensionID, let level { h.audioLevel = (id, level) }
        if let id = slot.description.absSendTimeExtensionID { h.absSendTime = (id, absSendTime(now)) }
        if conn.sendHistory != nil { h.transportSequenceID = slot.description.transportCCExtensionID }
        var w = ByteWriter(buf)
        var tccAt: Int?
        guard h.write(&w, transportSequenceOffset: &tccAt) else { drop(.tooLarge); return false }
        if h.ssrc == slot.description.rtxSSRC { w.u16(rw.sequenceNumber) }  // RTX: the original sequence number first
        let payloadStart = w.offset
        guard w.bytes(UnsafeRawBufferPointer(rebasing: source[payload])),
              w.offset + SRTPSession.maxOverhead <= buf.count else { drop(.tooLarge); return false }
        let written = UnsafeMutableRawBufferPointer(rebasing: buf[payloadStart..<w.offset])
        if let video { video.rewrite(rw, in: written) }
        if let red { red.rewritePayloadTypes(format.payloadType, in: written) }
        if let at = tccAt { buf.setU16(stampTransportSequence(conn, size: w.offset + 16, now: now, into: out), at: at) }
        return protectAndCommit(&slot, conn: conn, srtp: srtp, buf, length: w.offset, payloadBytes: payload.count, into: out)
    }

    /// Protects the `length` bytes written in `buf` and commits them to `out` for `conn`, counted as one of the
    /// slot's RTP data packets (the sender report's counts, RFC 3550 section 6.4.1) and `payloadBytes` of its
    /// payload. False, with the drop counted, when SRTP refuses.
    func protectAndCommit(_ slot: inout Slot, conn: Connection, srtp: SRTPSession, _ buf: UnsafeMutableRawBufferPointer,
                          length: Int, payloadBytes: Int, into out: DatagramBatch) -> Bool {
        switch conn.protect(srtp, buf, length: length) {
        case .success(let n):
            out.commit(length: n, to: conn.id)
            slot.packetsSent &+= 1
            slot.bytesSent &+= UInt64(payloadBytes)
            counters.packetsOut &+= 1
            counters.bytesOut &+= UInt64(n)
            return true
        case .failure(let r):
            drop(r)
            return false
        }
    }

    /// The next transport-wide sequence number for a packet of `size` bytes (with SRTP's tag) to `conn`, sent
    /// for now at `now`: its time becomes the batch's departure (`DatagramBatch.sent(at:)`).
    func stampTransportSequence(_ conn: Connection, size: Int, now: MonoTime, probeCluster: Int? = nil,
                                into out: DatagramBatch) -> UInt16 {
        out.awaitDeparture(conn)
        return conn.sendHistory!.stamp(size: size, now: now, probeCluster: probeCluster)
    }

    /// Protects an RTCP packet written at the start of the batch's next buffer and commits it.
    /// `out` is the batch `buf` came from (`Connection.egress`).
    func commitRTCP(_ buf: UnsafeMutableRawBufferPointer, length: Int, conn: Connection, into out: DatagramBatch) {
        guard let srtp = conn.outbound else { return }
        switch conn.protect(srtp, buf, length: length, rtcp: true) {
        case .success(let n):
            out.commit(length: n, to: conn.id)
            counters.rtcpOut &+= 1
        case .failure(let r):
            drop(r)
        }
    }

    /// Sends a PLI to a source's publisher, at most one per 200 ms (RFC 4585 section 6.3.1).
    func requestKeyframe(_ track: SourceTrack, now: MonoTime, into out: DatagramBatch) {
        deadlineCache = nil  // its retry is due later
        // The SSRC first: an unbound layer must not spend the throttle on a PLI that cannot be sent.
        guard let owner = participants[track.owner], let cid = owner.publishConnection, let conn = connections[cid],
              conn.outbound != nil, track.ssrc != nil, track.keyframes.request(now: now) else { return }
        let out = conn.egress(out)
        guard let buf = out.nextBuffer() else { return drop(.egressFull) }
        guard let media = track.ssrc, let n = PictureLossIndication.write(sender: nodeSSRC, media: media, into: buf) else { return }
        counters.keyframeRequestsSent &+= 1
        commitRTCP(buf, length: n, conn: conn, into: out)
    }
}

/// `now` as abs-send-time: seconds in 6.18 fixed point, low 24 bits.
func absSendTime(_ now: MonoTime) -> UInt32 {
    let ns = UInt64(bitPattern: now.nanoseconds)
    return UInt32(truncatingIfNeeded: ((ns / 1000) << 18) / 1_000_000) & 0xFF_FFFF
}
