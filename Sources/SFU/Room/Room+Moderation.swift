/// Moderator controls (EnableX semantics, `shared/seeds/000_*` and `002_*`): hard mute, pins, lock, roles and
/// the lecture floor. `Moderation` decides whether a command applies; the room applies what follows.
extension Room {
    @discardableResult
    func requireModerator(_ by: String, _ code: ResultCode) throws(RoomError) -> Participant {
        let p = try participant(by)
        try Moderation.requireModerator(p, code)
        return p
    }

    /// Room-wide audio hard mute: every participant but moderators, late joiners included, is inaudible.
    public func hardMuteRoom(by: String, audio mute: Bool, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        try requireModerator(by, mute ? .roomMuteUnauthorized : .roomUnmuteUnauthorized)
        try moderation.setRoomAudioMuted(mute)
        effects.events.append(.roomHardMute(audio: mute, by: by))
        publishingChanged(participants.inOrder, now: now, into: out)
    }

    /// Per-participant hard mute of audio and/or video; `nil` leaves that kind as it is.
    public func hardMute(by: String, target: String, audio: Bool?, video: Bool?, now: MonoTime,
                         into out: DatagramBatch) throws(RoomError) {
        guard audio != nil || video != nil else {
            throw RoomError(.invalidSetting, .invalid, "hard mute needs audio or video")
        }
        if let a = audio { try requireModerator(by, a ? .hardMuteAudioUnauthorized : .hardUnmuteAudioUnauthorized) }
        if let v = video { try requireModerator(by, v ? .hardMuteVideoUnauthorized : .hardUnmuteVideoUnauthorized) }
        let p = try participant(target)
        if let a = audio { p.hardMutedAudio = a }
        if let v = video { p.hardMutedVideo = v }
        moderation.participantChanged()
        effects.events.append(.participantHardMute(participant: p.id, audio: p.hardMutedAudio, video: p.hardMutedVideo, by: by))
        publishingChanged(p, now: now, into: out)
    }

    /// Pins users: always in every list (talkers first, then pinned non-talkers), at most K - 1 of them.
    public func pin(by: String, _ ids: [String], now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        try requireModerator(by, .unauthorized)
        try moderation.pin(try participants.resolve(ids), maxActiveTalkers: configuration.maxActiveTalkers)
        effects.events.append(.pins(pinnedIDs))
        refreshAllSubscribers(now: now, into: out)
    }

    public func unpin(by: String, _ ids: [String], now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        try requireModerator(by, .unauthorized)
        moderation.unpin(Set(try participants.resolve(ids)))
        effects.events.append(.pins(pinnedIDs))
        refreshAllSubscribers(now: now, into: out)
    }

    public var pinned: [String] { pinnedIDs }
    var pinnedIDs: [String] { moderation.pins.compactMap { participants[$0]?.id } }

    public func lock(by: String, locked lock: Bool) throws(RoomError) {
        try requireModerator(by, .lockUnauthorized)
        try moderation.setLocked(lock)
        if lock { home.endRejoining() }
        effects.events.append(.lock(locked: lock, by: by))
    }

    /// Switches a role. Promoting someone else to moderator hands the role over: the caller becomes a
    /// participant (EnableX `switchUserRole`). Demoting takes the role away.
    public func setRole(by: String, target: String, role: Role, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let caller = try requireModerator(by, .switchRoleUnauthorized)
        let p = try participant(target)
        guard p.role != role else { return }
        p.role = role
        moderation.participantChanged()
        effects.events.append(.role(participant: p.id, role: role, by: by))
        if role == .moderator, caller.index != p.index {
            caller.role = .participant
            effects.events.append(.role(participant: caller.id, role: .participant, by: by))
            moderation.forgetFloor(p.index)
        }
        publishingChanged(p, now: now, into: out)
        publishingChanged(caller, now: now, into: out)
    }

    // MARK: The lecture floor

    public var raisedHands: [String] { moderation.floor.raised.compactMap { participants[$0]?.id } }
    public var approvedHands: [String] { moderation.floor.holder.flatMap { participants[$0]?.id }.map { [$0] } ?? [] }

    /// The floor protocol (`FloorState.apply`); a new holder, or none, changes who may publish.
    public func floor(by: String, action: FloorAction, target: String? = nil, now: MonoTime,
                      into out: DatagramBatch) throws(RoomError) {
        let caller = try participant(by)
        guard configuration.mode == .lecture else {
            throw RoomError(.notInLectureMode, .conflict, "floor control is only available in lecture mode")
        }
        let holders = try moderation.floor(action, caller: caller, target: target.flatMap { participants.lookup($0) }, targetID: target)
        effects.events.append(.floor(action: action, by: by, target: target, raisedHands: raisedHands, approvedHands: approvedHands))
        if holders.before != holders.after {
            for i in [holders.before, holders.after].compactMap({ $0 }) {
                if let p = participants[i] { publishingChanged(p, now: now, into: out) }
            }
        }
    }
}
