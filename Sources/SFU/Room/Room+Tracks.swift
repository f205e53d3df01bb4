/// A participant as the room's calls find it, its slots ended, and its place in talker candidacy (its tracks
/// are bound and ended by `RoomTracks`).
extension Room {
    /// One of this node's own participants: another node's (a room that spans nodes) sends and receives there.
    func ownParticipant(_ id: String) throws(RoomError) -> Participant {
        let p = try participant(id)
        if let origin = p.origin { throw RoomError(.undefinedClientIDs, .notFound, "\(id) is a participant of node \(origin), not of this one") }
        return p
    }

    /// The subscriber's slots end: nothing feeds them any more.
    func unsubscribe(_ p: Participant) {
        p.subscriber?.unbind()
        p.subscriber = nil
    }

    /// Takes a participant out of the detector; a dominant speaker who goes is reported as none.
    func stopSpeaking(_ p: Participant) {
        let wasDominant = election.dominant == p.index
        election.detector.removeSpeaker(p.index)
        if wasDominant, home.followed == nil { effects.events.append(.dominantSpeaker(participant: nil)) }
    }
}
