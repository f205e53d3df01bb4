/// Moderator controls (EnableX semantics, `shared/seeds/000_*`): hard mute, pins, lock, roles.
extension Room {
    @discardableResult
    func requireModerator(_ by: String, _ code: ResultCode) throws(RoomError) -> Participant {
        let p = try participant(by)
        guard p.role == .moderator else { throw RoomError(code, .unauthorized, "\(by) is not a moderator") }
        return p
    }

    /// Room-wide audio hard mute: every participant but moderators, late joiners included, is inaudible.
    public func hardMuteRoom(by: String, audio mute: Bool, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        try requireModerator(by, mute ? .roomMuteUnauthorized : .roomUnmuteUnauthorized)
        if mute && roomAudioMuted { throw RoomError(.roomAlreadyMuted, .conflict, "room is already hard-muted") }
        if !mute && !roomAudioMuted { throw RoomError(.roomAlreadyUnmuted, .conflict, "room is not hard-muted") }
        roomAudioMuted = mute
        effects.events.append(.roomHardMute(audio: mute, by: by))
        for p in participants.values.sorted(by: { $0.index < $1.index }) { publishingChanged(p, now: now, into: out) }
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
        effects.events.append(.participantHardMute(participant: p.id, audio: p.hardMutedAudio, video: p.hardMutedVideo, by: by))
        publishingChanged(p, now: now, into: out)
    }

    /// Pins users: always in every list (talkers first, then pinned non-talkers), at most K - 1 of them.
    public func pin(by: String, _ ids: [String], now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        try requireModerator(by, .unauthorized)
        let indices = try resolve(ids)
        var next = pins
        for i in indices where !next.contains(i) { next.append(i) }
        guard next.count <= configuration.maxActiveTalkers - 1 else {
            throw RoomError(.pinLimitReached, .conflict,
                            "at most \(configuration.maxActiveTalkers - 1) users can be pinned (max_active_talkers - 1)")
        }
        pins = next
        effects.events.append(.pins(pinnedIDs))
        refreshAllSubscribers(now: now, into: out)
    }

    public func unpin(by: String, _ ids: [String], now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        try requireModerator(by, .unauthorized)
        let indices = Set(try resolve(ids))
        pins.removeAll { indices.contains($0) }
        effects.events.append(.pins(pinnedIDs))
        refreshAllSubscribers(now: now, into: out)
    }

    public var pinned: [String] { pinnedIDs }

    private func resolve(_ ids: [String]) throws(RoomError) -> [Int] {
        let unknown = ids.filter { participantsByID[$0] == nil }
        guard unknown.isEmpty, !ids.isEmpty else {
            throw RoomError(.undefinedClientIDs, .notFound,
                            ids.isEmpty ? "no client IDs given" : "undefined client IDs: \(unknown.joined(separator: ", "))")
        }
        return ids.map { participantsByID[$0]! }
    }

    public func lock(by: String, locked lock: Bool) throws(RoomError) {
        try requireModerator(by, .lockUnauthorized)
        if lock && locked { throw RoomError(.roomAlreadyLocked, .conflict, "room is already locked") }
        if !lock && !locked { throw RoomError(.roomAlreadyUnlocked, .conflict, "room is already unlocked") }
        locked = lock
        effects.events.append(.lock(locked: lock, by: by))
    }

    /// Switches a role. Promoting someone else to moderator hands the role over: the caller becomes a
    /// participant (EnableX `switchUserRole`). Demoting takes the role away.
    public func setRole(by: String, target: String, role: Role, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let caller = try requireModerator(by, .switchRoleUnauthorized)
        let p = try participant(target)
        guard p.role != role else { return }
        p.role = role
        effects.events.append(.role(participant: p.id, role: role, by: by))
        if role == .moderator, caller.index != p.index {
            caller.role = .participant
            effects.events.append(.role(participant: caller.id, role: .participant, by: by))
            floor.forget(p.index)
        }
        publishingChanged(p, now: now, into: out)
        publishingChanged(caller, now: now, into: out)
    }
}
