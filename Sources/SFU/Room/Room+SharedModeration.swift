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
        let members = participants.inOrder
        return ModerationState(epoch: homeEpoch, version: moderation.version, pinned: moderation.pins.compactMap(id), locked: moderation.locked,
                               roomAudioMuted: moderation.roomAudioMuted, raisedHands: moderation.floor.raised.compactMap(id),
                               floorHolder: moderation.floor.holder.flatMap(id), invited: moderation.floor.invited.compactMap(id),
                               hardMuted: muted, members: members.map(\.id), moderators: members.filter { $0.role == .moderator }.map(\.id),
                               by: lastModerator, floorCommand: lastFloorCommand)
    }

    /// Applies the home's state when it is newer than this room's (an older or equal version is ignored:
    /// states may cross). Who may publish changes at once - a participant hard-muted on another node stops
    /// here at ingress - and lists follow. Returns whether it applied.
    ///
    /// What changed is told to this node's clients as the home told its own: a hard mute, the room's mute, the
    /// lock, a role, the floor, the pins, each with who did it (`by`; the floor's last command). Roles are
    /// the home's for the participants it lists (a participant the home does not know yet keeps the role it
    /// joined with).
    ///
    /// Versions are the home's: what this room changes itself (a participant leaving takes its pin along) does
    /// not count, so the home's next state is never taken for an old one.
    @discardableResult
    public func applyModeration(_ state: ModerationState, now: MonoTime, into out: DatagramBatch) -> Bool {
        guard state.isNewer(than: appliedModeration) else { return false }
        let previous = appliedModeration
        appliedModeration = state
        let before = moderation
        moderation = Moderation(state, index: { self.participants.lookup($0)?.index })
        let by = state.by ?? ""
        let listed = Set(state.members)
        let moderators = state.moderators.map(Set.init)
        for p in participants.inOrder {
            // Of a participant the home does not list (not there yet, or already gone there) the state says nothing.
            let m = state.hardMuted[p.id]
            if listed.contains(p.id), (m?.audio ?? false, m?.video ?? false) != (p.hardMutedAudio, p.hardMutedVideo) {
                p.hardMutedAudio = m?.audio ?? false
                p.hardMutedVideo = m?.video ?? false
                effects.events.append(.participantHardMute(participant: p.id, audio: p.hardMutedAudio, video: p.hardMutedVideo, by: by))
            }
            if let moderators, listed.contains(p.id) {
                let role: Role = moderators.contains(p.id) ? .moderator : .participant
                if p.role != role {
                    p.role = role
                    effects.events.append(.role(participant: p.id, role: role, by: by))
                }
            }
        }
        if moderation.roomAudioMuted != before.roomAudioMuted { effects.events.append(.roomHardMute(audio: moderation.roomAudioMuted, by: by)) }
        if moderation.locked != before.locked { effects.events.append(.lock(locked: moderation.locked, by: by)) }
        if moderation.floor != before.floor, let f = state.floorCommand, f.isNewer(than: previous) {
            effects.events.append(.floor(action: f.action, by: f.by, target: f.target, raisedHands: raisedHands, approvedHands: approvedHands))
        }
        if moderation.pins != before.pins { effects.events.append(.pins(pinnedIDs)) }
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
        // Another node's participant the home already lists has the home's role (its own node may not have
        // applied the home's last state when it described it). One of this node's own who comes (back) keeps
        // the role it joined with: the state may be of its last time in the room.
        if p.origin != nil, let moderators = state.moderators, state.members.contains(p.id) {
            p.role = moderators.contains(p.id) ? .moderator : .participant
        }
    }

    /// A node that became the room's home by taking it over (its last home died) goes on from the state that home
    /// saved in the registry (`HomeModeration` in the node loads it), or from the newer one that home relayed
    /// here if this node followed it: the lock, room mute and floor now, and what the state says of each
    /// participant - a pin, a hard mute - as that participant rejoins here (the dead home's participants come
    /// back one by one). From then on the state is this room's own: nothing of it is re-applied over the room's
    /// later commands (`appliedModeration` goes), its version goes on from the state's. A locked room lets back
    /// in those the state lists as members for `rejoinWindow`, each once, and nobody else; locking it again ends
    /// that.
    public func takeOverModeration(_ saved: ModerationState, epoch: Int64, now: MonoTime, into out: DatagramBatch) {
        let state = saved.isNewer(than: appliedModeration) ? saved : appliedModeration ?? saved
        homeEpoch = epoch
        appliedModeration = nil
        let pinsBefore = moderation.pins
        moderation = Moderation(state, index: { self.participants.lookup($0)?.index })
        var left = state
        left.members = Array(left.members.prefix(Self.maxRejoining))
        for p in participants.all {
            let m = state.hardMuted[p.id]
            p.hardMutedAudio = m?.audio ?? false
            p.hardMutedVideo = m?.video ?? false
            // Another node's participant may be the dead home's, whose relay has not closed yet: it comes back
            // here (rejoins) and is then given what the state says of it.
            if p.origin == nil { left.forget(p.id) }
        }
        takenOverModeration = left.isSpent ? nil : (left, now)
        if moderation.pins != pinsBefore { effects.events.append(.pins(pinnedIDs)) }
        publishingChanged(participants.inOrder, now: now, into: out)
    }

    /// How long after a take-over the dead home's participants may rejoin a locked room.
    static let rejoinWindow: MonoTime.Interval = .seconds(60)
    /// At most this many of them (the state comes from the registry: bounded like everything from outside).
    static let maxRejoining = 4096

    /// Whether a room taken over from a dead home, locked, lets `id` back in: it was in the room then, and
    /// the take-over is recent.
    func rejoins(_ id: String, now: MonoTime) -> Bool {
        guard let t = takenOverModeration, now - t.at < Self.rejoinWindow else { return false }
        return t.state.members.contains(id)
    }

    /// A participant rejoined a room taken over from a dead home: its pin and hard mutes from the saved state.
    func restoreTakenOverModeration(for p: Participant) {
        guard let (state, at) = takenOverModeration else { return }
        var left = state
        if let m = left.hardMuted[p.id] {
            p.hardMutedAudio = m.audio
            p.hardMutedVideo = m.video
        }
        // A pin the room has no place for any more (the home pinned others since) is dropped.
        if left.pinned.contains(p.id) { try? moderation.pin([p.index], maxActiveTalkers: configuration.maxActiveTalkers) }
        left.forget(p.id)
        takenOverModeration = left.isSpent ? nil : (left, at)
    }

    /// Another node's participant whose relay closed (a relay that closes and opens again, a channel that
    /// flapped): a room that decides its own moderation - the home - keeps what it decided of it (hard mutes,
    /// role, pin) for when the peer describes it again, so the room's moderation is not lost with a relay.
    /// Bounded: past `maxRejoining` nothing more is kept.
    func park(_ p: Participant) {
        guard appliedModeration == nil, let peer = p.origin, parked.count < Self.maxRejoining else { return }
        parked[p.id] = Parked(peer: peer, audio: p.hardMutedAudio, video: p.hardMutedVideo, role: p.role, pinned: moderation.pins.contains(p.index))
    }

    /// Gives back what the home decided of a participant parked when its relay closed, whichever node it comes
    /// back through (its node may have died: it rejoins through another, or here).
    func unpark(_ p: Participant) {
        guard let kept = parked.removeValue(forKey: p.id) else { return }
        p.hardMutedAudio = kept.audio
        p.hardMutedVideo = kept.video
        p.role = kept.role
        if kept.pinned { try? moderation.pin([p.index], maxActiveTalkers: configuration.maxActiveTalkers) }
    }

    /// The room was locked again: only the new lock's rules hold, nobody rejoins past it.
    func endRejoining() { takenOverModeration?.state.members = [] }
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
