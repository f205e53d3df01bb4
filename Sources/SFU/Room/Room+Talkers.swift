/// Talker lists, candidacy and slot assignment.
extension Room {
    /// Moderators and, in lecture mode, the floor holder may publish; everyone may in group mode.
    func mayPublish(_ p: Participant) -> Bool {
        configuration.mode == .group || p.role == .moderator || floor.holder == p.index
    }

    func audioAllowed(_ p: Participant) -> Bool {
        mayPublish(p) && !p.hardMutedAudio && !(roomAudioMuted && p.role != .moderator)
    }

    func videoAllowed(_ p: Participant) -> Bool { mayPublish(p) && !p.hardMutedVideo }

    /// Why a participant's packet of `kind` may not leave, if it may not.
    func refusal(_ p: Participant, _ kind: MediaKind) -> DropReason? {
        if !mayPublish(p) { return .noFloor }
        if kind == .audio { return audioAllowed(p) ? nil : .hardMuted }
        return p.hardMutedVideo ? .hardMuted : nil
    }

    /// Takes a participant out of talker candidacy at once when its audio may not be forwarded.
    func updateCandidacy(_ p: Participant) {
        guard p.audioTrack != nil else { return }
        let wasDominant = detector.dominant == p.index
        detector.setPaused(p.index, !audioAllowed(p))
        if wasDominant, detector.dominant == nil { events.append(.dominantSpeaker(participant: nil)) }
    }

    var pinnedIDs: [String] { pins.compactMap { participants[$0]?.id } }

    func candidates() -> [Int: TalkerCandidate] {
        var c: [Int: TalkerCandidate] = [:]
        for p in participants.values {
            let hasAudio = p.audioTrack != nil && audioAllowed(p)
            let hasVideo = videoLive(p) && videoAllowed(p) && !p.videoMuted
            guard hasAudio || hasVideo else { continue }
            let speaking = hasAudio && detector.isSpeaking(p.index)
            let young = speaking && detector.dominant != p.index && p.speakingSince != nil && !p.holdsFloor
            c[p.index] = TalkerCandidate(speaking: speaking, hasAudio: hasAudio, hasVideo: hasVideo, young: young)
        }
        return c
    }

    /// A decision's outcome. Recency moves on dominance and on sustained speech, not on every start: a
    /// "yeah" must not put its speaker ahead of the one who holds the floor (issue 13).
    func apply(_ d: DominantSpeakerDetector.Decision, now: MonoTime) {
        for change in d.speakingChanges {
            guard let p = participants[change.id] else { continue }
            p.speakingSince = change.speaking ? now : nil
            p.holdsFloor = false
        }
        if let newDominant = d.newDominant {
            moveToFront(newDominant)
            counters.dominantSpeakerChanges += 1
            events.append(.dominantSpeaker(participant: participants[newDominant]?.id))
        }
        for p in participants.values where !p.holdsFloor {
            guard let since = p.speakingSince, now - since >= configuration.sustainedSpeech || detector.dominant == p.index else { continue }
            p.holdsFloor = true
            if detector.dominant != p.index { moveToFront(p.index) }
            listsDirty = true
        }
        if d.newDominant != nil || !d.speakingChanges.isEmpty { listsDirty = true }
    }

    func moveToFront(_ i: Int) {
        recency.removeAll { $0 == i }
        recency.insert(i, at: 0)
    }

    func refreshAllSubscribers(now: MonoTime, into out: DatagramBatch) {
        listsDirty = false
        let prepared = TalkerListBuilder.prepare(recency: recency, candidates: candidates(), pins: pins, dominant: detector.dominant)
        for p in participants.values.sorted(by: { $0.index < $1.index }) { refreshSubscriber(p, prepared, now: now, into: out) }
    }

    func refreshSubscriber(_ p: Participant, now: MonoTime, into out: DatagramBatch) {
        let prepared = TalkerListBuilder.prepare(recency: recency, candidates: candidates(), pins: pins, dominant: detector.dominant)
        refreshSubscriber(p, prepared, now: now, into: out)
    }

    /// Rebuilds one subscriber's list, moves sources between its slots (sticky: a kept source keeps its slot;
    /// a newcomer takes an evicted source's slot), and reports the list and slot map when either changed.
    /// Screen slots show screen shares (`screenSharesWanted`) and take their share of the subscriber's
    /// number_of_videos first; camera slots show the talkers' cameras with what is left.
    func refreshSubscriber(_ p: Participant, _ prepared: TalkerListBuilder.Prepared, now: MonoTime, into out: DatagramBatch) {
        guard let s = p.subscriber else { return }
        let c = prepared.candidates
        let k = configuration.maxActiveTalkers
        let cameraSlots = s.videoSlots.indices.filter { s.videoSlots[$0].description.source == .camera }
        let screenSlots = s.videoSlots.indices.filter { s.videoSlots[$0].description.source == .screen }
        let length = min(k, p.talkerCount ?? k, max(s.audioSlots.count, cameraSlots.count))
        let videos = min(s.videoCount.numberOfVideos, s.videoSlots.count)
        var list = prepared.list(for: p.index, length: length, videos: min(videos, cameraSlots.count))
        let screenWanted = screenSlots.isEmpty ? [] : Array(screenSharesWanted(by: p, talkers: list).prefix(min(videos, screenSlots.count)))
        if !screenWanted.isEmpty {
            list = prepared.list(for: p.index, length: length, videos: min(videos - screenWanted.count, cameraSlots.count))
        }
        let audioWanted = Array(list.filter { c[$0.participant]!.hasAudio }.map(\.participant).prefix(s.audioSlots.count))
        var videoWanted = Array(list.filter(\.video).map(\.participant).prefix(cameraSlots.count))
        // A talker who only just started takes no video slot from someone still showing: the burst may be
        // a "yeah" (no video switch for bursts under 600 ms, media-core.md).
        var showing = cameraSlots.compactMap { s.videoSlots[$0].assigned }.filter { c[$0]?.hasVideo == true && !videoWanted.contains($0) && $0 != p.index }
        for i in videoWanted.indices where c[videoWanted[i]]?.young == true && !showing.isEmpty {
            videoWanted[i] = showing.removeFirst()
        }
        for i in list.indices { list[i].video = videoWanted.contains(list[i].participant) }
        assign(audioWanted, kind: .audio, slots: Array(s.audioSlots.indices), subscriber: p, now: now, into: out)
        assign(videoWanted, kind: .video, slots: cameraSlots, subscriber: p, now: now, into: out)
        if !screenSlots.isEmpty { assign(screenWanted, kind: .video, slots: screenSlots, subscriber: p, now: now, into: out) }
        let map = s.audioSlots.map(\.assigned) + s.videoSlots.map(\.assigned)
        let layers = s.videoSlots.map { [layerShown($0), $0.layers.wantedTemporal.map(Int.init)] }
        let codecs = s.videoSlots.map(codecShown)
        guard list != s.talkers || map != s.lastEmittedMap || layers != s.lastEmittedLayers || codecs != s.lastEmittedCodecs else { return }
        s.lastEmittedLayers = layers
        s.lastEmittedCodecs = codecs
        counters.slotSwitches &+= UInt64(zip(map, s.lastEmittedMap).filter { $0 != $1 && $0 != nil }.count)
        s.talkers = list
        s.lastEmittedMap = map
        let talkers = list.compactMap { e in
            participants[e.participant].map {
                RoomEvent.Talker(participant: $0.id, pinned: e.pinned, speaking: e.speaking, video: e.video)
            }
        }
        let slots = s.audioSlots.map {
            RoomEvent.SlotAssignment(mid: $0.description.mid, kind: .audio, participant: $0.assigned.flatMap { participants[$0]?.id })
        } + s.videoSlots.map {
            RoomEvent.SlotAssignment(mid: $0.description.mid, kind: .video, participant: $0.assigned.flatMap { participants[$0]?.id },
                                     layer: layerShown($0), temporalLayer: $0.layers.wantedTemporal.map(Int.init), codec: codecShown($0),
                                     source: $0.description.source)
        }
        events.append(.activeTalkers(subscriber: p.id, talkers: talkers, slots: slots))
    }

    /// The screen shares subscriber `p`'s screen slots should show, most important first: under
    /// `ScreenShareRule.always` every live share but its own, pinned presenters first, then the oldest share
    /// (a presentation keeps its slot when another begins); under `.talker` the shares of the talkers in its
    /// list, in the list's order. A hard-muted or floor-less presenter's share is not forwarded (its packets
    /// are dropped at ingress as a camera's are).
    func screenSharesWanted(by p: Participant, talkers: [TalkerEntry]) -> [Int] {
        func showable(_ q: Participant) -> Bool { q.index != p.index && videoLive(q, .screen) && videoAllowed(q) }
        switch configuration.screenShare {
        case .talker:
            return talkers.map(\.participant).filter { participants[$0].map(showable) ?? false }
        case .always:
            return participants.values.filter(showable).sorted { a, b in
                let pa = pins.firstIndex(of: a.index) ?? Int.max, pb = pins.firstIndex(of: b.index) ?? Int.max
                if pa != pb { return pa < pb }
                let sa = a.screenSharedSince ?? .never, sb = b.screenSharedSince ?? .never
                return sa != sb ? sa < sb : a.index < b.index
            }.map(\.index)
        }
    }

    /// Applies the slot planner's moves to the subscriber's slots of `kind` listed in `slots` (camera and
    /// screen slots are planned apart: each kind keeps its own sources).
    private func assign(_ wanted: [Int], kind: MediaKind, slots: [Int], subscriber p: Participant, now: MonoTime, into out: DatagramBatch) {
        guard let s = p.subscriber else { return }
        let current = slots.map { s.slot(SlotRef(subscriber: p.index, kind: kind, index: $0)).assigned }
        for move in SlotPlanner.plan(current: current, wanted: wanted) {
            switch move {
            case .place(let who, let i): place(who, in: SlotRef(subscriber: p.index, kind: kind, index: slots[i]), subscriber: s, now: now, into: out)
            case .clear(let i): clear(SlotRef(subscriber: p.index, kind: kind, index: slots[i]), subscriber: s)
            }
        }
        // A placed participant whose track changed (re-published) is re-pointed.
        for i in slots {
            let ref = SlotRef(subscriber: p.index, kind: kind, index: i)
            let slot = s.slot(ref)
            if let a = slot.assigned,
               let t = track(of: a, kind, slot.description.source, for: s, slot: i, current: slot.pending ?? slot.current,
                             render: slot.renderLimit, now: now),
               slot.current != t, slot.pending != t, slot.undecodable != t {
                place(a, in: ref, subscriber: s, now: now, into: out)
            }
        }
    }

    /// Puts `who` in the slot: its audio track, its video track or the simulcast layer that fits (`layer`
    /// when the caller chose one).
    func place(_ who: Int, in ref: SlotRef, subscriber s: SubscriberState, layer: Int? = nil, now: MonoTime, into out: DatagramBatch) {
        let before = s.slot(ref)
        let shown = before.assigned == who ? before.pending ?? before.current : nil
        guard let t = layer ?? track(of: who, ref.kind, before.description.source, for: s, slot: ref.index, current: shown,
                                     render: before.renderLimit, now: now),
              let track = tracks[t] else { return }
        if ref.kind == .video, before.description.format(for: track.description) == nil {
            return placeUndecodable(who, track: t, in: ref, subscriber: s)
        }
        mutateSlot(s, ref) { slot in
            if slot.assigned != who {
                // Another participant: every layer of it until its caps are chosen, and no up-hold. The source
                // still flowing keeps what its filter passes until the new one's key frame (`LayerFilter.reset`).
                slot.layers.wantedSpatial = nil
                slot.layers.wantedTemporal = nil
                slot.layerChangedAt = .zero
            }
            slot.assigned = who
            slot.undecodable = nil
            if ref.kind == .audio {
                slot.current = t
                slot.rewriter.switchTo(t)
                slot.silenceFramesLeft = 0
            } else if slot.current != t {
                slot.pending = t  // the old source keeps flowing until the new one's keyframe
            } else {
                slot.pending = nil  // back to the source still flowing: a source waited on before must not take over
            }
        }
        if ref.kind == .audio, let old = before.current, old != t { tracks[old]?.sinks.removeAll { $0 == ref } }
        if ref.kind == .video, let old = before.pending, old != t, old != before.current {
            tracks[old]?.sinks.removeAll { $0 == ref }
        }
        if !track.sinks.contains(ref) { track.sinks.append(ref) }
        // A move between layers of the same source starts the up hold; a new source may climb as soon as its
        // layers are measured.
        if ref.kind == .video, let shown, t != shown { mutateSlot(s, ref) { $0.layerChangedAt = now } }
        if ref.kind == .video, s.slot(ref).pending == t {
            track.keyframes.startWaiting(now: now)
            requestKeyframe(track, now: now, into: out)
        }
    }

    /// The rules put `who` in a video slot whose formats do not take its codec (or H.264 profile): the slot
    /// stops (what it showed must not go on under a slot map that names someone else), nothing of the source
    /// is sent, and the slot map reports the slot as not decodable. The talker keeps the slot rather than
    /// giving it to someone the rules ranked lower: the map still says who is talking, and the application
    /// can show a name, renegotiate with another codec or ask the publisher for one.
    private func placeUndecodable(_ who: Int, track t: Int, in ref: SlotRef, subscriber s: SubscriberState) {
        detachSink(ref, s.slot(ref))
        mutateSlot(s, ref) { slot in
            slot.assigned = who
            slot.current = nil
            slot.pending = nil
            slot.undecodable = t
            slot.rewriter.switchTo(nil)
        }
    }

    private func clear(_ ref: SlotRef, subscriber s: SubscriberState) {
        detachSink(ref, s.slot(ref))
        mutateSlot(s, ref) { slot in
            slot.assigned = nil
            slot.undecodable = nil
            slot.current = nil
            slot.pending = nil
            slot.rewriter.switchTo(nil)
            slot.layers = LayerFilter()
        }
    }

    func detachSink(_ ref: SlotRef, _ slot: Slot) {
        for t in [slot.current, slot.pending].compactMap({ $0 }) { tracks[t]?.sinks.removeAll { $0 == ref } }
    }

    func mutateSlot(_ s: SubscriberState, _ ref: SlotRef, _ body: (inout Slot) -> Void) {
        guard s.has(ref) else { return }
        if ref.kind == .audio { body(&s.audioSlots[ref.index]) } else { body(&s.videoSlots[ref.index]) }
    }

    /// Applies a change of what a participant may publish (hard mute, floor, role): candidacy at once, audio
    /// slots fed by it get a few silence frames then nothing, video slots stop, then every list is rebuilt.
    func publishingChanged(_ p: Participant, now: MonoTime, into out: DatagramBatch) {
        updateCandidacy(p)
        if let t = p.audioTrack, let track = tracks[t], !audioAllowed(p) {
            for ref in track.sinks {
                guard let s = participants[ref.subscriber]?.subscriber, s.has(ref) else { continue }
                mutateSlot(s, ref) { slot in
                    guard slot.current == t else { return }
                    slot.current = nil
                    slot.assigned = nil
                    slot.silenceFramesLeft = configuration.silenceFramesOnMute
                    slot.nextSilenceAt = now
                    deadlineCache = nil
                }
            }
            track.sinks.removeAll()
        }
        for t in p.videoTracks where !videoAllowed(p) {
            guard let track = tracks[t] else { continue }
            for ref in track.sinks {
                guard let s = participants[ref.subscriber]?.subscriber, s.has(ref) else { continue }
                let slot = s.slot(ref)
                guard slot.current == t || slot.pending == t else { continue }
                // The slot stops, whatever else fed it: a source it was leaving for this one's keyframe must
                // not keep flowing under a slot map that names nobody.
                if let other = slot.current, other != t { tracks[other]?.sinks.removeAll { $0 == ref } }
                if let other = slot.pending, other != t { tracks[other]?.sinks.removeAll { $0 == ref } }
                mutateSlot(s, ref) { slot in
                    slot.current = nil
                    slot.pending = nil
                    slot.assigned = nil
                    slot.rewriter.switchTo(nil)
                }
            }
            track.sinks.removeAll()
        }
        sendDueSilence(now: now, into: out)
        refreshAllSubscribers(now: now, into: out)
    }

    func updateVideoLiveness(now: MonoTime) {
        for t in tracks.values where t.kind == .video {
            let live = t.reception.lastPacketAt.map { now - $0 < configuration.videoStaleAfter } ?? false
            if live != t.live {
                setLive(t, live, now: now)
                listsDirty = true
            }
        }
    }

    /// A video track starts or stops arriving (its first packet, or `videoStaleAfter` without one): when its
    /// rate can be trusted from, and for a screen share since when its participant has been sharing (the
    /// oldest share keeps a screen slot).
    func setLive(_ t: SourceTrack, _ live: Bool, now: MonoTime) {
        t.live = live
        t.liveSince = live ? now : nil
        guard t.description.source == .screen, let p = participants[t.owner] else { return }
        let sharing = videoLive(p, .screen)
        if !sharing { p.screenSharedSince = nil } else if p.screenSharedSince == nil { p.screenSharedSince = now }
    }
}
