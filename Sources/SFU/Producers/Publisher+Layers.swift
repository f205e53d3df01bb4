/// A publisher's video as layers: which of a source's simulcast layers arrive, ranked by size, what each
/// costs, and the steps a subscriber's slot can be sent it at (`Subscriber.layerPlan` chooses among them).
extension Publisher {
    /// A layer's rate counts once it has arrived this long: the meter's window, so a layer that just started
    /// or came back is not measured cheap on a half-empty window.
    static let layerRateWindow: MonoTime.Interval = .seconds(2)

    /// Whether any layer of its camera (or `source`) is arriving.
    func videoLive(_ source: VideoSource = .camera) -> Bool { tracks(source).contains { $0.live } }

    /// The source's live layers, lowest first (by key frame size once every one has sent one, else in the
    /// offer's order), with their trusted rates (sustained: key frame bursts aside); cached for 250 ms.
    func layerRanking(_ source: VideoSource, now: MonoTime) -> (layers: [PublishedTrack], rates: [Double?]) {
        if let r = layerRankings[source], now - r.at < .milliseconds(250) { return (r.layers, r.rates) }
        var layers = tracks(source).filter(\.live)
        let sizes = layers.map { $0.frameSize.map { $0.width * $0.height } }
        if sizes.allSatisfy({ $0 != nil }) {
            layers = zip(layers, sizes).sorted { $0.1! < $1.1! }.map(\.0)
        }
        let rates: [Double?] = layers.map { track in
            guard let since = track.liveSince, now - since >= Self.layerRateWindow else { return nil }
            return track.rate.sustainedBitsPerSecond(now: now)
        }
        layerRankings[source] = LayerRanking(at: now, layers: layers, rates: rates)
        return (layers, rates)
    }

    /// The steps a source can be sent at, cheapest first: each live spatial layer (as ranked, cut at the render
    /// limit), and for a simulcast source each layer up to each of its VP8 temporal layers before the whole
    /// layer. A temporal step costs the layer's trusted rate times the share its temporal layers carry (the
    /// per-layer rates `noteLayer` measures). Above the lowest spatial layer a step must keep
    /// `minTemporalFrameRate` (a sharp picture at 7 frames a second is worse than a smaller one at 20); the
    /// lowest layer's are all kept: below it there is only a smaller number of videos. A single stream's
    /// temporal and spatial layers are capped by `Subscriber.reviewLayerCaps` instead.
    func ladder(_ source: VideoSource, render: RenderLimit?, minTemporalFrameRate: Double, now: MonoTime) -> [LadderStep] {
        let (layers, rates) = renderLimited(layerRanking(source, now: now), render)
        let simulcast = tracks(source).count > 1
        var steps: [LadderStep] = []
        for (i, (track, rate)) in zip(layers, rates).enumerated() {
            if simulcast, track.topLayers.spatial == 0, track.topLayers.temporal > 0, let rate {
                let top = Int(track.topLayers.temporal)
                let whole = track.layersBitsPerSecond(spatial: 0, temporal: top, now: now)
                for tid in 0..<top where whole > 0 {
                    guard i == 0 || track.pictureRate(temporal: tid, now: now) >= minTemporalFrameRate else { continue }
                    let share = track.layersBitsPerSecond(spatial: 0, temporal: tid, now: now) / whole
                    steps.append(LadderStep(track: track, temporal: UInt8(tid), rate: rate * share))
                }
            }
            steps.append(LadderStep(track: track, temporal: nil, rate: rate))
        }
        return steps
    }

    /// A video track starts or stops arriving (its first packet, or `videoStaleAfter` without one): when its
    /// rate can be trusted from, and for a screen share since when its participant has been sharing (the
    /// oldest share keeps a screen slot).
    func setLive(_ t: PublishedTrack, _ live: Bool, now: MonoTime) {
        t.live = live
        t.liveSince = live ? now : nil
        guard t.description.source == .screen else { return }
        let sharing = videoLive(.screen)
        if !sharing { screenSharedSince = nil } else if screenSharedSince == nil { screenSharedSince = now }
    }

    /// Video tracks whose packets stopped for `staleAfter` stop counting as live (and start again with their
    /// next packet); returns whether any changed. Asks to be woken when the next one would go stale.
    func updateLiveness(staleAfter: MonoTime.Interval, now: MonoTime) -> Bool {
        var changed = false
        for t in videoTracks {
            let last = t.reception.lastPacketAt
            let live = last.map { now - $0 < staleAfter } ?? false
            if live != t.live {
                setLive(t, live, now: now)
                changed = true
            }
            if live, let last { effects.wake(at: last + staleAfter) }
        }
        return changed
    }
}
