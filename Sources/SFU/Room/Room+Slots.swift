/// Talker lists and slot maps: the room ranked once (`RoomRanking`), then per subscriber the pure `SlotPolicy`'s
/// plan applied to its slots (`SlotAssigner`).
extension Room {
    /// A decision of the talker election: a new dominant speaker is counted and reported; lists follow.
    func apply(_ outcome: TalkerElection.Outcome) {
        // A room that follows the home's ranking reports the home's dominant speaker (`followRanking`).
        if let d = outcome.newDominant, home.followed == nil {
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
        if wasDominant, election.dominant == nil, home.followed == nil { effects.events.append(.dominantSpeaker(participant: nil)) }
    }

    /// What subscribers' slots are planned from: the home's ranking when the room follows one, else its own.
    var ranking: RoomRanking { RoomRanking(participants: participants.all, rules: rules, order: talkerOrder, pins: moderation.state.pins) }

    var talkerOrder: RoomRanking.TalkerOrder {
        guard let followed = home.followed else { return RoomRanking.TalkerOrder(election) }
        return RoomRanking.TalkerOrder(followed, index: { self.participants.lookup($0)?.index }, local: election)
    }

    /// This node's own election: what it relays (its local top K), whoever ranks the room.
    var localRanking: RoomRanking { RoomRanking(participants: participants.all, rules: rules, election: election, pins: moderation.state.pins) }

    func refreshAllSubscribers(now: MonoTime, into out: DatagramBatch) {
        effects.listsDirty = false
        let order = talkerOrder
        // What the lists were built from is what the other nodes of the room get (`shareRanking`): the
        // election may have moved since without changing a list.
        if home.followed == nil { home.listedOrder = order }
        let ranking = RoomRanking(participants: participants.all, rules: rules, order: order, pins: moderation.state.pins)
        for p in participants.inOrder { refreshSubscriber(p, ranking, now: now, into: out) }
        liveStream.refresh(ranking, now: now, into: out)
        relays.refresh(home.followed == nil ? ranking : localRanking, now: now, into: out)  // one ranking built when not following
        if !relays.isEmpty, !effects.events.contains(where: { if case .relaysChanged = $0 { true } else { false } }) {
            effects.events.append(.relaysChanged)
        }
    }

    func refreshSubscriber(_ p: Participant, now: MonoTime, into out: DatagramBatch) { refreshSubscriber(p, ranking, now: now, into: out) }

    /// Applies the subscriber's plan from `ranking` to its slots, and reports the list and slot map when either
    /// changed.
    func refreshSubscriber(_ p: Participant, _ ranking: RoomRanking, now: MonoTime, into out: DatagramBatch) {
        // One who waits to be let into a knock-enabled room is shown nobody: its slots stay empty.
        let ranking = p.awaited ? RoomRanking.nobody : ranking
        guard let s = p.subscriber,
              let slotMap = SlotAssigner.apply(ranking, to: s, participants: participants, configuration: configuration, now: now, into: out)
        else { return }
        effects.counters.slotSwitches &+= UInt64(slotMap.switches)
        effects.events.append(slotMap.event)
    }

    /// Applies a change of what a participant may publish (hard mute, floor, role): candidacy at once, slots
    /// fed by what it may no longer send stop (audio after a few silence frames), then every list is rebuilt.
    func publishingChanged(_ p: Participant, now: MonoTime, into out: DatagramBatch) { publishingChanged([p], now: now, into: out) }

    /// The same for several participants at once (a room-wide mute, a moderation state from the home): the
    /// lists are rebuilt once.
    func publishingChanged(_ changed: [Participant], now: MonoTime, into out: DatagramBatch) {
        let rules = rules
        for p in changed {
            updateCandidacy(p)
            var stopped: [PublishedTrack] = []
            if let t = p.audioTrack, !rules.audioAllowed(p) {
                stopped.append(t)
                t.onset?.clear()  // what it said before may not reach anyone later either
            }
            if !rules.videoAllowed(p) { stopped += p.videoTracks }
            for track in stopped {
                for case let slot as SlotSender in track.consumers {
                    Subscriber.stop(slot, showing: track, silenceFrames: configuration.silenceFramesOnMute, now: now)
                }
                // A recording stays: the ingress rules keep what may not leave from it, and its file keeps the
                // time as a gap.
                let others = track.consumers.filter { !($0 is SlotSender) && !($0 is TrackRecorder) }
                track.consumers.removeAll { !($0 is TrackRecorder) }
                for c in others { c.trackEnded(track) }
            }
        }
        for q in participants.all { q.subscriber?.audioSlots.forEach { $0.sendDueSilence(now: now, into: out) } }
        refreshAllSubscribers(now: now, into: out)
    }
}
