/// Probing a subscriber's downlink: when and how `ProbePlanner`'s clusters go out on a video slot's RTX stream.
extension Subscriber {
    /// Runs the subscriber's probing (see `ProbePlanner`) on its first video slot with an RTX stream: a cluster
    /// under way sends what is due; otherwise, when a check is due, a new cluster starts if the videos it could
    /// show (`moreVideos`, asked only then) or better layers would fit only with more bandwidth.
    func runProbes(audioReserveKbps: Int, moreVideos: () -> Double?, now: MonoTime, into out: DatagramBatch) {
        guard connection.sendHistory != nil, connection.outbound != nil, let slot = videoSlots.first(where: { $0.description.rtxSSRC != nil }) else { return }
        if let c = probe.cluster {
            sendProbe(c, on: slot, now: now, into: out)
            return
        }
        if probe.nextCheck == nil { probe.nextCheck = now + .seconds(1) }  // let the first feedback come
        guard let check = probe.nextCheck, now >= check else {
            if let check = probe.nextCheck { effects.wake(at: check) }
            return
        }
        guard let estimate = estimator.estimate.map({ Double($0) }) else {
            probe.nextCheck = now + .milliseconds(500)
            return effects.wake(at: probe.nextCheck!)
        }
        if let j = probe.judge, now >= j.at {
            let succeeded = estimate >= 0.9 * j.target
            probe.backoff = succeeded ? .seconds(2) : min(probe.backoff + probe.backoff, .seconds(4))
            probe.judge = nil
            probe.holdUntil = now + (succeeded ? .milliseconds(0) : probe.backoff)
        }
        guard now >= probe.holdUntil else {
            probe.nextCheck = probe.holdUntil
            return effects.wake(at: probe.holdUntil)
        }
        var target: Double?
        if !probe.initialDone {
            probe.initialDone = true
            target = estimate * 3
        } else if let needed = moreVideos(), estimate < needed {
            target = needed * 1.2
        } else if let needed = bandwidthForBetterLayers(audioReserveKbps: audioReserveKbps, now: now), estimate < needed {
            target = needed * 1.2  // a simulcast source's next layer up would fit only with more
        }
        // Judged 700 ms after a cluster: a success brings the next check forward, a failure backs off.
        probe.nextCheck = now + (target == nil ? .seconds(1) : .milliseconds(700))
        effects.wake(at: probe.nextCheck!)
        guard let target else { return }
        let rate = min(target, ProbePlanner.maxRate)
        let packet = ProbePlanner.paddingBytes + 40
        let bytes = max(Int(rate * ProbePlanner.clusterDuration.seconds / 8), 5 * packet)
        let c = ProbePlanner.Cluster(id: probe.nextID, bitsPerSecond: rate, start: now, bytes: bytes)
        probe.nextID += 1
        probe.judge = (rate, now + .milliseconds(700))
        probe.cluster = c
        sendProbe(c, on: slot, now: now, into: out)
    }

    /// Sends what of the cluster is due by now (its bytes spread over its duration), then ends it.
    private func sendProbe(_ c: ProbePlanner.Cluster, on slot: SlotSender, now: MonoTime, into out: DatagramBatch) {
        var c = c
        let due = min(c.bytes, max(Int(c.bitsPerSecond * (now - c.start).seconds / 8), ProbePlanner.paddingBytes + 40))
        while c.sent < due {
            guard let n = slot.emitProbePadding(cluster: c.id, bytes: ProbePlanner.paddingBytes, now: now, into: out) else { break }
            c.sent += n
            effects.counters.probeBytesSent &+= UInt64(n)
        }
        c.nextSend = now + .milliseconds(2)
        probe.cluster = c.sent >= c.bytes || now - c.start > ProbePlanner.clusterDuration * 3 ? nil : c
        effects.wake(at: probe.cluster?.nextSend ?? probe.nextCheck ?? .never)
    }
}

extension MonoTime.Interval {
    static func * (a: MonoTime.Interval, k: Int) -> MonoTime.Interval { .init(nanoseconds: a.nanoseconds * Int64(k)) }
    static func + (a: MonoTime.Interval, b: MonoTime.Interval) -> MonoTime.Interval { .init(nanoseconds: a.nanoseconds + b.nanoseconds) }
}
