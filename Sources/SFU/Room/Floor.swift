/// Lecture-mode floor state (EnableX floor access, `shared/seeds/002_*`): raised hands in request order, at
/// most one holder, pending invitations. Part of the room's `Moderation`, so a reconnecting moderator can read
/// it back.
struct FloorState: Equatable {
    var raised: [Int] = []
    var holder: Int?
    var invited: [Int] = []

    /// Whether participant `i` has a raised hand, the floor or an invitation.
    func names(_ i: Int) -> Bool { holder == i || raised.contains(i) || invited.contains(i) }

    mutating func forget(_ i: Int) {
        raised.removeAll { $0 == i }
        invited.removeAll { $0 == i }
        if holder == i { holder = nil }
    }

    /// The floor protocol, pure: participants request, cancel, finish, accept and reject; moderators grant,
    /// deny, release, invite and cancel invitations (`target` is the participant a moderator's action names).
    /// One holder at a time. Throws the seeds' codes for what the caller may not do now.
    ///
    /// A participant awaited in a knock-enabled room is not in the session yet (EnableX: it cannot
    /// "communicate with others"): it takes no part in the floor - its own actions are refused (5003), and a
    /// moderator's action naming it is refused as naming no one in the session (5045) - so no raised hand,
    /// invitation or floor of its reaches the room before a moderator lets it in.
    mutating func apply(_ action: FloorAction, caller: Participant, target: Participant?, targetID: String?) throws(RoomError) {
        func admittedCaller() throws(RoomError) {
            guard !caller.awaited else {
                throw RoomError(.unauthorized, .unauthorized, "\(caller.id) waits to be let in: no floor actions before a moderator approves it")
            }
        }
        func participantOnly(_ code: ResultCode) throws(RoomError) {
            try admittedCaller()
            guard caller.role == .participant else { throw RoomError(code, .unauthorized, "moderators cannot \(action.rawValue)") }
        }
        func moderatorOnly(_ code: ResultCode) throws(RoomError) -> Participant {
            guard caller.role == .moderator, !caller.awaited else { throw RoomError(code, .unauthorized, "\(caller.id) is not a moderator") }
            guard let target else { throw RoomError(.invalidClientID, .notFound, "invalid client ID \(targetID ?? "(none)")") }
            guard !target.awaited else {
                throw RoomError(.invalidClientID, .notFound, "invalid client ID \(target.id): it waits to be let in, not in the session yet")
            }
            return target
        }
        switch action {
        case .request:
            try participantOnly(.unauthorized)
            guard !raised.contains(caller.index), holder != caller.index else {
                throw RoomError(.floorRequestPending, .conflict, "a floor request is already registered")
            }
            raised.append(caller.index)
        case .cancel:
            try participantOnly(.unauthorized)
            guard raised.contains(caller.index) else { throw RoomError(.floorRequestPending, .conflict, "no floor request to cancel") }
            raised.removeAll { $0 == caller.index }
        case .finish:
            try participantOnly(.unauthorized)
            guard holder == caller.index else { throw RoomError(.floorRequestPending, .conflict, "the floor is not held") }
            holder = nil
        case .grant:
            let t = try moderatorOnly(.grantFloorUnauthorized)
            if holder == t.index { throw RoomError(.floorAlreadyGranted, .conflict, "\(t.id) already has the floor") }
            if holder != nil { throw RoomError(.floorHeldByAnother, .conflict, "release the floor from its holder first") }
            raised.removeAll { $0 == t.index }
            invited.removeAll { $0 == t.index }
            holder = t.index
        case .deny:
            let t = try moderatorOnly(.denyFloorUnauthorized)
            if holder == t.index { throw RoomError(.floorAlreadyGrantedUseRelease, .conflict, "\(t.id) holds the floor: release it instead") }
            guard raised.contains(t.index) else { throw RoomError(.invalidClientID, .notFound, "\(t.id) has not requested the floor") }
            raised.removeAll { $0 == t.index }
        case .release:
            let t = try moderatorOnly(.releaseFloorUnauthorized)
            guard holder == t.index else { throw RoomError(.floorNotHeld, .conflict, "\(t.id) does not hold the floor") }
            holder = nil
        case .invite:
            let t = try moderatorOnly(.releaseFloorUnauthorized)
            if !invited.contains(t.index) { invited.append(t.index) }
        case .cancelInvite:
            let t = try moderatorOnly(.releaseFloorUnauthorized)
            guard invited.contains(t.index) else { throw RoomError(.invalidClientID, .notFound, "\(t.id) is not invited") }
            invited.removeAll { $0 == t.index }
        case .accept:
            try admittedCaller()
            guard caller.role == .participant else { throw RoomError(.releaseFloorUnauthorized, .unauthorized, "moderators cannot accept") }
            guard invited.contains(caller.index) else { throw RoomError(.invalidClientID, .notFound, "\(caller.id) is not invited") }
            if holder != nil { throw RoomError(.floorHeldByAnother, .conflict, "release the floor from its holder first") }
            invited.removeAll { $0 == caller.index }
            raised.removeAll { $0 == caller.index }
            holder = caller.index
        case .reject:
            try admittedCaller()
            guard caller.role == .participant else { throw RoomError(.releaseFloorUnauthorized, .unauthorized, "moderators cannot reject") }
            guard invited.contains(caller.index) else { throw RoomError(.invalidClientID, .notFound, "\(caller.id) is not invited") }
            invited.removeAll { $0 == caller.index }
        }
    }
}
