/// Temporal and spatial layer caps per video slot (`LayerFilter`): a single-stream source that sends layers
/// (VP8 temporal layers, VP9 temporal and spatial ones) is sent with fewer of them to a subscriber whose share
/// per video (`videoShare`) they do not all fit, rather than not at all; ABWD counts it at its base layer
/// (`cheapestBitsPerSecond`), so a falling estimate takes frame rate and size away before it takes videos
/// away, and gives them back in the reverse order.
///
/// Simulcast sources are left to `reviewLayers`, which sends a layer whole: Chromium's VP8 simulcast layers
/// each carry three temporal layers, and with them capped too, two shaped-link runs (scripts/shaped-test.sh,
/// on a loaded machine) had the capped subscriber freeze 2-4 times after its fall and one took 11.5 s to get
/// the top layer back (the caps' changes restart the hold its layer switches wait on); two runs without had
/// no such freeze and came back within 10 s.
///
/// The caps are the first (spatial, temporal) pair whose measured rate - the sum of the layers at or below
/// both - fits the share, in this order: every spatial layer from the top down with its temporal layers from
/// the top down to 1, then every spatial layer with its base temporal layer alone. The frame rate is halved
/// (3 temporal layers: TL2 gone) before the size goes down, but the size goes down before the frame rate
/// falls to a quarter. Going up needs `layerUpMargin` to spare and `layerUpHold` since the last change, as
/// simulcast layers do; going down is at once.
extension Room {
    /// Re-reads each video slot's caps after the subscriber's estimate changed.
    func reviewLayerCaps(_ p: Participant, now: MonoTime, into out: DatagramBatch) {
        guard let s = p.subscriber else { return }
        let share = videoShare(s)
        for i in s.videoSlots.indices {
            // While another source waits for its key frame the caps are not chosen: they would be the old one's.
            guard s.videoSlots[i].pending == nil, let t = s.videoSlots[i].current, let track = tracks[t] else { continue }
            let before = (s.videoSlots[i].layers.wantedSpatial, s.videoSlots[i].layers.wantedTemporal)
            guard let share, track.layered, participants[track.owner]?.tracks(track.description.source).count == 1,
                  let caps = layerCaps(track, share: share, current: before, now: now) else { continue }
            guard caps != before else { continue }
            let up = (caps.0 ?? .max) > (before.0 ?? .max) || (caps.1 ?? .max) > (before.1 ?? .max)
            if up, now - s.videoSlots[i].layerChangedAt < Self.layerUpHold { continue }
            s.videoSlots[i].layers.wantedSpatial = caps.0
            s.videoSlots[i].layers.wantedTemporal = caps.1
            s.videoSlots[i].layerChangedAt = now
            // An upper spatial layer can come back only at a key frame, asked for until it comes.
            if s.videoSlots[i].layers.awaitsKeyframe(top: track.topLayers.spatial) {
                track.keyframes.startWaiting(now: now)
                requestKeyframe(track, now: now, into: out)
            }
        }
    }

    /// The caps that fit `share` (nil, nil: every layer), or nil while the track's layer rates are not yet
    /// trusted (`layerRateWindow`).
    func layerCaps(_ track: SourceTrack, share: Double, current: (UInt8?, UInt8?), now: MonoTime) -> (UInt8?, UInt8?)? {
        guard let since = track.liveSince, now - since >= Self.layerRateWindow else { return nil }
        let top = (spatial: Int(track.topLayers.spatial), temporal: Int(track.topLayers.temporal))
        func fits(_ sid: Int, _ tid: Int) -> Bool {
            let rate = track.layersBitsPerSecond(spatial: sid, temporal: tid, now: now)
            let above = sid > Int(current.0 ?? .max) || tid > Int(current.1 ?? .max)
            return (above ? rate * Self.layerUpMargin : rate) <= share
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
