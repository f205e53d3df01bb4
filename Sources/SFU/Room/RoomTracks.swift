/// The room's track table: every published track by index - what a slot's send log names its packets'
/// sources by, so that a subscriber's NACK is answered from the right track - and the binding of a
/// publisher's tracks into it as it publishes, renegotiates and stops.
///
/// Owns the table and the next index; each track's own state is `PublishedTrack`'s, a publisher's set of
/// tracks is `Publisher`'s.
final class RoomTracks {
    unowned let room: Room
    private(set) var byIndex: [Int: PublishedTrack] = [:]
    private var nextIndex = 0

    init(room: Room) { self.room = room }

    /// Binds a publisher's tracks to what it now publishes (`Publisher.bind`): new tracks join the table,
    /// ended ones leave it.
    func bind(_ publisher: Publisher, to published: [TrackDescription]) {
        let owner = publisher.participant.index
        let c = room.configuration
        let (ended, _) = publisher.bind(published) { d in
            let t = PublishedTrack(index: nextIndex, owner: owner, description: d, levelSource: c.levelSource, onsetReplay: c.onsetReplay)
            nextIndex += 1
            byIndex[t.index] = t
            return t
        }
        for t in ended { byIndex[t.index] = nil }
    }

    /// The participant's tracks end: slots they fed stop, and it leaves talker candidacy.
    func unpublish(_ p: Participant) {
        guard let publisher = p.publisher else { return }
        for t in publisher.allTracks { byIndex[t.index] = nil }
        if p.origin != nil { publisher.connection.remotePublishers = publisher.connection.remotePublishers.filter { $0.value !== publisher } }
        publisher.endAll()
        p.publisher = nil
        room.stopSpeaking(p)
    }

    /// The room's audio level source changed: every audio track measures from the new one.
    func setLevelSource(_ source: LevelSource) {
        for t in byIndex.values where t.kind == .audio { t.meter.setSource(source) }
    }

    /// The room ends: the table empties (the tracks themselves end with their publishers).
    func removeAll() { byIndex.removeAll() }
}
