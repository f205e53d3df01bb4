/// Putting a participant's media in one of the subscriber's slots, and taking it out: the work a move of the
/// slot planner implies (which track or layer, the key frame a video slot waits for, the format, the track's
/// consumer list).
extension Subscriber {
    /// Puts `who` in the slot: its audio track, its video track or the simulcast layer that fits (`layer` when
    /// the caller chose one).
    func place(_ who: Participant, in slot: SlotSender, layer: PublishedTrack? = nil, configuration c: RoomConfiguration, now: MonoTime,
               into out: DatagramBatch) {
        let shown = slot.assignee === who ? slot.pending ?? slot.current : nil
        guard let track = layer ?? chooseTrack(of: who, for: slot, current: shown, configuration: c, now: now) else { return }
        if slot.kind == .video, slot.description.format(for: track.description) == nil {
            return placeUndecodable(who, track: track, in: slot)
        }
        if slot.assignee !== who {
            // Another participant: every layer of it until its caps are chosen, and no up-hold. The source still
            // flowing keeps what its filter passes until the new one's key frame (`LayerFilter.reset`).
            slot.layers.wantedSpatial = nil
            slot.layers.wantedTemporal = nil
            slot.climb.reset()
        }
        slot.assignee = who
        slot.undecodable = nil
        let before = (current: slot.current, pending: slot.pending)
        if slot.kind == .audio {
            if let old = before.current, old !== track { slot.noteLeaving(old) }
            slot.current = track
            slot.rewriter.switchTo(track.index)
            slot.silenceFramesLeft = 0
            if let old = before.current, old !== track { old.detach(slot) }
        } else {
            // The old source keeps flowing until the new one's keyframe; back to the source still flowing, a
            // source waited on before must not take over.
            slot.pending = slot.current === track ? nil : track
            if let old = before.pending, old !== track, old !== before.current { old.detach(slot) }
        }
        track.attach(slot)
        // A talker taken over while it speaks is heard from its first words - by a participant: a live stream's
        // encoder or a relay's peer node cannot time-compress a burst, and each would run further ahead.
        if slot.kind == .audio, before.current !== track, participant.index >= 0 {
            slot.replayOnset(of: track, configuration: c, now: now, into: out)
        }
        // A move between layers of the same source starts the up hold; a new source may climb as soon as its
        // layers are measured.
        if slot.kind == .video, let shown, track !== shown { slot.climb.moved(now: now) }
        if slot.kind == .video, slot.pending === track {
            track.awaitKeyframe(now: now, effects: effects)
            track.requestKeyframe(now: now, into: out, effects: effects)
        }
    }

    /// The rules put `who` in a video slot whose formats do not take its codec (or H.264 profile): the slot
    /// stops (what it showed must not go on under a slot map that names someone else), nothing of the source
    /// is sent, and the slot map reports the slot as not decodable. The talker keeps the slot rather than
    /// giving it to someone the rules ranked lower: the map still says who is talking, and the application
    /// can show a name, renegotiate with another codec or ask the publisher for one.
    private func placeUndecodable(_ who: Participant, track: PublishedTrack, in slot: SlotSender) {
        for t in [slot.current, slot.pending].compactMap({ $0 }) { t.detach(slot) }
        slot.current = nil
        slot.pending = nil
        slot.rewriter.switchTo(nil)
        slot.assignee = who
        slot.undecodable = track
    }

    /// The track of `who` to send in `slot`: its audio, or the camera or screen layer that fits the
    /// subscriber (a slot that already shows a live layer of a simulcast source keeps it: `reviewLayers` alone
    /// moves it, with its hold times).
    func chooseTrack(of who: Participant, for slot: SlotSender, current: PublishedTrack?, configuration c: RoomConfiguration,
                     now: MonoTime) -> PublishedTrack? {
        guard let publisher = who.publisher else { return nil }
        if slot.kind == .audio { return publisher.audio }
        let all = publisher.tracks(slot.description.source)
        guard all.count > 1 else { return all.first }
        if let current, all.contains(where: { $0 === current }), current.live { return current }
        let live = renderLimited(publisher.layerRanking(slot.description.source, now: now), slot.renderLimit).layers
        guard live.count > 1 else {
            return live.first ?? (current.flatMap { c in all.contains { $0 === c } ? c : nil } ?? all.last)
        }
        guard let plan = layerPlan(placing: (slot.position, who, current), configuration: c, now: now), let step = plan[slot.position] else {
            return live.last  // before the subscriber has an estimate
        }
        return step.track
    }

    /// The slot's source may no longer be sent (muted, floor taken): audio slots get a few silence frames,
    /// then nothing; video slots stop, whatever else fed them (a source a slot was leaving for this one's key
    /// frame must not keep flowing under a slot map that names nobody).
    static func stop(_ slot: SlotSender, showing track: PublishedTrack, silenceFrames: Int, now: MonoTime) {
        if slot.kind == .audio {
            guard slot.current === track else { return }
            slot.current = nil
            slot.assignee = nil
            slot.startSilence(frames: silenceFrames, now: now)
        } else {
            guard slot.current === track || slot.pending === track else { return }
            for other in [slot.current, slot.pending].compactMap({ $0 }) where other !== track { other.detach(slot) }
            slot.current = nil
            slot.pending = nil
            slot.assignee = nil
            slot.rewriter.switchTo(nil)
        }
    }
}
