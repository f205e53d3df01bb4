/// Moderation of a room that spans nodes (issue 25; docs/cluster.md, Relays): the room's home applies every
/// command and hands the others its state; each node applies a newer state than it has, enforcing the hard
/// mutes of its own participants at ingress as if its own moderator had issued them.
extension Room {
    /// This room's moderation, participants by id, for the other nodes of the room.
    public var moderationState: ModerationState {
        let id = { (i: Int) in self.participants[i]?.id }
        var muted: [String: ModerationState.HardMute] = [:]
        for p in participants.all where p.hardMutedAudio || p.hardMutedVideo {
            muted[p.id] = .init(audio: p.hardMutedAudio, video: p.hardMutedVideo)
        }
        return ModerationState(version: moderation.version, pinned: moderation.pins.compactMap(id), locked: moderation.locked,
                               roomAudioMuted: moderation.roomAudioMuted, raisedHands: moderation.floor.raised.compactMap(id),
                               floorHolder: moderation.floor.holder.flatMap(id), invited: moderation.floor.invited.compactMap(id),
                               hardMuted: muted, members: participants.inOrder.map(\.id))
    }

    /// Applies the home's state when it is newer than this room's (an older or equal version is ignored:
    /// states may cross). Who may publish changes at once - a participant hard-muted on another node stops
    /// here at ingress - and lists follow. Returns whether it applied.
    ///
    /// Versions are the home's: what this room changes itself (a participant leaving takes its pin along) does
    /// not count, so the home's next state is never taken for an old one.
    @discardableResult
    public func applyModeration(_ state: ModerationState, now: MonoTime, into out: DatagramBatch) -> Bool {
        guard state.version > (appliedModeration?.version ?? 0) else { return false }
        appliedModeration = state
        let pinsBefore = moderation.pins
        moderation = Moderation(state, index: { self.participants.lookup($0)?.index })
        for p in participants.all {
            let m = state.hardMuted[p.id]
            p.hardMutedAudio = m?.audio ?? false
            p.hardMutedVideo = m?.video ?? false
        }
        if moderation.pins != pinsBefore { effects.events.append(.pins(pinnedIDs)) }
        publishingChanged(participants.inOrder, now: now, into: out)
        return true
    }

    /// A participant joined a room that follows the home's moderation: the state last applied holds for it too
    /// (a pin the home set before it was here, a hard mute it had before it left and came back).
    func reapplySharedModeration(for p: Participant) {
        guard let state = appliedModeration else { return }
        moderation = Moderation(state, index: { self.participants.lookup($0)?.index })
        p.hardMutedAudio = state.hardMuted[p.id]?.audio ?? false
        p.hardMutedVideo = state.hardMuted[p.id]?.video ?? false
    }

    /// A node that became the room's home by taking it over (its last home died) goes on from the state that home
    /// saved in the registry (`HomeModeration` in the node loads it): the lock, room mute and floor now, and
    /// what the state says of each participant - a pin, a hard mute - as that participant rejoins here (the
    /// dead home's participants come back one by one). From then on the state is this room's own: its version
    /// goes on from the saved one, and its next command moves it. Unlike `applyModeration` nothing is re-applied
    /// over the room's own later changes. Returns whether it applied (not over a newer state of its own).
    @discardableResult
    public func takeOverModeration(_ state: ModerationState, now: MonoTime, into out: DatagramBatch) -> Bool {
        guard state.version >= moderation.version else { return false }
        let pinsBefore = moderation.pins
        moderation = Moderation(state, index: { self.participants.lookup($0)?.index })
        var left = state
        for p in participants.all {
            let m = state.hardMuted[p.id]
            p.hardMutedAudio = m?.audio ?? false
            p.hardMutedVideo = m?.video ?? false
            left.forget(p.id)
        }
        takenOverModeration = left.isSpent ? nil : left
        if moderation.pins != pinsBefore { effects.events.append(.pins(pinnedIDs)) }
        publishingChanged(participants.inOrder, now: now, into: out)
        return true
    }

    /// Whether a room taken over from a dead home, locked, lets `id` back in: it was in the room then.
    func rejoins(_ id: String) -> Bool { takenOverModeration?.members.contains(id) ?? false }

    /// A participant rejoined a room taken over from a dead home: its pin and hard mutes from the saved state.
    func restoreTakenOverModeration(for p: Participant) {
        guard var left = takenOverModeration else { return }
        if let m = left.hardMuted[p.id] {
            p.hardMutedAudio = m.audio
            p.hardMutedVideo = m.video
        }
        // A pin the room has no place for any more (the home pinned others since) is dropped.
        if left.pinned.contains(p.id) { try? moderation.pin([p.index], maxActiveTalkers: configuration.maxActiveTalkers) }
        left.forget(p.id)
        takenOverModeration = left.isSpent ? nil : left
    }
}

extension ModerationState {
    /// What it says of one participant, gone (it rejoined, and got it).
    mutating func forget(_ id: String) {
        hardMuted[id] = nil
        pinned.removeAll { $0 == id }
        members.removeAll { $0 == id }
    }

    var isSpent: Bool { hardMuted.isEmpty && pinned.isEmpty && members.isEmpty }
}
