/// Talker lists and slot maps: the room's candidates ranked once, the pure `SlotPolicy` per subscriber, and
/// its plan applied to the slots (`SlotPlanner` keeps what each slot already shows).
extension Room {
    /// A decision of the talker election: a new dominant speaker is counted and reported; lists follow.
    func apply(_ outcome: TalkerElection.Outcome) {
        if let d = outcome.newDominant {
            effects.counters.dominantSpeakerChanges += 1
            effects.events.append(.dominantSpeaker(participant: participants[d]?.id))
        }
        if outcome.listsChanged { effects.listsDirty = true }
    }

    /// Takes a participant out of talker candidacy at once when its audio may not be forwarded.
    func updateCandidacy(_ p: Participant) {
        guard p.audioTrack != nil else { return }
        let wasDominant = election.dominant == p.index
        election.detector.setPaused(p.index, !rules.audioAllowed(p))
        if wasDominant, election.dominant == nil { effects.events.append(.dominantSpeaker(participant: nil)) }
    }

    /// Everyone who can be forwarded, with what the talker list needs to know.
    func candidates() -> [Int: TalkerCandidate] {
        var c: [Int: TalkerCandidate] = [:]
        let rules = rules
        for p in participants.all {
            let hasAudio = p.audioTrack != nil && rules.audioAllowed(p)
            let hasVideo = (p.publisher?.videoLive() ?? false) && rules.videoAllowed(p) && !p.videoMuted
            guard hasAudio || hasVideo else { continue }
            let speaking = hasAudio && election.isSpeaking(p.index)
            c[p.index] = TalkerCandidate(speaking: speaking, hasAudio: hasAudio, hasVideo: hasVideo, young: speaking && election.isYoung(p.index))
        }
        return c
    }

    /// The screen shares that may be shown now: live, their presenters allowed to send video.
    func screenShares() -> [SlotPolicy.ScreenShare] {
        let rules = rules
        return participants.all.compactMap { q in
            guard let publisher = q.publisher, publisher.videoLive(.screen), rules.videoAllowed(q) else { return nil }
            return SlotPolicy.ScreenShare(presenter: q.index, pinOrder: moderation.pins.firstIndex(of: q.index), since: publisher.screenSharedSince)
        }
    }

    func refreshAllSubscribers(now: MonoTime, into out: DatagramBatch) {
        effects.listsDirty = false
        let prepared = TalkerListBuilder.prepare(recency: election.recency, candidates: candidates(), pins: moderation.pins,
                                                 dominant: election.dominant)
        let shares = screenShares()
        for p in participants.inOrder { refreshSubscriber(p, prepared, shares, now: now, into: out) }
    }

    func refreshSubscriber(_ p: Participant, now: MonoTime, into out: DatagramBatch) {
        let prepared = TalkerListBuilder.prepare(recency: election.recency, candidates: candidates(), pins: moderation.pins,
                                                 dominant: election.dominant)
        refreshSubscriber(p, prepared, screenShares(), now: now, into: out)
    }

    /// Rebuilds one subscriber's list from `SlotPolicy`, moves sources between its slots (sticky: a kept source
    /// keeps its slot; a newcomer takes an evicted source's slot), and reports the list and slot map when
    /// either changed.
    func refreshSubscriber(_ p: Participant, _ prepared: TalkerListBuilder.Prepared, _ shares: [SlotPolicy.ScreenShare],
                           now: MonoTime, into out: DatagramBatch) {
        guard let s = p.subscriber else { return }
        let cameraSlots = s.videoSlots.filter { $0.description.source == .camera }
        let screenSlots = s.videoSlots.filter { $0.description.source == .screen }
        let plan = SlotPolicy.plan(
            for: .init(index: p.index, talkerCount: p.talkerCount, audioSlots: s.audioSlots.count, cameraSlots: cameraSlots.count,
                       screenSlots: screenSlots.count, numberOfVideos: s.videoCount.numberOfVideos, cameraAssignments: cameraSlots.map(\.assigned)),
            talkers: prepared, maxActiveTalkers: configuration.maxActiveTalkers, screenShares: shares, rule: configuration.screenShare)
        assign(plan.audio, to: s.audioSlots, of: s, now: now, into: out)
        assign(plan.cameras, to: cameraSlots, of: s, now: now, into: out)
        if !screenSlots.isEmpty { assign(plan.screens, to: screenSlots, of: s, now: now, into: out) }
        if let slotMap = s.noteSlotMap(talkers: plan.talkers, names: { self.participants[$0]?.id }) {
            effects.counters.slotSwitches &+= UInt64(slotMap.switches)
            effects.events.append(slotMap.event)
        }
    }

    /// Applies the slot planner's moves to `slots` (camera and screen slots are planned apart: each kind keeps
    /// its own sources); then a placed participant whose track changed (re-published, another layer) is
    /// placed again.
    private func assign(_ wanted: [Int], to slots: [SlotSender], of s: Subscriber, now: MonoTime, into out: DatagramBatch) {
        for move in SlotPlanner.plan(current: slots.map(\.assigned), wanted: wanted) {
            switch move {
            case .place(let who, let i): if let q = participants[who] { s.place(q, in: slots[i], configuration: configuration, now: now, into: out) }
            case .clear(let i): slots[i].clear()
            }
        }
        for slot in slots {
            if let q = slot.assignee,
               let t = s.chooseTrack(of: q, for: slot, current: slot.pending ?? slot.current, configuration: configuration, now: now),
               slot.current !== t, slot.pending !== t, slot.undecodable !== t {
                s.place(q, in: slot, configuration: configuration, now: now, into: out)
            }
        }
    }

    /// Applies a change of what a participant may publish (hard mute, floor, role): candidacy at once, slots
    /// fed by what it may no longer send stop (audio after a few silence frames), then every list is rebuilt.
    func publishingChanged(_ p: Participant, now: MonoTime, into out: DatagramBatch) {
        updateCandidacy(p)
        let rules = rules
        var stopped: [PublishedTrack] = []
        if let t = p.audioTrack, !rules.audioAllowed(p) { stopped.append(t) }
        if !rules.videoAllowed(p) { stopped += p.videoTracks }
        for track in stopped {
            for case let slot as SlotSender in track.consumers {
                Subscriber.stop(slot, showing: track, silenceFrames: configuration.silenceFramesOnMute, now: now)
            }
            let others = track.consumers.filter { !($0 is SlotSender) }
            track.consumers.removeAll()
            for c in others { c.trackEnded(track) }
        }
        for q in participants.all { q.subscriber?.audioSlots.forEach { $0.sendDueSilence(now: now, into: out) } }
        refreshAllSubscribers(now: now, into: out)
    }
}
