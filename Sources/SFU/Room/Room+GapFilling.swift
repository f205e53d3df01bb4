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
extension Room {
    /// What one padding packet costs the resend budget, about: header, extensions, a byte of padding, SRTP tag.
    static let gapPaddingCost = 40

    /// Sends padding under the number `rw` of `ext`, a late packet of source `track` that video slot `i` of `s`
    /// leaves out, and logs it as a repair just sent, so that a NACK of the number is answered with padding
    /// again once a resend would be.
    func fillWithPadding(_ s: SubscriberState, slot i: Int, conn: Connection, track: Int, extendedSequence ext: Int64,
                         rewrite rw: SlotRewriter.Output, now: MonoTime, into out: DatagramBatch) {
        s.videoSlots[i].sendLog?.log(.init(outSequence: rw.sequenceNumber, source: track, sourceSequence: ext, output: rw,
                                           marker: false, sentAt: now, lastResend: now, padding: true))
        sendGapPadding(s, slot: i, conn: conn, rewrite: rw, now: now, into: out)
    }

    /// Pays for a padding packet under `rw`'s number on video slot `i` of `s` and sends it; false when the
    /// budget or the egress refused it.
    @discardableResult
    func sendGapPadding(_ s: SubscriberState, slot i: Int, conn: Connection, rewrite rw: SlotRewriter.Output, now: MonoTime,
                        into out: DatagramBatch) -> Bool {
        guard limits.resendPolicy.pay(Self.gapPaddingCost, from: &s.resendBudget, estimate: s.estimator.estimate, now: now) else {
            drop(.resendBudget, conn)
            return false
        }
        guard emitGapPadding(&s.videoSlots[i], conn: conn, rewrite: rw, now: now, into: out) else { return false }
        counters.gapsFilled &+= 1
        return true
    }

    /// One padding-only packet (a single byte of padding, the least RFC 3550 allows) under `rw`'s sequence
    /// number and timestamp on the slot's media stream, in the slot's format. Not on its RTX stream: padding
    /// there is a probe of that stream (RFC 4588 section 4), and fills no number of the media stream.
    private func emitGapPadding(_ slot: inout Slot, conn: Connection, rewrite rw: SlotRewriter.Output, now: MonoTime,
                                into local: DatagramBatch) -> Bool {
        guard let srtp = conn.outbound else { return false }
        let out = conn.egress(local)
        guard let buf = out.nextBuffer() else { drop(.egressFull); return false }
        var h = OutgoingRTP(payloadType: slot.format.payloadType, sequenceNumber: rw.sequenceNumber, timestamp: rw.timestamp,
                            ssrc: slot.description.ssrc)
        h.padding = 1
        if let id = slot.description.absSendTimeExtensionID { h.absSendTime = (id, absSendTime(now)) }
        if conn.sendHistory != nil { h.transportSequenceID = slot.description.transportCCExtensionID }
        var w = ByteWriter(buf)
        var tccAt: Int?
        guard h.write(&w, transportSequenceOffset: &tccAt), h.writePadding(&w) else { drop(.tooLarge); return false }
        if let at = tccAt { buf.setU16(stampTransportSequence(conn, size: w.offset + 16, now: now, into: out), at: at) }
        return protectAndCommit(&slot, conn: conn, srtp: srtp, buf, length: w.offset, payloadBytes: 0, into: out)
    }
}
