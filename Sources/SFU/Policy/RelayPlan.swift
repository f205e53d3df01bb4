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
        /// Participants whose screen share the relay carries: every live one of this node's (what any
        /// subscriber of the room could be shown).
        var screen: [Int] = []

        subscript(kind: RelayedKind.Source) -> [Int] {
            switch kind {
            case .audio: audio
            case .camera: video
            case .screen: screen
            }
        }
    }

    /// `exclude`: participants never relayed (those that came from another node: a relay never forwards
    /// what it received from one).
    static func wanted(_ ranking: RoomRanking, k: Int, videos: Int, exclude: Set<Int> = []) -> Wanted {
        // Longer by the excluded candidates, so that K of this node's own remain once they are left out.
        let extra = exclude.count { ranking.talkers.candidates[$0] != nil }
        let list = ranking.talkers.list(for: Int.min, length: k + extra, videos: videos + extra)
            .filter { !exclude.contains($0.participant) }.prefix(k)
        return Wanted(audio: list.filter { ranking.talkers.candidates[$0.participant]?.hasAudio == true }.map(\.participant),
                      video: Array(list.filter(\.video).map(\.participant).prefix(videos)),
                      // Screen shares: at most K, oldest first (a subscriber's screen slots take the oldest too).
                      screen: Array(ranking.screenShares.filter { !exclude.contains($0.presenter) }
                          .sorted { ($0.pinOrder ?? .max, $0.since ?? .zero) < ($1.pinOrder ?? .max, $1.since ?? .zero) }.map(\.presenter).prefix(k)))
    }
}
