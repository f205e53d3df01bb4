/// Simulcast (RFC 8853): a publisher's video may arrive as up to three spatial layers, each a track of its
/// own (own SSRC, keyframes, NACK history). Each subscriber's slot shows one layer of it, chosen from the
/// subscriber's downlink estimate: the best layer whose measured rate fits the subscriber's share per video.
/// A new choice is placed like a new speaker (`place`): the old layer keeps flowing until the new one's
/// keyframe, asked for with a PLI on that layer's SSRC, and the slot's rewriter keeps sequence numbers,
/// timestamps and picture ids continuous across the switch.
extension Room {
    /// A higher layer is taken only when its rate fits this many times over: an estimate hovering at a
    /// layer's rate must not switch layers (and ask for keyframes) back and forth.
    static let layerUpMargin = 1.15

    /// Whether any layer of the participant's video is arriving.
    func videoLive(_ p: Participant) -> Bool { p.videoTracks.contains { tracks[$0]?.live == true } }

    /// The track of `participant`'s `kind` to send subscriber `s` (nil: no subscriber context, the top layer).
    func track(of participant: Int, _ kind: MediaKind, for s: SubscriberState?, current: Int?, now: MonoTime) -> Int? {
        guard let p = participants[participant] else { return nil }
        if kind == .audio { return p.audioTrack }
        guard p.videoTracks.count > 1 else { return p.videoTracks.first }
        return videoLayer(of: p, for: s, current: current, now: now)
    }

    /// The layer of `q`'s simulcast video that fits subscriber `s`: of the layers arriving, ranked by measured
    /// rate (the offer's order until every one has a rate), the highest whose rate is within the subscriber's
    /// estimate less its audio, divided by its number of videos; the lowest when none fits; the highest
    /// before the subscriber has an estimate. `current` (the layer the slot shows) is kept unless a lower one
    /// is needed or a higher one fits with `layerUpMargin` to spare.
    func videoLayer(of q: Participant, for s: SubscriberState?, current: Int?, now: MonoTime) -> Int? {
        let live = q.videoTracks.filter { tracks[$0]?.live == true }
        guard live.count > 1 else { return live.first ?? (current.flatMap { q.videoTracks.contains($0) ? $0 : nil } ?? q.videoTracks.last) }
        var rates: [Int: Double] = [:]
        for t in live { if let r = tracks[t]?.rate.bitsPerSecond(now: now) { rates[t] = r } }
        let ranked = rates.count == live.count ? live.sorted { rates[$0]! < rates[$1]! } : live
        guard let s, let estimate = s.estimator.estimate else { return ranked.last }
        let audio = Double(configuration.audioReserveKbps * 1000 * s.audioSlots.count { $0.current != nil })
        let share = max(0, Double(estimate) - audio) / Double(max(1, s.videoCount.numberOfVideos))
        let at = current.flatMap { ranked.firstIndex(of: $0) }
        var choice = 0
        for (i, t) in ranked.enumerated() {
            let rate = rates[t] ?? 0
            let needed = at.map { i > $0 } == true ? rate * Self.layerUpMargin : rate
            if needed <= share { choice = i }
        }
        return ranked[choice]
    }

    /// The simulcast layer a video slot carries or waits for, nil when its source is not simulcast.
    func layerShown(_ slot: Slot) -> Int? {
        guard let t = slot.pending ?? slot.current, let track = tracks[t], let owner = participants[track.owner],
              owner.videoTracks.count > 1 else { return nil }
        return track.description.simulcast?.index
    }

    /// After a subscriber's estimate changed: each video slot showing a simulcast publisher moves to the layer
    /// that now fits, if another (at that layer's next keyframe).
    func reviewLayers(_ p: Participant, now: MonoTime, into out: DatagramBatch) {
        guard let s = p.subscriber else { return }
        var moved = false
        for i in s.videoSlots.indices {
            let slot = s.videoSlots[i]
            guard let who = slot.assigned, let q = participants[who], q.videoTracks.count > 1 else { continue }
            let shown = slot.pending ?? slot.current
            guard let want = videoLayer(of: q, for: s, current: shown, now: now), want != shown else { continue }
            place(who, in: SlotRef(subscriber: p.index, kind: .video, index: i), subscriber: s, now: now, into: out)
            moved = true
        }
        if moved { refreshSubscriber(p, now: now, into: out) }  // the slot map reports the new layer
    }
}
