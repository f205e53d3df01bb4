/// Moderator controls (EnableX semantics, `shared/seeds/000_*` and `002_*`): hard mute, pins, lock, roles, the
/// lecture floor and who is let into a knock-enabled room. `Moderation` (pure state) decides whether a command
/// applies; this type applies what follows - events, who may publish, the lists.
///
/// Knock-enabled rooms (EnableX "Moderate Participants' entry"): a participant admitted without the moderator
/// role waits - it may set up its transports, but nothing it sends is forwarded (a counted `awaited` drop at
/// ingress) and its slots stay empty - until a moderator lets it in or turns it away. Moderators are told when
/// someone waits, and one who joins late reads who does from the room state. Whether it waits follows the role
/// in force once admission restored what the room kept of it (a moderator's role given back on a rejoin).
///
/// While it waits it is not in the session (EnableX: it cannot "communicate with others"), and no command
/// reaches it or comes from it: it may not moderate (whatever role it holds), raise its hand or take part in
/// the floor; it cannot be pinned, unpinned, given a role or named in a floor action (refused as an id not in
/// the session, 5126 or 5045); a pin or floor place it had (restored as it rejoined) goes as it starts to wait.
/// A moderator may still hard-mute it or drop it: both only restrict it, and hold once it is let in.
///
/// Owns the room's moderation state (pins, lock, room mute, floor); per-participant hard mutes and roles stay on
/// `Participant`. A room that follows its home has the state replaced by the home's (`RoomHome`).
public final class RoomModeration {
    unowned let room: Room
    var state = Moderation()

    init(room: Room) { self.room = room }

    /// Runs one moderator command issued by participant `by` (the seeds' rules and codes: the commands below).
    /// The issuer and a floor command's action are noted in the moderation state the other nodes of the room
    /// get, so that each tells its own clients who did what.
    @discardableResult
    public func moderate(_ command: ModerationCommand, by: String, now: MonoTime, into out: DatagramBatch) throws(RoomError) -> ModerationOutcome {
        switch command {
        case .roomHardMute(let audio): try hardMuteRoom(by: by, audio: audio, now: now, into: out)
        case .hardMute(let target, let audio, let video): try hardMute(by: by, target: target, audio: audio, video: video, now: now, into: out)
        case .pin(let ids): try pin(by: by, ids, now: now, into: out)
        case .unpin(let ids): try unpin(by: by, ids, now: now, into: out)
        case .floor(let action, let target): try floor(by: by, action: action, target: target, now: now, into: out)
        case .lock(let locked): try lock(by: by, locked: locked)
        case .role(let target, let role): try setRole(by: by, target: target, role: role, now: now, into: out)
        }
        room.home.lastModerator = by
        if case .floor(let action, let target) = command {
            room.home.lastFloorCommand = .init(action: action, by: by, target: target, epoch: room.home.epoch, version: state.version)
        }
        return room.moderationOutcome
    }

    /// Room-wide audio hard mute: every participant but moderators, late joiners included, is inaudible.
    public func hardMuteRoom(by: String, audio mute: Bool, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        try room.requireModerator(by, mute ? .roomMuteUnauthorized : .roomUnmuteUnauthorized)
        try state.setRoomAudioMuted(mute)
        room.effects.events.append(.roomHardMute(audio: mute, by: by))
        room.publishingChanged(room.participants.inOrder, now: now, into: out)
    }

    /// Per-participant hard mute of audio and/or video; `nil` leaves that kind as it is.
    public func hardMute(by: String, target: String, audio: Bool?, video: Bool?, now: MonoTime,
                         into out: DatagramBatch) throws(RoomError) {
        guard audio != nil || video != nil else {
            throw RoomError(.invalidSetting, .invalid, "hard mute needs audio or video")
        }
        if let a = audio { try room.requireModerator(by, a ? .hardMuteAudioUnauthorized : .hardUnmuteAudioUnauthorized) }
        if let v = video { try room.requireModerator(by, v ? .hardMuteVideoUnauthorized : .hardUnmuteVideoUnauthorized) }
        let p = try room.participant(target)
        if let a = audio { p.hardMutedAudio = a }
        if let v = video { p.hardMutedVideo = v }
        state.participantChanged()
        room.effects.events.append(.participantHardMute(participant: p.id, audio: p.hardMutedAudio, video: p.hardMutedVideo, by: by))
        room.publishingChanged(p, now: now, into: out)
    }

    /// Pins users: always in every list (talkers first, then pinned non-talkers), at most K - 1 of them.
    public func pin(by: String, _ ids: [String], now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        try room.requireModerator(by, .unauthorized)
        try state.pin(try room.participants.resolveAdmitted(ids), maxActiveTalkers: room.configuration.maxActiveTalkers)
        room.effects.events.append(.pins(room.pinnedIDs))
        room.refreshAllSubscribers(now: now, into: out)
    }

    public func unpin(by: String, _ ids: [String], now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        try room.requireModerator(by, .unauthorized)
        state.unpin(Set(try room.participants.resolveAdmitted(ids)))
        room.effects.events.append(.pins(room.pinnedIDs))
        room.refreshAllSubscribers(now: now, into: out)
    }


    public func lock(by: String, locked lock: Bool) throws(RoomError) {
        try room.requireModerator(by, .lockUnauthorized)
        try state.setLocked(lock)
        if lock { room.home.endRejoining() }
        room.effects.events.append(.lock(locked: lock, by: by))
    }

    /// Switches a role. Promoting someone else to moderator hands the role over: the caller becomes a
    /// participant (EnableX `switchUserRole`). Demoting takes the role away.
    public func setRole(by: String, target: String, role: Role, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let caller = try room.requireModerator(by, .switchRoleUnauthorized)
        let p = try room.participants.admitted(target)
        guard p.role != role else { return }
        p.role = role
        state.participantChanged()
        room.effects.events.append(.role(participant: p.id, role: role, by: by))
        if role == .moderator, caller.index != p.index {
            caller.role = .participant
            room.effects.events.append(.role(participant: caller.id, role: .participant, by: by))
            state.forgetFloor(p.index)
        }
        room.publishingChanged(p, now: now, into: out)
        room.publishingChanged(caller, now: now, into: out)
    }

    // MARK: The lecture floor


    /// The floor protocol (`FloorState.apply`); a new holder, or none, changes who may publish.
    public func floor(by: String, action: FloorAction, target: String? = nil, now: MonoTime,
                      into out: DatagramBatch) throws(RoomError) {
        let caller = try room.participant(by)
        guard room.configuration.mode == .lecture else {
            throw RoomError(.notInLectureMode, .conflict, "floor control is only available in lecture mode")
        }
        let holders = try state.floor(action, caller: caller, target: target.flatMap { room.participants.lookup($0) }, targetID: target)
        room.effects.events.append(.floor(action: action, by: by, target: target, raisedHands: room.raisedHands, approvedHands: room.approvedHands))
        if holders.before != holders.after {
            for i in [holders.before, holders.after].compactMap({ $0 }) {
                if let p = room.participants[i] { room.publishingChanged(p, now: now, into: out) }
            }
        }
    }

    // MARK: Knock-enabled rooms

    /// `p` waits to be let in: it leaves every list a pin or the floor had put it on (what a rejoin restored of
    /// its last time in the room).
    func knocked(_ p: Participant) {
        p.awaited = true
        if state.pins.contains(p.index) || state.floor.names(p.index) {
            if state.forget(p.index) { room.effects.events.append(.pins(room.pinnedIDs)) }
        }
        room.effects.events.append(.participantState(participant: p.id, state: .awaited, reason: "knock"))
        room.effects.events.append(.knock(action: .awaited, participant: p.id, name: p.name, by: nil))
    }

    /// Lets awaited participants in (`ids` nil: everyone who waits): from now on they are in the room as if they
    /// had just joined. Only a moderator may (5003); an id that is not waiting is refused (5126) and nothing
    /// changes. Returns who was let in.
    @discardableResult
    public func approve(by: String, _ ids: [String]?, now: MonoTime, into out: DatagramBatch) throws(RoomError) -> [String] {
        try room.requireModerator(by, .unauthorized)
        let who = try awaited(ids)
        for p in who {
            p.awaited = false
            room.effects.events.append(.knock(action: .approved, participant: p.id, name: p.name, by: by))
            room.effects.events.append(.participantState(participant: p.id, state: .joined, reason: "approved by \(by)"))
        }
        if !who.isEmpty { room.publishingChanged(who, now: now, into: out) }
        return who.map(\.id)
    }

    /// Turns awaited participants away (`ids` nil: everyone who waits): each leaves the room (reason "denied by
    /// ..."), and the node closes its transports. The same rules as `approve`. Returns who was turned away.
    @discardableResult
    public func deny(by: String, _ ids: [String]?, now: MonoTime, into out: DatagramBatch) throws(RoomError) -> [String] {
        try room.requireModerator(by, .unauthorized)
        let who = try awaited(ids)
        for p in who {
            room.effects.events.append(.knock(action: .denied, participant: p.id, name: p.name, by: by))
            room.leave(p, reason: "denied by \(by)")
        }
        if !who.isEmpty { room.refreshAllSubscribers(now: now, into: out) }
        return who.map(\.id)
    }

    /// The awaited participants `ids` names, or all of them; refused whole when one is not waiting here.
    private func awaited(_ ids: [String]?) throws(RoomError) -> [Participant] {
        guard let ids else { return room.participants.inOrder.filter(\.awaited) }
        guard !ids.isEmpty else { throw RoomError(.undefinedClientIDs, .notFound, "no client IDs given") }
        let found = ids.map { room.participants.lookup($0) }
        let notWaiting = zip(ids, found).filter { $0.1?.awaited != true }.map(\.0)
        guard notWaiting.isEmpty else {
            throw RoomError(.undefinedClientIDs, .notFound, "not awaited here: \(notWaiting.joined(separator: ", "))")
        }
        var seen: Set<Int> = []
        return found.compactMap { $0 }.filter { seen.insert($0.index).inserted }
    }
}
