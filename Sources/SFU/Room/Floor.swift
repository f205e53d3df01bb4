/// Lecture-mode floor state (EnableX floor access, `shared/seeds/002_*`): raised hands in request order, at
/// most one holder, pending invitations. Kept in the room so a reconnecting moderator can read it back.
struct FloorState {
    var raised: [Int] = []
    var holder: Int?
    var invited: [Int] = []

    mutating func forget(_ i: Int) {
        raised.removeAll { $0 == i }
        invited.removeAll { $0 == i }
        if holder == i { holder = nil }
    }
}

extension Room {
    public var raisedHands: [String] { floor.raised.compactMap { participants[$0]?.id } }
    public var approvedHands: [String] { floor.holder.flatMap { participants[$0]?.id }.map { [$0] } ?? [] }

    /// The floor protocol. Participants request, cancel, finish, accept and reject; moderators grant, deny,
    /// release, invite and cancel invitations. One holder at a time; only moderators and the holder publish.
    public func floor(by: String, action: FloorAction, target: String? = nil, now: MonoTime,
                      into out: DatagramBatch) throws(RoomError) {
        let caller = try participant(by)
        guard configuration.mode == .lecture else {
            throw RoomError(.notInLectureMode, .conflict, "floor control is only available in lecture mode")
        }
        func participantOnly(_ code: ResultCode) throws(RoomError) {
            guard caller.role == .participant else { throw RoomError(code, .unauthorized, "moderators cannot \(action.rawValue)") }
        }
        func moderatorOnly(_ code: ResultCode) throws(RoomError) -> Participant {
            guard caller.role == .moderator else { throw RoomError(code, .unauthorized, "\(by) is not a moderator") }
            guard let target, let i = participantsByID[target], let t = participants[i] else {
                throw RoomError(.invalidClientID, .notFound, "invalid client ID \(target ?? "(none)")")
            }
            return t
        }
        let before = floor.holder
        switch action {
        case .request:
            try participantOnly(.unauthorized)
            guard !floor.raised.contains(caller.index), floor.holder != caller.index else {
                throw RoomError(.floorRequestPending, .conflict, "a floor request is already registered")
            }
            floor.raised.append(caller.index)
        case .cancel:
            try participantOnly(.unauthorized)
            guard floor.raised.contains(caller.index) else {
                throw RoomError(.floorRequestPending, .conflict, "no floor request to cancel")
            }
            floor.raised.removeAll { $0 == caller.index }
        case .finish:
            try participantOnly(.unauthorized)
            guard floor.holder == caller.index else { throw RoomError(.floorRequestPending, .conflict, "the floor is not held") }
            floor.holder = nil
        case .grant:
            let t = try moderatorOnly(.grantFloorUnauthorized)
            if floor.holder == t.index { throw RoomError(.floorAlreadyGranted, .conflict, "\(t.id) already has the floor") }
            if floor.holder != nil { throw RoomError(.floorHeldByAnother, .conflict, "release the floor from its holder first") }
            floor.raised.removeAll { $0 == t.index }
            floor.invited.removeAll { $0 == t.index }
            floor.holder = t.index
        case .deny:
            let t = try moderatorOnly(.denyFloorUnauthorized)
            if floor.holder == t.index {
                throw RoomError(.floorAlreadyGrantedUseRelease, .conflict, "\(t.id) holds the floor: release it instead")
            }
            guard floor.raised.contains(t.index) else { throw RoomError(.invalidClientID, .notFound, "\(t.id) has not requested the floor") }
            floor.raised.removeAll { $0 == t.index }
        case .release:
            let t = try moderatorOnly(.releaseFloorUnauthorized)
            guard floor.holder == t.index else { throw RoomError(.floorNotHeld, .conflict, "\(t.id) does not hold the floor") }
            floor.holder = nil
        case .invite:
            let t = try moderatorOnly(.releaseFloorUnauthorized)
            if !floor.invited.contains(t.index) { floor.invited.append(t.index) }
        case .cancelInvite:
            let t = try moderatorOnly(.releaseFloorUnauthorized)
            guard floor.invited.contains(t.index) else { throw RoomError(.invalidClientID, .notFound, "\(t.id) is not invited") }
            floor.invited.removeAll { $0 == t.index }
        case .accept:
            guard caller.role == .participant else { throw RoomError(.releaseFloorUnauthorized, .unauthorized, "moderators cannot accept") }
            guard floor.invited.contains(caller.index) else { throw RoomError(.invalidClientID, .notFound, "\(by) is not invited") }
            if floor.holder != nil { throw RoomError(.floorHeldByAnother, .conflict, "release the floor from its holder first") }
            floor.invited.removeAll { $0 == caller.index }
            floor.raised.removeAll { $0 == caller.index }
            floor.holder = caller.index
        case .reject:
            guard caller.role == .participant else { throw RoomError(.releaseFloorUnauthorized, .unauthorized, "moderators cannot reject") }
            guard floor.invited.contains(caller.index) else { throw RoomError(.invalidClientID, .notFound, "\(by) is not invited") }
            floor.invited.removeAll { $0 == caller.index }
        }
        effects.events.append(.floor(action: action, by: by, target: target, raisedHands: raisedHands, approvedHands: approvedHands))
        if before != floor.holder {
            for i in [before, floor.holder].compactMap({ $0 }) {
                if let p = participants[i] { publishingChanged(p, now: now, into: out) }
            }
        }
    }
}
