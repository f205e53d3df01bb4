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
                               hardMuted: muted)
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
}
