/// The room's side of its home (issue 25; docs/cluster.md, Relays): in a room that spans nodes one node is the
/// room's home. The home elects talkers from its own and the relayed levels and hands its order to the other
/// nodes; each maps its subscribers' slots from it, so every subscriber in the room sees the same talkers in the
/// same order. What a node relays stays its own election's local top K: a talker of its own must reach the home
/// before the home can rank it. The home also applies every moderator command and hands the others its state;
/// each node applies a newer state than it has, enforcing the hard mutes of its own participants at ingress as
/// if its own moderator had issued them.
///
/// Owns what the room follows of its home or shares as the home: the ranking followed and the one last shared,
/// the moderation state applied or taken over, the epoch, what it decided of participants whose relay closed.
public final class RoomHome {
    unowned let room: Room
    /// The home's ranking this room follows (a room that spans nodes, not its home); nil: its own election.
    private(set) var followed: SharedRanking?
    /// The ranking last handed to the other nodes, for its version.
    private var lastShared: SharedRanking?
    /// The talker order the lists were last built from.
    var listedOrder: RoomRanking.TalkerOrder?
    /// The home's moderation state this room last applied (a room that follows one).
    private(set) var applied: ModerationState?
    /// The registry's epoch at which this room's node is the room's home (0: not known to be, or no cluster):
    /// stamped on the moderation it shares, so that the nodes of the room order a new home's states after its
    /// predecessor's (`ModerationState.isNewer`).
    public var epoch: Int64 = 0
    /// What a state taken over from a dead home says of participants not back yet, and when it was taken
    /// over (`takeOverModeration`).
    private var takenOver: (state: ModerationState, at: MonoTime)?
    /// Who issued the last moderator command here, and the last floor command: carried in the state the other
    /// nodes of the room get (`moderationState`), whose own clients are told who did it.
    var lastModerator: String?
    var lastFloorCommand: ModerationState.FloorCommand?
    /// What the home decided of other nodes' participants whose relay closed (`park`), by id.
    private(set) var parked: [String: Parked] = [:]
    struct Parked {
        var peer: String
        var audio: Bool
        var video: Bool
        var role: Role
        var pinned: Bool
    }

    init(room: Room) { self.room = room }

    /// The index a state from another node names `id` by here: none for one awaited in a knock-enabled room.
    /// Awaited participants are not relayed (`RoomRelays.localMembers`), so what a state says of one is from its
    /// last time in the room: no pin or floor place reaches it before a moderator lets it in.
    private func admittedIndex(_ id: String) -> Int? {
        room.participants.lookup(id).flatMap { $0.awaited ? nil : $0.index }
    }

    /// Whether this room decides its own moderation and roles (no home's state applied here).
    var decidesModeration: Bool { applied == nil && epoch == 0 }

    /// A participant of `peer` left there for good: nothing is kept of it.
    func leftForGood(_ id: String, at peer: String) {
        if parked[id]?.peer == peer { parked[id] = nil }
    }

    /// This room's talker order - the one its lists were last built from - participants by id, to hand to the
    /// other nodes of the room. A method, not a property: it numbers what it hands out, so `version` moves
    /// when the order or a flag changed since the last call (`epoch` is the shell's: the registry's epoch of
    /// the room's home).
    public func shareRanking() -> SharedRanking {
        let order = listedOrder ?? RoomRanking.TalkerOrder(room.election)
        let id = { (i: Int) in self.room.participants[i]?.id }
        var r = SharedRanking(epoch: 0, version: 0, recency: order.recency.compactMap(id),
                              speaking: order.recency.filter { order.speaking.contains($0) }.compactMap(id),
                              young: order.recency.filter { order.young.contains($0) }.compactMap(id), dominant: order.dominant.flatMap(id))
        if let last = lastShared, last.sameOrder(as: r) { return last }
        r.version = (lastShared?.version ?? 0) &+ 1
        lastShared = r
        return r
    }

    /// The relay from the room's home closed (the home's room ended, or the home died): this room ranks on
    /// its own again and takes the next home's ranking and moderation whatever their numbers (a room of the same
    /// name made again at the home numbers them from 1 again).
    public func stopFollowing() {
        followRanking(nil)
        applied = nil
    }

    /// Follows the home's ranking (nil: this room ranks on its own again). A ranking older than the one
    /// followed (lower epoch, or same epoch and a version not newer) is ignored; the lists follow at once, and
    /// a new dominant speaker is reported as the home's.
    @discardableResult
    public func followRanking(_ r: SharedRanking?) -> Bool {
        if let r, let f = followed, (r.epoch, r.version) <= (f.epoch, f.version) { return false }
        let before = (followed?.dominant, followed == nil ? room.election.dominant.flatMap { room.participants[$0]?.id } : nil)
        followed = r
        let now = r?.dominant ?? (r == nil ? room.election.dominant.flatMap { room.participants[$0]?.id } : nil)
        if (before.0 ?? before.1) != now { room.effects.events.append(.dominantSpeaker(participant: now)) }
        room.listsChanged()
        return true
    }

    /// This room's moderation, participants by id, for the other nodes of the room.
    public var moderationState: ModerationState {
        let id = { (i: Int) in self.room.participants[i]?.id }
        var muted: [String: ModerationState.HardMute] = [:]
        for p in room.participants.all where p.hardMutedAudio || p.hardMutedVideo {
            muted[p.id] = .init(audio: p.hardMutedAudio, video: p.hardMutedVideo)
        }
        let members = room.participants.inOrder
        return ModerationState(epoch: epoch, version: room.moderation.state.version, pinned: room.moderation.state.pins.compactMap(id), locked: room.moderation.state.locked,
                               roomAudioMuted: room.moderation.state.roomAudioMuted, raisedHands: room.moderation.state.floor.raised.compactMap(id),
                               floorHolder: room.moderation.state.floor.holder.flatMap(id), invited: room.moderation.state.floor.invited.compactMap(id),
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
        guard state.isNewer(than: applied) else { return false }
        let previous = applied
        applied = state
        let before = room.moderation.state
        room.moderation.state = Moderation(state, index: admittedIndex)
        let by = state.by ?? ""
        let listed = Set(state.members)
        let moderators = state.moderators.map(Set.init)
        for p in room.participants.inOrder {
            // Of a participant the home does not list (not there yet, or already gone there) the state says nothing.
            let m = state.hardMuted[p.id]
            if listed.contains(p.id), (m?.audio ?? false, m?.video ?? false) != (p.hardMutedAudio, p.hardMutedVideo) {
                p.hardMutedAudio = m?.audio ?? false
                p.hardMutedVideo = m?.video ?? false
                room.effects.events.append(.participantHardMute(participant: p.id, audio: p.hardMutedAudio, video: p.hardMutedVideo, by: by))
            }
            // Nor of its role while it waits here (the home cannot know it: a role listed is its last time's).
            if let moderators, listed.contains(p.id), !p.awaited {
                let role: Role = moderators.contains(p.id) ? .moderator : .participant
                if p.role != role {
                    p.role = role
                    room.effects.events.append(.role(participant: p.id, role: role, by: by))
                }
            }
        }
        if room.moderation.state.roomAudioMuted != before.roomAudioMuted { room.effects.events.append(.roomHardMute(audio: room.moderation.state.roomAudioMuted, by: by)) }
        if room.moderation.state.locked != before.locked { room.effects.events.append(.lock(locked: room.moderation.state.locked, by: by)) }
        if room.moderation.state.floor != before.floor, let f = state.floorCommand, f.isNewer(than: previous) {
            room.effects.events.append(.floor(action: f.action, by: f.by, target: f.target, raisedHands: room.raisedHands, approvedHands: room.approvedHands))
        }
        if room.moderation.state.pins != before.pins { room.effects.events.append(.pins(room.pinnedIDs)) }
        room.publishingChanged(room.participants.inOrder, now: now, into: out)
        return true
    }

    /// A participant joined a room that follows the home's moderation: the state last applied holds for it too
    /// (a pin the home set before it was here, a hard mute it had before it left and came back).
    func reapply(for p: Participant) {
        guard let state = applied else { return }
        room.moderation.state = Moderation(state, index: admittedIndex)
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
    /// later commands (`applied` goes), its version goes on from the state's. A locked room lets back
    /// in those the state lists as members for `rejoinWindow`, each once, and nobody else; locking it again ends
    /// that.
    public func takeOverModeration(_ saved: ModerationState, epoch: Int64, now: MonoTime, into out: DatagramBatch) {
        let state = saved.isNewer(than: applied) ? saved : applied ?? saved
        self.epoch = epoch
        applied = nil
        let pinsBefore = room.moderation.state.pins
        room.moderation.state = Moderation(state, index: admittedIndex)
        var left = state
        left.members = Array(left.members.prefix(Self.maxRejoining))
        for p in room.participants.all {
            let m = state.hardMuted[p.id]
            p.hardMutedAudio = m?.audio ?? false
            p.hardMutedVideo = m?.video ?? false
            // Another node's participant may be the dead home's, whose relay has not closed yet: it comes back
            // here (rejoins) and is then given what the state says of it.
            if p.origin == nil { left.forget(p.id) }
        }
        takenOver = left.isSpent ? nil : (left, now)
        if room.moderation.state.pins != pinsBefore { room.effects.events.append(.pins(room.pinnedIDs)) }
        room.publishingChanged(room.participants.inOrder, now: now, into: out)
    }

    /// How long after a take-over the dead home's participants may rejoin a locked room.
    static let rejoinWindow: MonoTime.Interval = .seconds(60)
    /// At most this many of them (the state comes from the registry: bounded like everything from outside).
    static let maxRejoining = 4096

    /// Whether a room taken over from a dead home, locked, lets `id` back in: it was in the room then, and
    /// the take-over is recent.
    func rejoins(_ id: String, now: MonoTime) -> Bool {
        guard let t = takenOver, now - t.at < Self.rejoinWindow else { return false }
        return t.state.members.contains(id)
    }

    /// A participant rejoined a room taken over from a dead home: its pin and hard mutes from the saved state.
    func restoreTakenOver(for p: Participant) {
        guard let (state, at) = takenOver else { return }
        var left = state
        if let m = left.hardMuted[p.id] {
            p.hardMutedAudio = m.audio
            p.hardMutedVideo = m.video
        }
        // A pin the room has no place for any more (the home pinned others since) is dropped.
        if left.pinned.contains(p.id) { try? room.moderation.state.pin([p.index], maxActiveTalkers: room.configuration.maxActiveTalkers) }
        left.forget(p.id)
        takenOver = left.isSpent ? nil : (left, at)
    }

    /// Another node's participant whose relay closed (a relay that closes and opens again, a channel that
    /// flapped): a room that decides its own moderation - the home - keeps what it decided of it (hard mutes,
    /// role, pin) for when the peer describes it again, so the room's moderation is not lost with a relay.
    /// Bounded: past `maxRejoining` nothing more is kept.
    func park(_ p: Participant) {
        guard applied == nil, let peer = p.origin, parked.count < Self.maxRejoining else { return }
        parked[p.id] = Parked(peer: peer, audio: p.hardMutedAudio, video: p.hardMutedVideo, role: p.role, pinned: room.moderation.state.pins.contains(p.index))
    }

    /// Gives back what the home decided of a participant parked when its relay closed, whichever node it comes
    /// back through (its node may have died: it rejoins through another, or here).
    func unpark(_ p: Participant) {
        guard let kept = parked.removeValue(forKey: p.id) else { return }
        p.hardMutedAudio = kept.audio
        p.hardMutedVideo = kept.video
        p.role = kept.role
        if kept.pinned { try? room.moderation.state.pin([p.index], maxActiveTalkers: room.configuration.maxActiveTalkers) }
    }

    /// The room was locked again: only the new lock's rules hold, nobody rejoins past it.
    func endRejoining() { takenOver?.state.members = [] }
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
