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

    /// The track of `participant`'s `kind` to send subscriber `s` in `slot` (nil: no subscriber context, the
    /// top layer).
    func track(of participant: Int, _ kind: MediaKind, for s: SubscriberState?, current: Int?, render: RenderLimit? = nil,
               now: MonoTime) -> Int? {
        guard let p = participants[participant] else { return nil }
        if kind == .audio { return p.audioTrack }
        guard p.videoTracks.count > 1 else { return p.videoTracks.first }
        return videoLayer(of: p, for: s, current: current, render: render, now: now)
    }

    /// The layer of `q`'s simulcast video that fits subscriber `s`: of the layers arriving, ranked by measured
    /// rate (the offer's order until every one has a rate), the highest whose rate is within the subscriber's
    /// estimate less its audio, divided by its number of videos; the lowest when none fits; the highest
    /// before the subscriber has an estimate. `current` (the layer the slot shows) is kept unless a lower one
    /// is needed or a higher one fits with `layerUpMargin` to spare. With a render limit, no layer above the
    /// smallest whose key frames cover it (sizes known once each layer sent one).
    func videoLayer(of q: Participant, for s: SubscriberState?, current: Int?, render: RenderLimit? = nil, now: MonoTime) -> Int? {
        let live = q.videoTracks.filter { tracks[$0]?.live == true }
        guard live.count > 1 else { return live.first ?? (current.flatMap { q.videoTracks.contains($0) ? $0 : nil } ?? q.videoTracks.last) }
        var rates: [Int: Double] = [:]
        for t in live { if let r = tracks[t]?.rate.bitsPerSecond(now: now) { rates[t] = r } }
        var ranked = rates.count == live.count ? live.sorted { rates[$0]! < rates[$1]! } : live
        if let render, let cover = ranked.firstIndex(where: { tracks[$0]?.frameSize.map(render.isCovered) ?? false }) {
            ranked = Array(ranked[...cover])
        }
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
            guard let want = videoLayer(of: q, for: s, current: shown, render: slot.renderLimit, now: now), want != shown else { continue }
            place(who, in: SlotRef(subscriber: p.index, kind: .video, index: i), subscriber: s, now: now, into: out)
            moved = true
        }
        if moved { refreshSubscriber(p, now: now, into: out) }  // the slot map reports the new layer
    }
}

/// How large a subscriber renders a video slot, at most (either side may be open).
public struct RenderLimit: Sendable, Equatable {
    public var maxWidth: Int?
    public var maxHeight: Int?

    public init(maxWidth: Int?, maxHeight: Int?) {
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
    }

    /// Whether a frame of this size covers the limit (is at least as large on a bounded side).
    func isCovered(by size: (width: Int, height: Int)) -> Bool {
        (maxWidth.map { size.width >= $0 } ?? false) || (maxHeight.map { size.height >= $0 } ?? false)
    }
}

extension Room {
    /// The subscriber renders its video slot `mid` at most this large (nil: no limit): a simulcast source is
    /// then sent the smallest layer that covers it, or a lower one if the estimate says so.
    public func setRenderLimit(_ id: String, mid: String, _ limit: RenderLimit?, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let p = try participant(id)
        guard let s = p.subscriber, let i = s.videoSlots.firstIndex(where: { $0.description.mid == mid }) else {
            throw RoomError(.invalidSetting, .notFound, "participant \(id) has no video slot \(mid)")
        }
        if let w = limit?.maxWidth, !(1...16_384).contains(w) { throw RoomError(.invalidSetting, .invalid, "max_width must be 1-16384") }
        if let h = limit?.maxHeight, !(1...16_384).contains(h) { throw RoomError(.invalidSetting, .invalid, "max_height must be 1-16384") }
        s.videoSlots[i].renderLimit = limit?.maxWidth == nil && limit?.maxHeight == nil ? nil : limit
        reviewLayers(p, now: now, into: out)
    }
}
