/// Simulcast (RFC 8853): a publisher's video may arrive as up to three spatial layers, each a track of its
/// own (own SSRC, keyframes, NACK history). Each subscriber's slot shows one layer of it, chosen from the
/// subscriber's downlink estimate (`layerPlan`: the most relevant sources get the best layers that fit).
/// A new choice is placed like a new speaker (`place`): the old layer keeps flowing until the new one's
/// keyframe, asked for with a PLI on that layer's SSRC, and the slot's rewriter keeps sequence numbers,
/// timestamps and picture ids continuous across the switch.
extension Subscriber {
    /// A higher layer is taken only when its rate fits this many times over: an estimate hovering at a
    /// layer's rate must not switch layers (and ask for keyframes) back and forth.
    static let layerUpMargin = 1.15
    // A layer too dear for the share is left at once (measured with Chromium under a 500 kbit/s cap: waiting
    // even 1 s for a GCC estimate that wobbles around the layer let the estimate collapse, and ABWD took the
    // video away); a higher one is taken when the slot's `LayerClimb` allows (3 s after the last change, longer
    // after moves up that did not hold, at once on a decisive rise), which is what keeps a marginal fit from
    // flapping. ABWD's own video count waits 3 s up for the same reason.

    /// What the subscriber can spend on one video: its estimate less its audio, over the videos it is shown
    /// (slots with a source, at most its number_of_videos); nil before it has an estimate.
    func videoShare(audioReserveKbps: Int) -> Double? {
        guard let estimate = estimator.estimate else { return nil }
        let audio = Double(audioReserveKbps * 1000 * audioSlotsInUse)
        let shown = max(1, min(videoCount.numberOfVideos, videoSlots.count { $0.assignee != nil && $0.undecodable == nil }))
        return max(0, Double(estimate) - audio) / Double(shown)
    }

    /// What each video slot should carry (slot position -> ladder step), for the slots showing a source with
    /// live layers: `LayerAllocator` shares the estimate, less audio, among them, screen shares first, then
    /// cameras in the order of the talker list (the dominant speaker's slot gets the best layer that fits).
    /// `placing` counts a source about to take a slot. Nil before an estimate.
    /// `budget`: an estimate to plan for instead of the current one (the floor an up move must fit).
    func layerPlan(placing: (slot: Int, who: Participant, shown: PublishedTrack?)? = nil, budget: Double? = nil, configuration c: RoomConfiguration,
                   now: MonoTime) -> [Int: LadderStep]? {
        guard let estimate = budget ?? estimator.estimate.map({ Double($0) }) else { return nil }
        let audio = Double(c.audioReserveKbps * 1000 * audioSlotsInUse)
        var entries: [(slot: Int, priority: Int, steps: [LadderStep], source: LayerAllocator.Source)] = []
        for slot in videoSlots {
            let i = slot.position
            let placed = placing?.slot == i ? placing : nil
            // A slot sent nothing (the subscriber cannot decode its source's codec) costs nothing.
            guard let q = placed?.who ?? slot.assignee, let publisher = q.publisher, placed != nil || slot.undecodable == nil else { continue }
            let steps = publisher.ladder(slot.description.source, render: slot.renderLimit, minTemporalFrameRate: c.minTemporalFrameRate, now: now)
            guard !steps.isEmpty else { continue }
            let shownTrack = placed != nil ? placed?.shown : slot.pending ?? slot.current
            let temporal = placed != nil ? nil : slot.layers.wantedTemporal
            let shown = steps.firstIndex { $0.track === shownTrack && $0.temporal == temporal } ?? steps.lastIndex { $0.track === shownTrack }
            let priority = slot.description.source == .screen ? -1 : talkers.firstIndex { $0.participant == q.index } ?? Int.max
            entries.append((i, priority, steps, LayerAllocator.Source(rates: steps.map(\.rate), shown: shown)))
        }
        entries.sort { ($0.priority, $0.slot) < ($1.priority, $1.slot) }
        let choice = LayerAllocator.allocate(entries.map(\.source), budget: estimate - audio, upMargin: Self.layerUpMargin)
        var plan: [Int: LadderStep] = [:]
        for (e, c) in zip(entries, choice) { plan[e.slot] = e.steps[c] }
        return plan
    }

    /// After the estimate or render limits changed: each video slot showing a source of several steps
    /// (simulcast layers, temporal layers) moves to the step `layerPlan` gives it, if another - a new spatial
    /// layer at its next keyframe, a temporal one at the next frame that allows it: down at once, up when the
    /// slot's `LayerClimb` allows. Without an estimate: the top step its render limit allows.
    /// Returns whether a slot moved (its slot map reports the new layer).
    func reviewLayers(configuration c: RoomConfiguration, now: MonoTime, into out: DatagramBatch) -> Bool {
        guard !passesEveryLayer, videoSlots.contains(where: \.showsSeveralSteps) else { return false }
        let plan = layerPlan(configuration: c, now: now)
        let estimate = estimator.estimate.map { Double($0) }
        // What the lowest estimate of the last `LayerClimb.hold` fits: the most a slot climbs to (planned once,
        // when a slot first needs it).
        let floor = estimateFloor.floor(over: LayerClimb.hold, now: now) ?? estimate
        var floorPlan: [Int: LadderStep]??
        var moved = false
        for slot in videoSlots {
            guard let q = slot.assignee, let publisher = q.publisher else { continue }
            let steps = publisher.ladder(slot.description.source, render: slot.renderLimit, minTemporalFrameRate: c.minTemporalFrameRate, now: now)
            guard steps.count > 1, var want = plan.map({ $0[slot.position] }) ?? steps.last else { continue }
            let shown = slot.pending ?? slot.current
            guard want.track !== shown || want.temporal != slot.layers.wantedTemporal,
                  let wantAt = steps.firstIndex(where: { $0.track === want.track && $0.temporal == want.temporal }) else { continue }
            let shownAt = steps.firstIndex { $0.track === shown && $0.temporal == slot.layers.wantedTemporal }
            let up = shownAt.map { wantAt > $0 } ?? false
            // Up: at once on a decisive rise; otherwise after the slot's wait, and only as far as the lowest
            // estimate of the last `LayerClimb.hold` fits (a layer that fits the sawtooth's tops is left at its
            // next cut). Over the whole wait after a failed try (6 s), the floor kept a slot whose link was freed
            // at the lowest layer past 10 s in one of five Chromium runs. Without an estimate, after the wait, to
            // the top step its render limit allows.
            if up, let shownAt {
                if estimate == nil {
                    guard slot.climb.waited(now: now) else { continue }
                } else if !slot.climb.isDecisive(estimate, floor: floor) {
                    guard slot.climb.waited(now: now) else { continue }
                    if floorPlan == nil { floorPlan = .some(floor.flatMap { layerPlan(budget: $0, configuration: c, now: now) }) }
                    guard
                          let sustained = floorPlan??[slot.position],
                          let sustainedAt = steps.firstIndex(where: { $0.track === sustained.track && $0.temporal == sustained.temporal }),
                          sustainedAt > shownAt else { continue }
                    if sustainedAt < wantAt { want = steps[sustainedAt] }
                }
            }
            if want.track !== shown { place(q, in: slot, layer: want.track, configuration: c, now: now, into: out) }
            slot.layers.wantedTemporal = want.temporal
            // A layer the slot showed that is gone is no evidence about the link.
            if shownAt == nil {
                slot.climb.moved(now: now)
            } else if up {
                slot.climb.movedUp(estimate: estimate, now: now)
            } else {
                slot.climb.movedDown(estimate: estimate, now: now)
            }
            moved = true
        }
        return moved
    }

    /// When the subscriber shows simulcast sources below the layers its render limits allow, what showing each
    /// one layer higher would take: its probe target, so an estimate held down by the layers it is sent can
    /// climb (an application-limited GCC never rises past 1.5 x what it receives); nil when none could go up.
    func bandwidthForBetterLayers(audioReserveKbps: Int, now: MonoTime) -> Double? {
        var total = Double(audioReserveKbps * 1000 * audioSlotsInUse)
        var better = false
        for slot in videoSlots {
            guard let publisher = slot.assignee?.publisher, let t = slot.pending ?? slot.current else { continue }
            let (layers, rates) = renderLimited(publisher.layerRanking(slot.description.source, now: now), slot.renderLimit)
            guard let at = layers.firstIndex(where: { $0 === t }) else { continue }
            // The next layer up, not the top: a short cluster at the top layer's rate passes a shaper's burst
            // and reads as capacity that is not there (measured with Chromium under a 500 kbit/s tbf).
            if at + 1 < layers.count, let next = rates[at + 1] {
                total += next * Self.layerUpMargin
                better = true
            } else {
                total += rates[at] ?? t.rate.bitsPerSecond(now: now) ?? 0
            }
        }
        return better ? total : nil
    }

    // MARK: Layer caps of single streams

    /// Temporal and spatial layer caps per video slot (`LayerFilter`): a single-stream source that sends layers
    /// (VP8 temporal layers, VP9 temporal and spatial ones) is sent with fewer of them to a subscriber whose
    /// share per video (`videoShare`) they do not all fit, rather than not at all; ABWD counts it at its base
    /// layer (`cheapestBitsPerSecond`), so a falling estimate takes frame rate and size away before it takes
    /// videos away, and gives them back in the reverse order.
    ///
    /// Simulcast sources are left to `reviewLayers`, which sends a layer whole: Chromium's VP8 simulcast layers
    /// each carry three temporal layers, and with them capped too, two shaped-link runs (scripts/shaped-test.sh,
    /// on a loaded machine) had the capped subscriber freeze 2-4 times after its fall and one took 11.5 s to get
    /// the top layer back (the caps' changes restart the hold its layer switches wait on); two runs without had
    /// no such freeze and came back within 10 s.
    ///
    /// The caps are the first (spatial, temporal) pair whose measured rate - the sum of the layers at or below
    /// both - fits the share, in this order: every spatial layer from the top down with its temporal layers
    /// from the top down to 1, then every spatial layer with its base temporal layer alone. The frame rate is
    /// halved (3 temporal layers: TL2 gone) before the size goes down, but the size goes down before the frame
    /// rate falls to a quarter. Going up needs `layerUpMargin` to spare and the slot's `LayerClimb` to allow it,
    /// as simulcast layers do; going down is at once.
    func reviewLayerCaps(audioReserveKbps: Int, now: MonoTime, into out: DatagramBatch) {
        guard !passesEveryLayer else { return }
        let share = videoShare(audioReserveKbps: audioReserveKbps)
        for slot in videoSlots {
            // While another source waits for its key frame the caps are not chosen: they would be the old one's.
            guard slot.pending == nil, let track = slot.current else { continue }
            let before = (slot.layers.wantedSpatial, slot.layers.wantedTemporal)
            guard let share, track.layered, track.publisher?.tracks(track.description.source).count == 1,
                  let caps = Self.layerCaps(track, share: share, current: before, now: now) else { continue }
            guard caps != before else { continue }
            let up = (caps.0 ?? .max) > (before.0 ?? .max) || (caps.1 ?? .max) > (before.1 ?? .max)
            let estimate = estimator.estimate.map { Double($0) }
            if up, !slot.climb.mayClimb(estimate: estimate, now: now) { continue }
            slot.layers.wantedSpatial = caps.0
            slot.layers.wantedTemporal = caps.1
            if up { slot.climb.movedUp(estimate: estimate, now: now) } else { slot.climb.movedDown(estimate: estimate, now: now) }
            // An upper spatial layer can come back only at a key frame, asked for until it comes.
            if slot.layers.awaitsKeyframe(top: track.topLayers.spatial) {
                track.awaitKeyframe(now: now, effects: effects)
                track.requestKeyframe(now: now, into: out, effects: effects)
            }
        }
    }

    /// The caps that fit `share` (nil, nil: every layer), or nil while the track's layer rates are not yet
    /// trusted (`Publisher.layerRateWindow`).
    static func layerCaps(_ track: PublishedTrack, share: Double, current: (UInt8?, UInt8?), now: MonoTime) -> (UInt8?, UInt8?)? {
        guard let since = track.liveSince, now - since >= Publisher.layerRateWindow else { return nil }
        let top = (spatial: Int(track.topLayers.spatial), temporal: Int(track.topLayers.temporal))
        func fits(_ sid: Int, _ tid: Int) -> Bool {
            let rate = track.layersBitsPerSecond(spatial: sid, temporal: tid, now: now)
            let above = sid > Int(current.0 ?? .max) || tid > Int(current.1 ?? .max)
            return (above ? rate * layerUpMargin : rate) <= share
        }
        func caps(_ sid: Int, _ tid: Int) -> (UInt8?, UInt8?) {
            sid == top.spatial && tid == top.temporal ? (nil, nil) : (UInt8(sid), UInt8(tid))
        }
        for sid in stride(from: top.spatial, through: 0, by: -1) {
            for tid in stride(from: top.temporal, through: min(1, top.temporal), by: -1) where fits(sid, tid) { return caps(sid, tid) }
        }
        for sid in stride(from: top.spatial, through: 0, by: -1) where fits(sid, 0) { return caps(sid, 0) }
        return (0, 0)
    }
}
