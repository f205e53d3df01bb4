/// Sending what the node tells a publisher (see `PublisherFeedback`): feedback, NACKs, REMB, receiver reports,
/// and what its sender reports start.
extension Publisher {
    /// The most a publisher's video is worth sending when nobody constrains it.
    static let unconstrainedBitrate: UInt64 = 10_000_000
    static let minimumPublisherCap: UInt64 = 150_000

    /// Sends what is due - transport-cc feedback, NACKs, REMB, receiver reports - and asks for a wake-up at
    /// what is not yet. `audioReserveKbps` is what a subscriber keeps for each audio slot (the REMB cap).
    func sendDueFeedback(audioReserveKbps: Int, now: MonoTime, into local: DatagramBatch) {
        let conn = connection
        guard conn.outbound != nil else { return }
        let out = conn.batch(for: local)
        let media = allTracks.lazy.compactMap(\.ssrc).first ?? 0
        if let f = feedback.recorder {
            if f.isDue(now) {
                while let buf = out.nextBuffer(), let n = feedback.recorder!.writeFeedback(sender: Room.nodeSSRC, media: media, now: now, into: buf) {
                    conn.commitRTCP(buf, length: n, into: out, effects: effects)
                }
            }
            if let f = feedback.recorder, f.hasPending { effects.wake(at: f.nextFeedback) }
        }
        for track in videoTracks where track.description.nack {
            guard let ssrc = track.ssrc else { continue }
            let due = track.nacks.nextDeadline(rtt: track.nacks.rtt)
            guard due <= now else {
                if track.nacks.missingCount > 0 { effects.wake(at: due) }
                continue
            }
            let lost = track.nacks.due(now: now, rtt: track.nacks.rtt)
            if !lost.isEmpty, let buf = out.nextBuffer(), let n = GenericNACK.write(sender: Room.nodeSSRC, media: ssrc, sequences: lost, into: buf) {
                effects.counters.nacksSent &+= 1
                conn.commitRTCP(buf, length: n, into: out, effects: effects)
            }
            if track.nacks.missingCount > 0 { effects.wake(at: track.nacks.nextDeadline(rtt: track.nacks.rtt)) }
        }
        if now >= feedback.nextREMB {
            // Every second while its video arrives; resumed by its next video packet (`videoArrived`).
            feedback.nextREMB = videoTracks.contains(where: \.live) ? now + .seconds(1) : .never
            sendREMB(audioReserveKbps: audioReserveKbps, into: out)
        }
        if feedback.nextREMB != .never { effects.wake(at: feedback.nextREMB) }
        if now >= feedback.nextReceiverReport {
            // Every interval while something arrives to report on; armed again by the next packet (`receive`).
            feedback.nextReceiverReport = sendReceiverReport(now: now, into: out) ? now + feedback.receiverReportInterval : .never
        }
        if feedback.nextReceiverReport != .never { effects.wake(at: feedback.nextReceiverReport) }
    }

    /// A simulcast publisher's layers share its REMB (RFC 8853 leaves the split to it): no cap from the room,
    /// whose subscribers each take the layer that fits them; its uplink still applies. A camera and a screen
    /// share are capped each, and the REMB (one figure for all its SSRCs) is their sum.
    private func sendREMB(audioReserveKbps: Int, into out: DatagramBatch) {
        let ssrcs = videoTracks.compactMap(\.ssrc)
        var cap: UInt64 = 0
        for source in VideoSource.allCases {
            let layers = tracks(source)
            cap = min(cap &+ (layers.count == 1 ? publisherCap(layers[0], audioReserveKbps: audioReserveKbps) : layers.isEmpty ? 0 : Self.unconstrainedBitrate),
                      Self.unconstrainedBitrate)
        }
        guard !ssrcs.isEmpty, let buf = out.nextBuffer(),
              let n = REMB(senderSSRC: Room.nodeSSRC, bitrate: min(cap, feedback.uplink?.estimate ?? .max), ssrcs: ssrcs).write(into: buf) else { return }
        connection.commitRTCP(buf, length: n, into: out, effects: effects)
    }

    /// What a publisher's video should not exceed: the largest share of a downlink among the consumers it feeds
    /// (their subscriber's estimate less its audio, over its number of videos); unconstrained while none of them
    /// has an estimate.
    func publisherCap(_ track: PublishedTrack, audioReserveKbps: Int) -> UInt64 {
        var cap: Double?
        for c in track.consumers {
            guard let share = c.videoShareCap(audioReserveKbps: audioReserveKbps) else { continue }
            cap = max(cap ?? 0, share)
        }
        guard let cap else { return Self.unconstrainedBitrate }
        return min(max(UInt64(cap), Self.minimumPublisherCap), Self.unconstrainedBitrate)
    }

    /// The node's receiver report (RFC 3550 section 6.4.2): loss and jitter per track that received something
    /// since the last one. False when none did (nothing to report: the reports stop until a packet comes).
    private func sendReceiverReport(now: MonoTime, into out: DatagramBatch) -> Bool {
        var blocks: [ReportBlock] = []
        for (ssrc, route) in tracksBySSRC where !route.rtx {
            let t = route.track
            guard t.reception.arrivedSinceReport, let highest = t.unwrapper.highest, let loss = t.reception.nextReport(highest: highest) else { continue }
            // DLSR in 1/65536 s (RFC 3550 section 6.4.1), clamped to its 32 bits (about 18 hours).
            let dlsr = t.lastSRArrival.map { UInt32(clamping: max(0, (now - $0).nanoseconds / 15_259)) } ?? 0
            blocks.append(ReportBlock(ssrc: ssrc, fractionLost: loss.fractionLost, cumulativeLost: loss.cumulativeLost,
                                      extendedHighestSequence: UInt32(truncatingIfNeeded: highest),
                                      jitter: UInt32(t.reception.jitter), lastSenderReport: t.lastSR == nil ? 0 : t.lastSRMiddle,
                                      delaySinceLastSenderReport: t.lastSR == nil ? 0 : dlsr))
        }
        guard !blocks.isEmpty else { return false }
        guard let buf = out.nextBuffer() else { effects.drop(.egressFull); return true }
        guard let n = ReceiverReport(ssrc: Room.nodeSSRC, reports: Array(blocks.prefix(31))).write(into: buf) else { return true }
        connection.commitRTCP(buf, length: n, into: out, effects: effects)
        return true
    }

    /// A sender report of one of its tracks: kept for the receiver reports (LSR, DLSR) and forwarded on every
    /// slot it feeds, at most one per track per `minSenderReportInterval` (one datagram can hold dozens).
    func onSenderReport(_ sr: SenderReport, now: MonoTime, mayForward: (MediaKind) -> Bool, into out: DatagramBatch) {
        guard let route = tracksBySSRC[sr.ssrc], !route.rtx else { return }  // not its own: ignored
        let track = route.track
        if let last = track.lastSRArrival, now - last < Self.minSenderReportInterval { return effects.drop(.rtcpThrottled, connection) }
        track.lastSR = sr
        track.lastSRMiddle = UInt32(truncatingIfNeeded: sr.ntpTimestamp >> 16)
        track.lastSRArrival = now
        guard mayForward(track.kind) else { return }
        for c in track.consumers { c.senderReport(sr, of: track, now: now, into: out) }
    }

    static let minSenderReportInterval: MonoTime.Interval = .milliseconds(100)
}
