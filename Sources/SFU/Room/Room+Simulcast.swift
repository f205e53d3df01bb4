/// Simulcast (RFC 8853): a publisher's video may arrive as up to three spatial layers, each a track of its
/// own (own SSRC, keyframes, NACK history). Each subscriber's slot shows one layer of it, chosen from the
/// subscriber's downlink estimate (`layerPlan`: the most relevant sources get the best layers that fit).
/// A new choice is placed like a new speaker (`place`): the old layer keeps flowing until the new one's
/// keyframe, asked for with a PLI on that layer's SSRC, and the slot's rewriter keeps sequence numbers,
/// timestamps and picture ids continuous across the switch.
extension Room {
    /// A higher layer is taken only when its rate fits this many times over: an estimate hovering at a
    /// layer's rate must not switch layers (and ask for keyframes) back and forth.
    static let layerUpMargin = 1.15
    /// A layer too dear for the share is left at once (measured with Chromium under a 500 kbit/s cap: waiting
    /// even 1 s for a GCC estimate that wobbles around the layer let the estimate collapse, and ABWD took the
    /// video away); a higher one is taken no sooner than `layerUpHold` after the last change, which is what
    /// keeps a marginal fit from flapping. ABWD's own video count waits 3 s up for the same reason.
    static let layerUpHold: MonoTime.Interval = .seconds(3)
    /// A layer's rate counts once it has arrived this long: the meter's window, so a layer that just started
    /// or came back is not measured cheap on a half-empty window.
    static let layerRateWindow: MonoTime.Interval = .seconds(2)

    /// Whether any layer of the participant's camera (or `source`) is arriving.
    func videoLive(_ p: Participant, _ source: VideoSource = .camera) -> Bool {
        p.tracks(source).contains { tracks[$0]?.live == true }
    }

    /// The track of `participant`'s `kind` (and video `source`) to send subscriber `s` in its video slot
    /// `slot` (nil: no subscriber context, the top layer). A slot that already shows a live layer of a
    /// simulcast source keeps it: `reviewLayers` alone moves it, with its hold times.
    func track(of participant: Int, _ kind: MediaKind, _ source: VideoSource = .camera, for s: SubscriberState?, slot: Int? = nil,
               current: Int?, render: RenderLimit? = nil, now: MonoTime) -> Int? {
        guard let p = participants[participant] else { return nil }
        if kind == .audio { return p.audioTrack }
        let all = p.tracks(source)
        guard all.count > 1 else { return all.first }
        if let current, all.contains(current), tracks[current]?.live == true { return current }
        let live = renderLimited(layerRanking(p, source, now: now), render).layers
        guard live.count > 1 else { return live.first ?? (current.flatMap { all.contains($0) ? $0 : nil } ?? all.last) }
        guard let s, let slot, let plan = layerPlan(s, placing: (slot, participant, current), now: now), let step = plan[slot] else {
            return live.last  // before the subscriber has an estimate
        }
        return step.track
    }

    /// `q`'s live layers, lowest first (by key frame size once every one has sent one, else in the offer's
    /// order), with their trusted rates; cached for 250 ms.
    func layerRanking(_ q: Participant, _ source: VideoSource, now: MonoTime) -> (layers: [Int], rates: [Double?]) {
        if let r = q.layerRankings[source], now - r.at < .milliseconds(250) { return (r.layers, r.rates) }
        var layers = q.tracks(source).filter { tracks[$0]?.live == true }
        let sizes = layers.map { tracks[$0]?.frameSize.map { $0.width * $0.height } }
        if sizes.allSatisfy({ $0 != nil }) {
            layers = zip(layers, sizes).sorted { $0.1! < $1.1! }.map(\.0)
        }
        let rates: [Double?] = layers.map { t in
            guard let track = tracks[t], let since = track.liveSince, now - since >= Self.layerRateWindow else { return nil }
            return track.rate.bitsPerSecond(now: now)
        }
        q.layerRankings[source] = LayerRanking(at: now, layers: layers, rates: rates)
        return (layers, rates)
    }

    /// A ranking cut at the smallest layer whose key frames cover the render limit: a larger one would be
    /// scaled down by the subscriber anyway.
    func renderLimited(_ r: (layers: [Int], rates: [Double?]), _ render: RenderLimit?) -> (layers: [Int], rates: [Double?]) {
        guard let render, let cover = r.layers.firstIndex(where: { tracks[$0]?.frameSize.map(render.isCovered) ?? false }) else { return r }
        return (Array(r.layers[...cover]), Array(r.rates[...cover]))
    }

    /// What subscriber `s` can spend on one video: its estimate less its audio, over the videos it is shown
    /// (slots with a source, at most its number_of_videos); nil before it has an estimate.
    func videoShare(_ s: SubscriberState) -> Double? {
        guard let estimate = s.estimator.estimate else { return nil }
        let audio = Double(configuration.audioReserveKbps * 1000 * s.audioSlots.count { $0.current != nil })
        let shown = max(1, min(s.videoCount.numberOfVideos, s.videoSlots.count { $0.assigned != nil && $0.undecodable == nil }))
        return max(0, Double(estimate) - audio) / Double(shown)
    }

    /// The steps a source can be sent at, cheapest first: each live spatial layer (as ranked, cut at the render
    /// limit), and for a simulcast source each layer up to each of its VP8 temporal layers before the whole
    /// layer. A temporal step costs the layer's trusted rate times the share its temporal layers carry (the
    /// per-layer rates `noteLayer` measures). Above the lowest spatial layer a step must keep
    /// `minTemporalFrameRate` (a sharp picture at 7 frames a second is worse than a smaller one at 20); the
    /// lowest layer's are all kept: below it there is only a smaller number of videos. A single stream's
    /// temporal and spatial layers are capped by `reviewLayerCaps` instead.
    func ladder(_ q: Participant, _ source: VideoSource, render: RenderLimit?, now: MonoTime) -> [LadderStep] {
        let (layers, rates) = renderLimited(layerRanking(q, source, now: now), render)
        let simulcast = q.tracks(source).count > 1
        var steps: [LadderStep] = []
        for (i, (t, rate)) in zip(layers, rates).enumerated() {
            if simulcast, let track = tracks[t], track.topLayers.spatial == 0, track.topLayers.temporal > 0, let rate {
                let top = Int(track.topLayers.temporal)
                let whole = track.layersBitsPerSecond(spatial: 0, temporal: top, now: now)
                for tid in 0..<top where whole > 0 {
                    guard i == 0 || track.pictureRate(temporal: tid, now: now) >= configuration.minTemporalFrameRate else { continue }
                    let share = track.layersBitsPerSecond(spatial: 0, temporal: tid, now: now) / whole
                    steps.append(LadderStep(track: t, temporal: UInt8(tid), rate: rate * share))
                }
            }
            steps.append(LadderStep(track: t, temporal: nil, rate: rate))
        }
        return steps
    }

    /// What each of subscriber `s`'s video slots should carry (slot index -> ladder step), for the slots
    /// showing a source with live layers: `LayerAllocator` shares its estimate, less its audio, among them,
    /// screen shares first, then cameras in the order of its talker list (the dominant speaker's slot gets
    /// the best layer that fits). `placing` counts a source about to take a slot. Nil before an estimate.
    func layerPlan(_ s: SubscriberState, placing: (slot: Int, who: Int, shown: Int?)? = nil, now: MonoTime) -> [Int: LadderStep]? {
        guard let estimate = s.estimator.estimate else { return nil }
        let audio = Double(configuration.audioReserveKbps * 1000 * s.audioSlots.count { $0.current != nil })
        var entries: [(slot: Int, priority: Int, steps: [LadderStep], source: LayerAllocator.Source)] = []
        for (i, slot) in s.videoSlots.enumerated() {
            let placed = placing?.slot == i ? placing : nil
            // A slot sent nothing (the subscriber cannot decode its source's codec) costs nothing.
            guard let who = placed?.who ?? slot.assigned, let q = participants[who], placed != nil || slot.undecodable == nil else { continue }
            let steps = ladder(q, slot.description.source, render: slot.renderLimit, now: now)
            guard !steps.isEmpty else { continue }
            let shownTrack = placed != nil ? placed?.shown : slot.pending ?? slot.current
            let temporal = placed != nil ? nil : slot.layers.wantedTemporal
            let shown = steps.firstIndex { $0.track == shownTrack && $0.temporal == temporal } ?? steps.lastIndex { $0.track == shownTrack }
            let priority = slot.description.source == .screen ? -1 : s.talkers.firstIndex { $0.participant == who } ?? Int.max
            entries.append((i, priority, steps, LayerAllocator.Source(rates: steps.map(\.rate), shown: shown)))
        }
        entries.sort { ($0.priority, $0.slot) < ($1.priority, $1.slot) }
        let choice = LayerAllocator.allocate(entries.map(\.source), budget: Double(estimate) - audio, upMargin: Self.layerUpMargin)
        var plan: [Int: LadderStep] = [:]
        for (e, c) in zip(entries, choice) { plan[e.slot] = e.steps[c] }
        return plan
    }

    /// The codec of the source a video slot carries, waits for or cannot decode, and whether the subscriber can
    /// decode it; nil for a slot with no source.
    func codecShown(_ slot: Slot) -> RoomEvent.SlotCodec? {
        if let t = slot.pending ?? slot.current, let track = tracks[t] { return .init(codec: track.description.codec, decodable: true) }
        if let t = slot.undecodable, let track = tracks[t] { return .init(codec: track.description.codec, decodable: false) }
        return nil
    }

    /// The simulcast layer a video slot carries or waits for, nil when its source is not simulcast.
    func layerShown(_ slot: Slot) -> Int? {
        guard let t = slot.pending ?? slot.current, let track = tracks[t], let owner = participants[track.owner],
              owner.tracks(track.description.source).count > 1 else { return nil }
        return track.description.simulcast?.index
    }

    /// After a subscriber's estimate or render limits changed: each video slot showing a source of several
    /// steps (simulcast layers, temporal layers) moves to the step `layerPlan` gives it, if another - a new
    /// spatial layer at its next keyframe, a temporal one at the next frame that allows it: down at once, up no
    /// sooner than `layerUpHold` after the last change. Without an estimate: the top step its render limit
    /// allows.
    func reviewLayers(_ p: Participant, now: MonoTime, into out: DatagramBatch) {
        guard let s = p.subscriber, s.videoSlots.contains(where: showsSeveralSteps) else { return }
        let plan = layerPlan(s, now: now)
        var moved = false
        for i in s.videoSlots.indices {
            let slot = s.videoSlots[i]
            guard let who = slot.assigned, let q = participants[who] else { continue }
            let steps = ladder(q, slot.description.source, render: slot.renderLimit, now: now)
            guard steps.count > 1, let want = plan.map({ $0[i] }) ?? steps.last else { continue }
            let shown = slot.pending ?? slot.current
            guard want.track != shown || want.temporal != slot.layers.wantedTemporal,
                  let wantAt = steps.firstIndex(where: { $0.track == want.track && $0.temporal == want.temporal }) else { continue }
            if let shownAt = steps.firstIndex(where: { $0.track == shown && $0.temporal == slot.layers.wantedTemporal }), wantAt > shownAt,
               now - slot.layerChangedAt < Self.layerUpHold { continue }
            if want.track != shown {
                place(who, in: SlotRef(subscriber: p.index, kind: .video, index: i), subscriber: s, layer: want.track, now: now, into: out)
            }
            s.videoSlots[i].layers.wantedTemporal = want.temporal
            s.videoSlots[i].layerChangedAt = now
            moved = true
        }
        if moved { refreshSubscriber(p, now: now, into: out) }  // the slot map reports the new layer
    }

    /// Whether the slot's source is simulcast (several layers, each perhaps of several temporal ones): the
    /// only slots `reviewLayers` plans for (a single layered stream is `reviewLayerCaps`'). Checked first, without allocating: it runs on every feedback.
    func showsSeveralSteps(_ slot: Slot) -> Bool {
        guard let who = slot.assigned, let q = participants[who] else { return false }
        let all = q.tracks(slot.description.source)
        return all.count > 1
    }

    /// When a subscriber shows simulcast sources below the layers its render limits allow, what showing each
    /// one layer higher would take: its probe target, so an estimate held down by the layers it is sent can
    /// climb (an application-limited GCC never rises past 1.5 x what it receives); nil when none could go up.
    func bandwidthForBetterLayers(_ s: SubscriberState, now: MonoTime) -> Double? {
        var total = Double(configuration.audioReserveKbps * 1000 * s.audioSlots.count { $0.current != nil })
        var better = false
        for slot in s.videoSlots {
            guard let who = slot.assigned, let q = participants[who], let t = slot.pending ?? slot.current else { continue }
            let (layers, rates) = renderLimited(layerRanking(q, slot.description.source, now: now), slot.renderLimit)
            guard let at = layers.firstIndex(of: t) else { continue }
            // The next layer up, not the top: a short cluster at the top layer's rate passes a shaper's burst
            // and reads as capacity that is not there (measured with Chromium under a 500 kbit/s tbf).
            if at + 1 < layers.count, let next = rates[at + 1] {
                total += next * Self.layerUpMargin
                better = true
            } else {
                total += rates[at] ?? tracks[t]?.rate.bitsPerSecond(now: now) ?? 0
            }
        }
        return better ? total : nil
    }
}

/// One way to send a source: a spatial layer's track, up to temporal layer `temporal` (nil: all of it), and
/// what that costs (nil: not measured yet).
struct LadderStep: Equatable {
    var track: Int
    var temporal: UInt8?
    var rate: Double?
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
        // The subscriber asked: no hold times for this move.
        s.videoSlots[i].layerChangedAt = .zero
        reviewLayers(p, now: now, into: out)
    }
}
