/// The subscriber's talker list and slot map as last reported (`active_talkers`).
extension Subscriber {
    /// Takes the list the policy gave and the slots as they are now; when either changed since the last
    /// report, returns the event and how many slots took a new participant (a talker switch as the
    /// subscriber sees it). `names` gives a participant's id.
    func noteSlotMap(talkers list: [TalkerEntry], names: (Int) -> String?) -> (event: RoomEvent, switches: Int)? {
        let map = audioSlots.map(\.assigned) + videoSlots.map(\.assigned)
        let layers = videoSlots.map { [$0.layerShown, $0.layers.wantedTemporal.map(Int.init)] }
        let codecs = videoSlots.map(\.codecShown)
        guard list != talkers || map != lastEmittedMap || layers != lastEmittedLayers || codecs != lastEmittedCodecs else { return nil }
        let switches = zip(map, lastEmittedMap).filter { $0 != $1 && $0 != nil }.count
        lastEmittedLayers = layers
        lastEmittedCodecs = codecs
        talkers = list
        lastEmittedMap = map
        let entries = list.compactMap { e in
            names(e.participant).map { RoomEvent.Talker(participant: $0, pinned: e.pinned, speaking: e.speaking, video: e.video) }
        }
        let slots = audioSlots.map { RoomEvent.SlotAssignment(mid: $0.description.mid, kind: .audio, participant: $0.assignee?.id) }
            + videoSlots.map {
                RoomEvent.SlotAssignment(mid: $0.description.mid, kind: .video, participant: $0.assignee?.id, layer: $0.layerShown,
                                         temporalLayer: $0.layers.wantedTemporal.map(Int.init), codec: $0.codecShown, source: $0.description.source)
            }
        return (.activeTalkers(subscriber: participant.id, talkers: entries, slots: slots), switches)
    }
}
