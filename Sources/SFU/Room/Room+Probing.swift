/// Probing a subscriber's downlink (issue 13). A subscriber that receives less than it could (fewer videos
/// than slots, or nothing but audio after congestion) gives the node's GCC no evidence of spare capacity:
/// an application-limited sender's estimate never climbs past 1.5 x what it sends. So the node sends probe
/// clusters - padding-only packets on a video slot's RTX stream (RFC 4588 section 4: padding is not a
/// retransmission), about 30 ms long at the rate it wants to know about - and the feedback on them tells the
/// estimator what the path carried (libwebrtc probes the same way). It probes once at start-up (3 x the
/// estimate), then whenever the videos it could show would fit only with more bandwidth, at the rate they
/// need, backing off from 2 s to 4 s while probes fail, so capacity that comes back after a cap is found
/// within seconds.
struct ProbePlanner {
    struct Cluster {
        var id: Int
        var bitsPerSecond: Double
        var start: MonoTime
        var bytes: Int
        var sent = 0
        /// When the next part is due: clusters are sent in steps 2 ms apart.
        var nextSend: MonoTime = .zero
    }

    var cluster: Cluster?
    var nextCheck: MonoTime?
    var backoff: MonoTime.Interval = .seconds(2)
    var initialDone = false
    var judge: (target: Double, at: MonoTime)?
    /// No new cluster before this (after a failed probe, the back-off).
    var holdUntil: MonoTime = .zero
    var nextID = 1
    /// Bytes of one padding packet (RFC 3550 allows 255 bytes of padding).
    static let paddingBytes = 255
    static let clusterDuration: MonoTime.Interval = .milliseconds(30)
    static let maxRate = 10_000_000.0
}

extension Room {
    func runProbes(now: MonoTime, into out: DatagramBatch) {
        for p in participants.values {
            guard let s = p.subscriber, let cid = p.subscribeConnection, let conn = connections[cid], conn.sendHistory != nil,
                  conn.outbound != nil, let slot = s.videoSlots.firstIndex(where: { $0.description.rtxSSRC != nil }) else { continue }
            if let c = s.probe.cluster {
                sendProbe(c, slot: slot, subscriber: s, conn: conn, now: now, into: out)
                continue
            }
            if s.probe.nextCheck == nil { s.probe.nextCheck = now + .seconds(1) }  // let the first feedback come
            guard let check = s.probe.nextCheck, now >= check else { continue }
            guard let estimate = s.estimator.estimate.map({ Double($0) }) else { s.probe.nextCheck = now + .milliseconds(500); continue }
            if let j = s.probe.judge, now >= j.at {
                let succeeded = estimate >= 0.9 * j.target
                s.probe.backoff = succeeded ? .seconds(2) : min(s.probe.backoff + s.probe.backoff, .seconds(4))
                s.probe.judge = nil
                s.probe.holdUntil = now + (succeeded ? .milliseconds(0) : s.probe.backoff)
            }
            guard now >= s.probe.holdUntil else { s.probe.nextCheck = s.probe.holdUntil; continue }
            var target: Double?
            if !s.probe.initialDone {
                s.probe.initialDone = true
                target = estimate * 3
            } else if let needed = bandwidthForMoreVideos(p, s, now: now), estimate < needed {
                target = needed * 1.2
            } else if let needed = bandwidthForBetterLayers(s, now: now), estimate < needed {
                target = needed * 1.2  // a simulcast source's next layer up would fit only with more
            }
            // Judged 700 ms after a cluster: a success brings the next check forward, a failure backs off.
            s.probe.nextCheck = now + (target == nil ? .seconds(1) : .milliseconds(700))
            guard let target else { continue }
            let rate = min(target, ProbePlanner.maxRate)
            let packet = ProbePlanner.paddingBytes + 40
            let bytes = max(Int(rate * ProbePlanner.clusterDuration.seconds / 8), 5 * packet)
            let c = ProbePlanner.Cluster(id: s.probe.nextID, bitsPerSecond: rate, start: now, bytes: bytes)
            s.probe.nextID += 1
            s.probe.judge = (rate, now + .milliseconds(700))
            s.probe.cluster = c
            deadlineCache = nil
            sendProbe(c, slot: slot, subscriber: s, conn: conn, now: now, into: out)
        }
    }

    /// When the subscriber would take more videos if its estimate allowed, the bandwidth all it could show
    /// would take (`VideoCountPolicy`'s up rule: reserve + k videos x 1.15); nil when it has all it can use.
    func bandwidthForMoreVideos(_ p: Participant, _ s: SubscriberState, now: MonoTime) -> Double? {
        let n = s.videoCount.numberOfVideos
        let cameras = participants.values.count { q in q.index != p.index && videoLive(q) && videoAllowed(q) && !q.videoMuted }
        let screens = participants.values.count { q in q.index != p.index && videoLive(q, .screen) && videoAllowed(q) }
        let screenSlots = s.videoSlots.count { $0.description.source == .screen }
        let wanted = min(s.videoSlots.count - screenSlots, cameras) + min(screenSlots, screens)
        guard n < wanted else { return nil }
        let stream = streamBandwidthKbps(now: now)
        let audio = configuration.audioReserveKbps * max(1, s.audioSlots.filter { $0.current != nil }.count)
        let r = max(stream, audio)
        return (Double(r) + Double(wanted * stream) * s.videoCount.parameters.upMargin) * 1000
    }

    /// Sends what of the cluster is due by now (its bytes spread over its duration), then ends it.
    private func sendProbe(_ c: ProbePlanner.Cluster, slot: Int, subscriber s: SubscriberState, conn: Connection, now: MonoTime,
                           into out: DatagramBatch) {
        var c = c
        let due = min(c.bytes, max(Int(c.bitsPerSecond * (now - c.start).seconds / 8), ProbePlanner.paddingBytes + 40))
        while c.sent < due {
            guard let n = emitPadding(&s.videoSlots[slot], conn: conn, cluster: c.id, now: now, into: out) else { break }
            c.sent += n
            counters.probeBytesSent &+= UInt64(n)
        }
        c.nextSend = now + .milliseconds(2)
        s.probe.cluster = c.sent >= c.bytes || now - c.start > ProbePlanner.clusterDuration * 3 ? nil : c
    }

    /// One padding-only packet on the slot's RTX stream, stamped for the cluster. Returns its size.
    private func emitPadding(_ slot: inout Slot, conn: Connection, cluster: Int, now: MonoTime, into local: DatagramBatch) -> Int? {
        let d = slot.description
        let out = conn.egress(local)
        guard let pt = slot.format.rtxPayloadType ?? d.rtxPayloadType, let ssrc = d.rtxSSRC, let srtp = conn.outbound, let buf = out.nextBuffer() else { return nil }
        var h = OutgoingRTP(payloadType: pt, sequenceNumber: slot.rtxSequence, timestamp: 0, ssrc: ssrc)
        slot.rtxSequence &+= 1
        h.padding = ProbePlanner.paddingBytes
        if let id = d.absSendTimeExtensionID { h.absSendTime = (id, absSendTime(now)) }
        h.transportSequenceID = d.transportCCExtensionID
        var w = ByteWriter(buf)
        var tccAt: Int?
        guard h.write(&w, transportSequenceOffset: &tccAt), h.writePadding(&w) else { return nil }
        if let at = tccAt { buf.setU16(stampTransportSequence(conn, size: w.offset + 16, now: now, probeCluster: cluster, into: out), at: at) }
        guard case .success(let n) = conn.protect(srtp, buf, length: w.offset) else { return nil }
        out.commit(length: n, to: conn.id)
        return n
    }

    /// When a probe cluster next sends (every 2 ms while one runs) or a probe is next considered.
    func nextProbe() -> MonoTime {
        var t = MonoTime.never
        for p in participants.values {
            guard let s = p.subscriber else { continue }
            if let c = s.probe.cluster { t = min(t, c.nextSend) } else if let check = s.probe.nextCheck { t = min(t, check) }
        }
        return t
    }
}

extension MonoTime.Interval {
    static func * (a: MonoTime.Interval, k: Int) -> MonoTime.Interval { .init(nanoseconds: a.nanoseconds * Int64(k)) }
    static func + (a: MonoTime.Interval, b: MonoTime.Interval) -> MonoTime.Interval { .init(nanoseconds: a.nanoseconds + b.nanoseconds) }
}
