/// The RTCP a client sends on one transport (RFC 5761 multiplexed with its RTP): decrypted, validated, parsed
/// in place within a budget of items, and handed to what the transport carries - a publisher's sender
/// reports, a subscriber's reception reports, key frame requests, NACKs and estimates.
extension Connection {
    /// Handles one SRTCP datagram; returns whether it carried an estimate (REMB or transport-cc feedback),
    /// after which the subscriber's ABWD, layers and caps are reviewed once for the whole datagram.
    /// `mayForward` says whether a track's kind may leave the room now (a hard-muted or floor-less publisher's
    /// sender reports are kept, not forwarded).
    func receiveRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, limits: RoomLimits, tracks: [Int: PublishedTrack],
                     mayForward: (MediaKind) -> Bool, now: MonoTime, into out: DatagramBatch, effects: RoomEffects) -> Bool {
        guard let srtp = inbound else { effects.drop(.noSRTPContext, self); return false }
        // What one connection's RTCP may cost its worker is bounded whatever it sends: past its rate (ten times
        // a busy browser's) a datagram costs a lookup and this test, not libsrtp's work and a parse (issue 40).
        let rate = Double(limits.rtcpPerSecond)
        guard rtcpBudget.take(1, perSecond: rate, burst: rate, now: now) else { effects.drop(.rtcpRate, self); return false }
        // SRTCP keeps the first packet's sender SSRC in clear (RFC 3711 section 3.4); libsrtp keeps a stream
        // for every SSRC that authenticates, so a new one past the cap is refused before it is tried.
        guard length >= 8 else { effects.drop(.truncated, self); return false }
        let sender = UnsafeRawBufferPointer(buffer).u32(4)
        let newSSRC = !inboundSSRCs.contains(sender)
        if newSSRC, !inboundSSRCs.reserve(sender, limit: limits.ssrcsPerConnection, srtp: srtp) { effects.drop(.ssrcLimit, self); return false }
        let plainLength: Int
        switch srtp.unprotectRTCP(buffer, length: length) {
        case .success(let n): plainLength = n
        case .failure(let r): effects.drop(r, self); return false
        }
        if newSSRC { inboundSSRCs.use(sender) }
        let p = UnsafeRawBufferPointer(rebasing: buffer[0..<plainLength])
        if let r = RTCPCompound.validate(p) { effects.drop(r, self); return false }
        effects.counters.rtcpIn &+= 1
        // Every item a datagram names costs one unit of a fixed budget; what lies past it is not parsed.
        var budget = limits.rtcpItemsPerPacket
        var overBudget = false
        func spend(_ n: Int) -> Bool {
            guard !overBudget, n <= budget else { overBudget = true; return false }
            budget -= n
            return true
        }
        // Estimates (REMB, transport-cc) update the subscriber's estimator as they come; what follows from the
        // estimate (ABWD, layers, caps) runs once for the datagram, however many of them it holds.
        var estimated = false
        let s = subscriber
        _ = RTCPCompound.forEach(p) { pkt in
            guard spend(1) else { return }
            switch (pkt.type, pkt.countOrFormat) {
            case (.senderReport?, _):
                guard spend(Int(pkt.countOrFormat)) else { return }
                if case .success(let sr) = SenderReport.parse(p, pkt) {
                    (publisher ?? remotePublishers[sr.ssrc])?.onSenderReport(sr, now: now, mayForward: mayForward, into: out)
                }
            case (.receiverReport?, _):
                guard spend(Int(pkt.countOrFormat)) else { return }
                if case .success(let rr) = ReceiverReport.parse(p, pkt) { s?.onReports(rr.reports, now: now) }
            case (.payloadFeedback?, FeedbackFormat.pli):
                if let h = FeedbackHeader.parse(p, pkt) { s?.onKeyframeRequest(slotSSRC: h.mediaSSRC, now: now, into: out) }
            case (.payloadFeedback?, FeedbackFormat.fir):
                guard spend(max(0, pkt.body.count - 8) / 8) else { return }
                if let (_, entries) = FullIntraRequest.parse(p, pkt) {
                    for e in entries { s?.onKeyframeRequest(slotSSRC: e.ssrc, now: now, into: out) }
                }
            case (.payloadFeedback?, FeedbackFormat.applicationLayer):
                if let remb = REMB.parse(p, pkt), let s {
                    s.estimator.onREMB(bitrate: remb.bitrate, now: now)
                    estimated = true
                }
            case (.transportFeedback?, FeedbackFormat.nack):
                guard spend(max(0, pkt.body.count - 8) / 4) else { return }
                guard let h = FeedbackHeader.parse(p, pkt) else { return }
                s?.onNACK(p, pkt, mediaSSRC: h.mediaSSRC, tracks: tracks, now: now, into: out)
            case (.transportFeedback?, FeedbackFormat.transportCC):
                // A status count is two bytes that can name 65,535 packets; it is parsed only within the budget.
                // Read in place into the connection's buffer (`SendHistory.resolved`): nothing is allocated.
                let header = sendHistory != nil ? sendHistory!.resolve(p, pkt, maxPackets: budget)
                    : TransportCCFeedback.forEachPacket(p, pkt, maxPackets: budget) { _, _ in }
                if let h = header {
                    _ = spend(h.statusCount)
                    guard sendHistory != nil, let s else { return }
                    s.estimator.onPacketFeedback(sendHistory!.resolved, now: now)
                    estimated = true
                } else if TransportCCFeedback.statusCount(p, pkt).map({ $0 > budget }) == true {
                    overBudget = true
                }
            default:
                break  // SDES, BYE, APP and unknown types need no action
            }
        }
        if overBudget { effects.drop(.rtcpBudget, self) }
        return estimated
    }
}
