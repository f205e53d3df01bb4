/// What a slot sends besides forwarded packets: retransmissions from its send log, padding in place of late
/// packets it leaves out, its sources' sender reports, silence frames after a mute, and probe padding.
extension SlotSender {
    /// Retransmits from the source's history what the slot sent under a lost sequence number (padding again
    /// where it sent padding, `fillWithPadding`), within the bounds of `ResendPolicy`. NACKs are never
    /// forwarded upstream. `tracks` finds the source of what was sent (it may have switched since).
    func resend(_ seq: UInt16, subscriber s: Subscriber, policy: ResendPolicy, tracks: [Int: PublishedTrack], now: MonoTime,
                into out: DatagramBatch) {
        guard let rec = sendLog?.lookup(seq) else { return }
        // Without RTX the repair would go out under the packet's own SSRC and number with its header extensions
        // stamped anew (transport-wide sequence, abs-send-time): under AES-GCM the original's nonce with other
        // associated data, and two such packets give away the GHASH key (RFC 7714 section 8.1: a nonce never
        // protects two packets). Only RTX, a new number on its own stream, repairs there.
        if description.rtxSSRC == nil, s.connection.outbound?.profile.isAEAD == true { return effects.drop(.resendNeedsRTX, s.connection) }
        switch policy.admits(resends: rec.resends, lastResend: rec.lastResend, rtt: rtt, now: now) {
        case .resend: break
        case .tooSoon: return
        case .refused(let reason): return effects.drop(reason, s.connection)
        }
        if rec.padding {
            if sendGapPadding(subscriber: s, policy: policy, rewrite: rec.output, now: now, into: out) { sendLog?.markResent(seq, at: now) }
            return
        }
        // Sent in the format of the source it came from, which may not be the slot's current one any more.
        guard let track = tracks[rec.source], let pkt = track.history?.packet(extendedSequence: rec.sourceSequence),
              case .success(let h) = RTPHeader.parse(pkt),
              case .success(let video) = VideoDescriptor.parse(track.description.codec, payload: UnsafeRawBufferPointer(rebasing: pkt[h.payloadRange])),
              let format = description.format(for: track.description)
        else { return }
        guard policy.pay(pkt.count, from: &s.resendBudget, estimate: s.estimator.estimate, now: now) else {
            return effects.drop(.resendBudget, s.connection)
        }
        // On the slot's RTX stream when it has one (RFC 4588), else the same packet again.
        let rtx = description.rtxSSRC != nil
        if emit(source: pkt, payload: h.payloadRange, payloadType: nil, video: video, format: format, rewrite: rec.output, marker: rec.marker,
                level: nil, retransmission: rtx, now: now, into: out) {
            sendLog?.markResent(seq, at: now)
            retransmissions &+= 1
            effects.counters.retransmissions &+= 1
        }
    }

    // MARK: Gap padding

    /// Padding in place of a packet a slot will never send, so that its subscriber sees no sequence gap that
    /// nothing fills (RFC 3550 section 5.1: a packet may carry padding alone).
    ///
    /// A slot's output closes up over the packets it leaves out (`SlotRewriter.skip`), but only over those it
    /// sees: a packet lost on the way from the publisher is of a layer the slot cannot know, so its number is
    /// kept for it, and the subscriber sees it missing and NACKs it. When it comes back late (an RTX repair,
    /// RFC 4588, or reordered) and is of a layer the slot leaves out, nothing would ever be sent under that
    /// number: libwebrtc would go on asking for it, and a receiver that waits for sequence numbers to be
    /// contiguous would hold what follows. So the slot sends a padding-only packet under it: libwebrtc passes a
    /// packet without payload to its packet buffer as padding (`PacketBuffer::InsertPadding`) and to its NACK
    /// list as received, and the gap is closed.
    ///
    /// Decided when the late packet is left out, not when the subscriber NACKs a number the slot holds nothing
    /// for: such a number may be kept for a packet of a layer the slot does send whose repair is still on its
    /// way, and a receiver that took the number as padding would not use that repair, losing its picture.
    /// Deciding per picture instead (a picture sent or left out whole) cannot place a packet the slot never saw.
    ///
    /// Bounded: one padding packet per late packet and slot (a repair is taken once, `NackGenerator.repaired`;
    /// a duplicate original fails SRTP's replay check), paid from the subscriber's resend budget, and logged as
    /// sent, so that a NACK of it is answered again only as a retransmission would be (`ResendPolicy`).
    ///
    /// What one padding packet costs the resend budget, about: header, extensions, a byte of padding, SRTP tag.
    static let gapPaddingCost = 40

    /// Sends padding under the number `rw` of `ext`, a late packet of `track` this slot leaves out, and logs
    /// it as a repair just sent, so that a NACK of the number is answered with padding again once a resend
    /// would be.
    func fillWithPadding(track: PublishedTrack, extendedSequence ext: Int64, rewrite rw: SlotRewriter.Output, now: MonoTime,
                         into out: DatagramBatch) {
        sendLog?.log(.init(outSequence: rw.sequenceNumber, source: track.index, sourceSequence: ext, output: rw,
                           marker: false, sentAt: now, lastResend: now, padding: true))
        guard let s = subscriber else { return }
        sendGapPadding(subscriber: s, policy: s.resendPolicy, rewrite: rw, now: now, into: out)
    }

    /// Pays for a padding packet under `rw`'s number and sends it; false when the budget or the egress refused.
    @discardableResult
    func sendGapPadding(subscriber s: Subscriber, policy: ResendPolicy, rewrite rw: SlotRewriter.Output, now: MonoTime,
                        into out: DatagramBatch) -> Bool {
        guard policy.pay(Self.gapPaddingCost, from: &s.resendBudget, estimate: s.estimator.estimate, now: now) else {
            effects.drop(.resendBudget, connection)
            return false
        }
        guard emitGapPadding(rewrite: rw, now: now, into: out) else { return false }
        effects.counters.gapsFilled &+= 1
        return true
    }

    /// One padding-only packet (a single byte of padding, the least RFC 3550 allows) under `rw`'s sequence
    /// number and timestamp on the slot's media stream, in the slot's format. Not on its RTX stream: padding
    /// there is a probe of that stream (RFC 4588 section 4), and fills no number of the media stream.
    private func emitGapPadding(rewrite rw: SlotRewriter.Output, now: MonoTime, into local: DatagramBatch) -> Bool {
        guard let srtp = connection.outbound else { return false }
        let out = connection.batch(for: local)
        guard let buf = out.nextBuffer() else { effects.drop(.egressFull); return false }
        var h = OutgoingRTP(payloadType: format.payloadType, sequenceNumber: rw.sequenceNumber, timestamp: rw.timestamp, ssrc: description.ssrc)
        h.padding = 1
        if let id = description.absSendTimeExtensionID { h.absSendTime = (id, absSendTime(now)) }
        if connection.sendHistory != nil { h.transportSequenceID = description.transportCCExtensionID }
        var w = ByteWriter(buf)
        var tccAt: Int?
        guard h.write(&w, transportSequenceOffset: &tccAt), h.writePadding(&w) else { effects.drop(.tooLarge); return false }
        if let at = tccAt { buf.setU16(stampTransportSequence(size: w.offset + 16, now: now, into: out), at: at) }
        return protectAndCommit(srtp, buf, length: w.offset, payloadBytes: 0, into: out)
    }

    // MARK: Reports

    /// Forwards the source's sender report with the slot's SSRC and the RTP timestamp shifted by the slot's
    /// offset; NTP time is untouched so receivers keep lip sync (RFC 3550 section 6.4.1).
    func forwardSenderReport(_ sr: SenderReport, of track: PublishedTrack, now: MonoTime, into local: DatagramBatch) {
        guard connection.attached, current === track, let offset = rewriter.timestampOffset else { return }
        let rewritten = SenderReport(ssrc: description.ssrc, ntpTimestamp: sr.ntpTimestamp, rtpTimestamp: sr.rtpTimestamp &+ offset,
                                     packetCount: UInt32(truncatingIfNeeded: packetsSent), octetCount: UInt32(truncatingIfNeeded: bytesSent))
        let out = connection.batch(for: local)
        guard let buf = out.nextBuffer() else { return effects.drop(.egressFull) }
        guard let n = rewritten.write(into: buf) else { return }
        lastSRMiddle = UInt32(truncatingIfNeeded: sr.ntpTimestamp >> 16)
        lastSRSentAt = now
        connection.commitRTCP(buf, length: n, into: out, effects: effects)
    }

    /// The subscriber's reception report on this slot: loss, and round-trip time from LSR/DLSR (RFC 3550
    /// section 6.4.1) when it answers a sender report the node forwarded.
    func onReport(_ b: ReportBlock, now: MonoTime) {
        fractionLost = b.fractionLost
        if b.lastSenderReport != 0, b.lastSenderReport == lastSRMiddle, let sent = lastSRSentAt {
            let dlsr = Int64(b.delaySinceLastSenderReport) * 1_000_000_000 / 65536
            let rtt = (now - sent).nanoseconds - dlsr
            if rtt > 0 { self.rtt = .init(nanoseconds: rtt) }
        }
    }

    // MARK: Silence

    /// The audio slot's source was muted: `frames` Opus silence frames from now on, 20 ms apart (the caller
    /// sends the first, `sendDueSilence`, which schedules the rest).
    func startSilence(frames: Int, now: MonoTime) {
        silenceFramesLeft = frames
        nextSilenceAt = now
    }

    /// Opus silence frames (RFC 6716 section 3: TOC 0xF8, a 20 ms CELT frame that decodes to silence) on an
    /// audio slot whose source was muted, 20 ms apart, so receivers end comfort noise cleanly; then nothing.
    func sendDueSilence(now: MonoTime, into local: DatagramBatch) {
        guard silenceFramesLeft > 0 else { return }
        guard nextSilenceAt <= now else { return effects.wake(at: nextSilenceAt) }
        if current != nil { silenceFramesLeft = 0; return }
        silenceFramesLeft -= 1
        nextSilenceAt = now + .milliseconds(20)
        if silenceFramesLeft > 0 { effects.wake(at: nextSilenceAt) }
        let out = connection.batch(for: local)
        guard let (seq, ts) = rewriter.synthesize(tsIncrement: 960, now: now), let srtp = connection.outbound, let buf = out.nextBuffer() else { return }
        var h = OutgoingRTP(payloadType: description.payloadType, sequenceNumber: seq, timestamp: ts, ssrc: description.ssrc)
        if connection.sendHistory != nil { h.transportSequenceID = description.transportCCExtensionID }
        var w = ByteWriter(buf)
        var tccAt: Int?
        guard h.write(&w, transportSequenceOffset: &tccAt), w.u8(0xF8), w.u8(0xFF), w.u8(0xFE) else { return }
        if let at = tccAt { buf.setU16(stampTransportSequence(size: w.offset + 16, now: now, into: out), at: at) }
        guard case .success(let m) = connection.protect(srtp, buf, length: w.offset) else { return }
        out.commit(length: m, to: connection.id)
        packetsSent &+= 1
        effects.counters.packetsOut &+= 1
    }

    // MARK: Probes

    /// One padding-only packet on the slot's RTX stream, stamped for probe cluster `cluster`. Returns its size.
    func emitProbePadding(cluster: Int, bytes: Int, now: MonoTime, into local: DatagramBatch) -> Int? {
        let d = description
        let out = connection.batch(for: local)
        guard let pt = format.rtxPayloadType ?? d.rtxPayloadType, let ssrc = d.rtxSSRC, let srtp = connection.outbound,
              let buf = out.nextBuffer() else { return nil }
        var h = OutgoingRTP(payloadType: pt, sequenceNumber: rtxSequence, timestamp: 0, ssrc: ssrc)
        rtxSequence &+= 1
        h.padding = bytes
        if let id = d.absSendTimeExtensionID { h.absSendTime = (id, absSendTime(now)) }
        h.transportSequenceID = d.transportCCExtensionID
        var w = ByteWriter(buf)
        var tccAt: Int?
        guard h.write(&w, transportSequenceOffset: &tccAt), h.writePadding(&w) else { return nil }
        if let at = tccAt { buf.setU16(stampTransportSequence(size: w.offset + 16, now: now, probeCluster: cluster, into: out), at: at) }
        guard case .success(let n) = connection.protect(srtp, buf, length: w.offset) else { return nil }
        out.commit(length: n, to: connection.id)
        return n
    }
}
