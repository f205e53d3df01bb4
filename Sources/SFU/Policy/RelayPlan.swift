/// What a room relays to another node of the room (issue 25; docs/cluster.md, Relays): the audio and video of
/// its local top K, pure. The list is the one a local subscriber taking K talkers and `videos` videos would
/// get (talkers first, then pins, then the most recent others), so the room's global top K - ranked from
/// every node's candidates - is always within the union of what the nodes relay, and a relay carries at most
/// K audio and `videos` video streams plus the pins, whatever the room's size.
enum RelayPlan {
    struct Wanted: Equatable {
        /// Participants whose audio the relay carries, most important first.
        var audio: [Int]
        /// Participants whose camera the relay carries.
        var video: [Int]
    }

    /// `exclude`: participants never relayed (those that came from another node: a relay never forwards
    /// what it received from one).
    static func wanted(_ ranking: RoomRanking, k: Int, videos: Int, exclude: Set<Int> = []) -> Wanted {
        let list = ranking.talkers.list(for: Int.min, length: k, videos: videos).filter { !exclude.contains($0.participant) }
        return Wanted(audio: list.filter { ranking.talkers.candidates[$0.participant]?.hasAudio == true }.map(\.participant),
                      video: list.filter(\.video).map(\.participant))
    }
}
