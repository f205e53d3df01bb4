/// What a participant publishes and receives, as the room's tables see it: its tracks bound into the room's
/// track table, ended, and its place in talker candidacy.
extension Room {
    /// One of this node's own participants: another node's (a room that spans nodes) sends and receives there.
    func ownParticipant(_ id: String) throws(RoomError) -> Participant {
        let p = try participant(id)
        if let origin = p.origin { throw RoomError(.undefinedClientIDs, .notFound, "\(id) is a participant of node \(origin), not of this one") }
        return p
    }

    /// Binds a publisher's tracks to what it now publishes (`Publisher.bind`), keeping the room's track table.
    func bind(_ publisher: Publisher, to published: [TrackDescription]) {
        let owner = publisher.participant.index
        let (ended, _) = publisher.bind(published) { d in
            let t = PublishedTrack(index: nextTrackIndex, owner: owner, description: d, levelSource: configuration.levelSource,
                                       onsetReplay: configuration.onsetReplay)
            nextTrackIndex += 1
            tracks[t.index] = t
            return t
        }
        for t in ended { tracks[t.index] = nil }
    }

    /// The publisher's tracks end: slots they fed stop, and it leaves talker candidacy.
    func unpublish(_ p: Participant) {
        guard let publisher = p.publisher else { return }
        for t in publisher.allTracks { tracks[t.index] = nil }
        if p.origin != nil { publisher.connection.remotePublishers = publisher.connection.remotePublishers.filter { $0.value !== publisher } }
        publisher.endAll()
        p.publisher = nil
        stopSpeaking(p)
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
