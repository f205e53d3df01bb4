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
    @discardableResult
    public func applyModeration(_ state: ModerationState, now: MonoTime, into out: DatagramBatch) -> Bool {
        guard state.version > moderation.version else { return false }
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
}
