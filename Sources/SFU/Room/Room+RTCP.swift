/// The RTCP path: keyframe requests, NACKs answered from history, sender reports forwarded per slot, receiver
/// reports and estimates, and the node's own receiver reports.
extension Room {
    func receiveRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, conn: Connection, now: MonoTime,
                     into out: DatagramBatch) {
        guard let srtp = conn.inbound else { return drop(.noSRTPContext, conn) }
        // SRTCP keeps the first packet's sender SSRC in clear (RFC 3711 section 3.4); libsrtp keeps a stream
        // for every SSRC that authenticates, so a new one past the cap is refused before it is tried.
        guard length >= 8 else { return drop(.truncated, conn) }
        let sender = UnsafeRawBufferPointer(buffer).u32(4)
        let newSSRC = !conn.inboundSSRCs.contains(sender)
        if newSSRC, !conn.inboundSSRCs.reserve(sender, limit: limits.ssrcsPerConnection, srtp: srtp) { return drop(.ssrcLimit, conn) }
        let plainLength: Int
        switch srtp.unprotectRTCP(buffer, length: length) {
        case .success(let n): plainLength = n
        case .failure(let r): return drop(r, conn)
        }
        if newSSRC { conn.inboundSSRCs.use(sender) }
        let p = UnsafeRawBufferPointer(rebasing: buffer[0..<plainLength])
        if let r = RTCPCompound.validate(p) { return drop(r, conn) }
        counters.rtcpIn &+= 1
        // Every item a datagram names costs one unit of a fixed budget; what lies past it is not parsed.
        var budget = limits.rtcpItemsPerPacket
        var overBudget = false
        // Estimates (REMB, transport-cc) update the subscriber's estimator as they come; what follows from the
        // estimate (ABWD, layers, caps) runs once for the datagram, however many of them it holds.
        var estimated = false
        func spend(_ n: Int) -> Bool {
            guard !overBudget, n <= budget else { overBudget = true; return false }
            budget -= n
            return true
        }
        _ = RTCPCompound.forEach(p) { pkt in
            guard spend(1) else { return }
            switch (pkt.type, pkt.countOrFormat) {
            case (.senderReport?, _):
                guard spend(Int(pkt.countOrFormat)) else { return }
                if case .success(let sr) = SenderReport.parse(p, pkt) { onSenderReport(sr, conn: conn, now: now, into: out) }
            case (.receiverReport?, _):
                guard spend(Int(pkt.countOrFormat)) else { return }
                if case .success(let rr) = ReceiverReport.parse(p, pkt) { onReports(rr.reports, conn: conn, now: now) }
            case (.payloadFeedback?, FeedbackFormat.pli):
                if let h = FeedbackHeader.parse(p, pkt) { onKeyframeRequest(slotSSRC: h.mediaSSRC, conn: conn, now: now, into: out) }
            case (.payloadFeedback?, FeedbackFormat.fir):
                guard spend(max(0, pkt.body.count - 8) / 8) else { return }
                if let (_, entries) = FullIntraRequest.parse(p, pkt) {
                    for e in entries { onKeyframeRequest(slotSSRC: e.ssrc, conn: conn, now: now, into: out) }
                }
            case (.payloadFeedback?, FeedbackFormat.applicationLayer):
                if let remb = REMB.parse(p, pkt), let s = participants[conn.participant]?.subscriber {
                    s.estimator.onREMB(bitrate: remb.bitrate, now: now)
                    estimated = true
                }
            case (.transportFeedback?, FeedbackFormat.nack):
                guard spend(max(0, pkt.body.count - 8) / 4) else { return }
                guard let h = FeedbackHeader.parse(p, pkt), let (s, ref) = slot(for: h.mediaSSRC, conn: conn), ref.kind == .video else { return }
                _ = GenericNACK.forEachLost(p, pkt) { seq in resend(seq, slot: ref, of: s, conn: conn, now: now, into: out) }
            case (.transportFeedback?, FeedbackFormat.transportCC):
                // A status count is two bytes that can name 65,535 packets; it is parsed only within the budget.
                // Read in place into the connection's buffer (`SendHistory.resolved`): nothing is allocated.
                let header = conn.sendHistory != nil ? conn.sendHistory!.resolve(p, pkt, maxPackets: budget)
                    : TransportCCFeedback.forEachPacket(p, pkt, maxPackets: budget) { _, _ in }
                if let h = header {
                    _ = spend(h.statusCount)
                    guard conn.sendHistory != nil, let s = participants[conn.participant]?.subscriber else { return }
                    s.estimator.onPacketFeedback(conn.sendHistory!.resolved, now: now)
                    estimated = true
                } else if TransportCCFeedback.statusCount(p, pkt).map({ $0 > budget }) == true {
                    overBudget = true
                }
            default:
                break  // SDES, BYE, APP and unknown types need no action
            }
        }
        if overBudget { drop(.rtcpBudget, conn) }
        if estimated { onEstimate(conn: conn, now: now, into: out) }
    }

    private func slot(for ssrc: UInt32, conn: Connection) -> (SubscriberState, SlotRef)? {
        guard let ref = conn.slotsBySSRC[ssrc], let s = participants[ref.subscriber]?.subscriber, s.has(ref) else { return nil }
        return (s, ref)
    }

    /// PLI/FIR on a slot reach its current source and the source it is switching to, throttled per source.
    private func onKeyframeRequest(slotSSRC: UInt32, conn: Connection, now: MonoTime, into out: DatagramBatch) {
        guard let (s, ref) = slot(for: slotSSRC, conn: conn), ref.kind == .video else { return }
        let slot = s.slot(ref)
        for t in [slot.current, slot.pending].compactMap({ $0 }) {
            if let track = tracks[t] { requestKeyframe(track, now: now, into: out) }
        }
    }

    /// Retransmits from the source's history what the slot sent under a lost sequence number (padding again
    /// where it sent padding, `fillWithPadding`), within the bounds of `ResendPolicy`. NACKs are never
    /// forwarded upstream.
    private func resend(_ seq: UInt16, slot ref: SlotRef, of s: SubscriberState, conn: Connection, now: MonoTime,
                        into out: DatagramBatch) {
        guard s.has(ref), let rec = s.videoSlots[ref.index].sendLog?.lookup(seq) else { return }
        switch limits.resendPolicy.admits(resends: rec.resends, lastResend: rec.lastResend, rtt: s.videoSlots[ref.index].rtt, now: now) {
        case .resend: break
        case .tooSoon: return
        case .refused(let reason): return drop(reason, conn)
        }
        if rec.padding {
            if sendGapPadding(s, slot: ref.index, conn: conn, rewrite: rec.output, now: now, into: out) {
                s.videoSlots[ref.index].sendLog?.markResent(seq, at: now)
            }
            return
        }
        // Sent in the format of the source it came from, which may not be the slot's current one any more.
        guard let track = tracks[rec.source], let pkt = track.history?.packet(extendedSequence: rec.sourceSequence),
              case .success(let h) = RTPHeader.parse(pkt),
              case .success(let video) = VideoDescriptor.parse(track.description.codec,
                                                               payload: UnsafeRawBufferPointer(rebasing: pkt[h.payloadRange])),
              let format = s.videoSlots[ref.index].description.format(for: track.description)
        else { return }
        guard limits.resendPolicy.pay(pkt.count, from: &s.resendBudget, estimate: s.estimator.estimate, now: now) else {
            return drop(.resendBudget, conn)
        }
        // On the slot's RTX stream when it has one (RFC 4588), else the same packet again.
        let rtx = s.videoSlots[ref.index].description.rtxSSRC != nil
        if emit(&s.videoSlots[ref.index], conn: conn, source: pkt, payload: h.payloadRange, payloadType: nil, video: video,
                format: format, rewrite: rec.output, marker: rec.marker, level: nil, retransmission: rtx, now: now, into: out) {
            s.videoSlots[ref.index].sendLog?.markResent(seq, at: now)
            s.videoSlots[ref.index].retransmissions &+= 1
            counters.retransmissions &+= 1
        }
    }

    static let minSenderReportInterval: MonoTime.Interval = .milliseconds(100)

    /// Forwards a source's sender report on every slot it feeds, with the slot's SSRC and the RTP timestamp
    /// shifted by the slot's offset; NTP time is untouched so receivers keep lip sync (RFC 3550 section 6.4.1).
    private func onSenderReport(_ sr: SenderReport, conn: Connection, now: MonoTime, into out: DatagramBatch) {
        guard let route = conn.tracksBySSRC[sr.ssrc], !route.rtx, let track = tracks[route.track] else { return }  // not its own: ignored
        // Senders report every second or few (RFC 3550 section 6.2); one datagram can hold dozens of reports,
        // and each is rewritten and protected for every slot the track feeds: those that come sooner than
        // `minSenderReportInterval` after the last are not acted on.
        if let last = track.lastSRArrival, now - last < Self.minSenderReportInterval { return drop(.rtcpThrottled, conn) }
        track.lastSR = sr
        track.lastSRMiddle = UInt32(truncatingIfNeeded: sr.ntpTimestamp >> 16)
        track.lastSRArrival = now
        guard let owner = participants[track.owner], refusal(owner, track.kind) == nil else { return }
        for ref in track.sinks {
            guard let sub = participants[ref.subscriber], let s = sub.subscriber, s.has(ref), let cid = sub.subscribeConnection,
                  let sconn = connections[cid] else { continue }
            let slot = s.slot(ref)
            guard slot.current == track.index, let offset = slot.rewriter.timestampOffset else { continue }
            let rewritten = SenderReport(ssrc: slot.description.ssrc, ntpTimestamp: sr.ntpTimestamp,
                                         rtpTimestamp: sr.rtpTimestamp &+ offset,
                                         packetCount: UInt32(truncatingIfNeeded: slot.packetsSent),
                                         octetCount: UInt32(truncatingIfNeeded: slot.bytesSent))
            let egress = sconn.egress(out)
            guard let buf = egress.nextBuffer() else { return drop(.egressFull) }
            guard let n = rewritten.write(into: buf) else { continue }
            mutateSlot(s, ref) { $0.lastSRMiddle = UInt32(truncatingIfNeeded: sr.ntpTimestamp >> 16); $0.lastSRSentAt = now }
            commitRTCP(buf, length: n, conn: sconn, into: egress)
        }
    }

    /// A subscriber's reception reports on its slots: loss, and round-trip time from LSR/DLSR (RFC 3550
    /// section 6.4.1) when the report answers a sender report the node forwarded.
    private func onReports(_ blocks: [ReportBlock], conn: Connection, now: MonoTime) {
        for b in blocks {
            guard let (s, ref) = slot(for: b.ssrc, conn: conn) else { continue }
            mutateSlot(s, ref) { slot in
                slot.fractionLost = b.fractionLost
                if b.lastSenderReport != 0, b.lastSenderReport == slot.lastSRMiddle, let sent = slot.lastSRSentAt {
                    let dlsr = Int64(b.delaySinceLastSenderReport) * 1_000_000_000 / 65536
                    let rtt = (now - sent).nanoseconds - dlsr
                    if rtt > 0 { slot.rtt = .init(nanoseconds: rtt) }
                }
            }
            if let rtt = s.slot(ref).rtt { s.estimator.setRTT(rtt) }
        }
    }

    /// A new downlink estimate for the connection's subscriber: the video count may change (and be reported).
    /// ABWD weighs videos at what they measure (`streamBandwidthKbps`), not at a configured figure.
    private func onEstimate(conn: Connection, now: MonoTime, into out: DatagramBatch) {
        guard let p = participants[conn.participant], let s = p.subscriber else { return }
        guard let bps = s.estimator.estimate else { return }
        // Counted in place, not through `filter` and `+` on the slot arrays: this runs for every feedback.
        let audio = configuration.audioReserveKbps * s.audioSlots.count { $0.current != nil }
        var bytesSent: UInt64 = 0
        for i in s.audioSlots.indices { bytesSent &+= s.audioSlots[i].bytesSent }
        for i in s.videoSlots.indices { bytesSent &+= s.videoSlots[i].bytesSent }
        // Before a first measurement the node has sent next to nothing: any estimate is app-limited.
        let sent = s.egress.kbps(bytes: bytesSent, now: now) ?? 0
        // videos_first: videos are counted at their highest layer, but one is kept (at a lower layer) while
        // even one highest layer does not fit and a lowest one does: fewer videos first, then lower layers.
        // Its estimate is not read as capped by what is sent: layers lowered for a share that no longer fits
        // send less, and an estimate just above that must still take a video away.
        let costs = streamCosts(now: now)
        let estimate = Int(bps / 1000)
        let videosFirst = configuration.videoDegradation == .videosFirst
        let keepOne = videosFirst && estimate - max(costs.lowest, audio) >= costs.lowest
        if let alert = s.videoCount.update(estimateKbps: estimate, streamKbps: streamBandwidthKbps(now: now), audioKbps: audio,
                                           minVideos: keepOne ? 1 : 0, maxVideos: s.videoSlots.count,
                                           sentKbps: videosFirst ? nil : sent, now: now) {
            events.append(.bandwidthAlert(participant: p.id, bandwidthKbps: alert.bandwidthKbps,
                                          streamBandwidthKbps: alert.streamBandwidthKbps,
                                          numberOfVideos: alert.numberOfVideos))
            refreshSubscriber(p, now: now, into: out)
        }
        reviewLayers(p, now: now, into: out)
        reviewLayerCaps(p, now: now, into: out)
    }

    /// What one video costs in this room: the mean measured bitrate of the live video sources (re-measured at
    /// most every 500 ms), or the configured `stream_bandwidth` before any is measured. A simulcast source
    /// counts at its lowest live layer, a single layered stream at its base layer (`Room+LayerCaps`)
    /// (`VideoDegradation.layersFirst`): a subscriber whose share shrinks
    /// takes lower layers first, and only when even those do not fit is it shown fewer videos (and back up in
    /// the reverse order); or at its highest (`.videosFirst`): fewer videos first, each kept at the best layer
    /// that fits. A camera and a screen share are two videos.
    func streamBandwidthKbps(now: MonoTime) -> Int {
        let c = streamCosts(now: now)
        return configuration.videoDegradation == .layersFirst ? c.lowest : c.highest
    }

    /// The mean cost of a video at its sources' lowest and at their highest live layers (kbps).
    func streamCosts(now: MonoTime) -> (lowest: Int, highest: Int) {
        if let c = streamRateCache, now - c.at < .milliseconds(500) { return (c.lowest, c.highest) }
        var lowest = 0.0, highest = 0.0, n = 0
        for p in participants.values {
            for source in VideoSource.allCases {
                var low: Double?, high: Double?
                let all = p.tracks(source)
                for t in all {
                    guard let track = tracks[t], track.live, let bps = track.rate.bitsPerSecond(now: now), bps > 30_000 else { continue }
                    // A single layered stream can be capped to its base layer (`Room+LayerCaps`); a simulcast layer
                    // is sent whole but for its temporal layers, which only the lowest layer drops below its rate.
                    let cheapest = all.count == 1 ? track.cheapestBitsPerSecond(now: now) ?? bps : bps
                    low = min(low ?? cheapest, cheapest)
                    high = max(high ?? bps, bps)
                }
                guard let low, let high else { continue }
                lowest += low
                highest += high
                n += 1
            }
        }
        func kbps(_ total: Double) -> Int { n == 0 ? configuration.streamBandwidthKbps : max(50, Int(total / Double(n) / 1000)) }
        streamRateCache = (now, kbps(lowest), kbps(highest))
        return (kbps(lowest), kbps(highest))
    }

    /// The node's receiver reports to each publisher (RFC 3550 section 6.4.2): loss and jitter per track.
    func sendDueReceiverReports(now: MonoTime, into out: DatagramBatch) {
        for conn in connections.values where now >= conn.nextReceiverReport {
            conn.nextReceiverReport = now + configuration.receiverReportInterval
            var blocks: [ReportBlock] = []
            for (ssrc, route) in conn.tracksBySSRC where !route.rtx {
                guard let t = tracks[route.track], let highest = t.unwrapper.highest,
                      let loss = t.reception.nextReport(highest: highest) else { continue }
                // DLSR in 1/65536 s (RFC 3550 section 6.4.1), clamped to its 32 bits (about 18 hours).
                let dlsr = t.lastSRArrival.map { UInt32(min(0xFFFF_FFFF, (now - $0).nanoseconds / 15_259)) } ?? 0
                blocks.append(ReportBlock(ssrc: ssrc, fractionLost: loss.fractionLost, cumulativeLost: loss.cumulativeLost,
                                          extendedHighestSequence: UInt32(truncatingIfNeeded: highest),
                                          jitter: UInt32(t.reception.jitter), lastSenderReport: t.lastSR == nil ? 0 : t.lastSRMiddle,
                                          delaySinceLastSenderReport: t.lastSR == nil ? 0 : dlsr))
            }
            guard !blocks.isEmpty, conn.outbound != nil else { continue }
            let egress = conn.egress(out)
            guard let buf = egress.nextBuffer() else { return drop(.egressFull) }
            guard let n = ReceiverReport(ssrc: nodeSSRC, reports: Array(blocks.prefix(31))).write(into: buf) else { continue }
            commitRTCP(buf, length: n, conn: conn, into: egress)
        }
    }

    /// Opus silence frames (RFC 6716 section 3: TOC 0xF8, a 20 ms CELT frame that decodes to silence) on audio
    /// slots whose source was muted, 20 ms apart, so receivers end comfort noise cleanly; then nothing.
    func sendDueSilence(now: MonoTime, into out: DatagramBatch) {
        for p in participants.values {
            guard let s = p.subscriber, let cid = p.subscribeConnection, let conn = connections[cid] else { continue }
            let out = conn.egress(out)
            for i in s.audioSlots.indices where s.audioSlots[i].silenceFramesLeft > 0 && s.audioSlots[i].nextSilenceAt <= now {
                if s.audioSlots[i].current != nil { s.audioSlots[i].silenceFramesLeft = 0; continue }
                s.audioSlots[i].silenceFramesLeft -= 1
                s.audioSlots[i].nextSilenceAt = now + .milliseconds(20)
                guard let (seq, ts) = s.audioSlots[i].rewriter.synthesize(tsIncrement: 960, now: now),
                      let srtp = conn.outbound, let buf = out.nextBuffer() else { continue }
                let d = s.audioSlots[i].description
                var h = OutgoingRTP(payloadType: d.payloadType, sequenceNumber: seq, timestamp: ts, ssrc: d.ssrc)
                if conn.sendHistory != nil { h.transportSequenceID = d.transportCCExtensionID }
                var w = ByteWriter(buf)
                var tccAt: Int?
                guard h.write(&w, transportSequenceOffset: &tccAt), w.u8(0xF8), w.u8(0xFF), w.u8(0xFE) else { continue }
                if let at = tccAt { buf.setU16(stampTransportSequence(conn, size: w.offset + 16, now: now, into: out), at: at) }
                guard case .success(let m) = conn.protect(srtp, buf, length: w.offset) else { continue }
                out.commit(length: m, to: conn.id)
                s.audioSlots[i].packetsSent &+= 1
                counters.packetsOut &+= 1
            }
        }
    }

    /// Repeats PLIs to sources that slots are still waiting on; stops waiting when nobody is.
    func retryKeyframeRequests(now: MonoTime, into out: DatagramBatch) {
        for track in tracks.values where track.kind == .video {
            guard let due = track.keyframes.nextRetry(rtt: nil), due <= now else { continue }
            let waited = track.sinks.contains { ref in
                guard let s = participants[ref.subscriber]?.subscriber, s.has(ref) else { return false }
                let slot = s.slot(ref)
                return slot.pending == track.index
                    || (ref.kind == .video && slot.current == track.index && slot.layers.awaitsKeyframe(top: track.topLayers.spatial))
            }
            if waited { requestKeyframe(track, now: now, into: out) } else { track.keyframes.keyframeArrived() }
        }
    }
}
