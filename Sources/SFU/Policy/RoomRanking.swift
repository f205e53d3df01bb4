/// The room's ranking as every subscriber's slot plan starts from it: who can be forwarded now (candidates,
/// hard mute, the floor and soft mute already applied), ordered once with the pins and the dominant speaker
/// (`TalkerListBuilder.prepare`), and the screen shares that may be shown. Rebuilt whenever lists are.
///
/// Read from the room's parts and nothing else, so that it has one place to change when a room spans nodes
/// (issue 25): there the home node ranks local and relayed candidates and hands the others this ranking.
struct RoomRanking {
    var talkers: TalkerListBuilder.Prepared
    var screenShares: [SlotPolicy.ScreenShare]

    /// Who talks, in what order: this node's own election, or the home's ranking a node of a room that spans
    /// nodes follows (`RoomHome.followRanking`).
    struct TalkerOrder {
        var recency: [Int]
        var speaking: Set<Int>
        var young: Set<Int>
        var dominant: Int?

        init(_ election: TalkerElection) {
            recency = election.recency
            speaking = Set(election.recency.filter { election.isSpeaking($0) })
            young = Set(speaking.filter { election.isYoung($0) })
            dominant = election.dominant
        }

        /// The home's order in this node's indices (`index`: an id to a participant here). Participants the
        /// home does not rank yet (this node's own, not relayed there yet) follow in this node's own order, as
        /// silent: one of them who talks is listed as talking when the home, which its relayed audio reaches,
        /// says so - later for this node's listeners, but the same for everyone in the room.
        init(_ shared: SharedRanking, index: (String) -> Int?, local election: TalkerElection) {
            let ranked = shared.recency.compactMap(index)
            let known = Set(ranked)
            recency = ranked + election.recency.filter { !known.contains($0) }
            speaking = Set(shared.speaking.compactMap(index))
            young = Set(shared.young.compactMap(index))
            dominant = shared.dominant.flatMap(index)
        }
    }

    /// Nobody to show: what a subscriber who may receive nothing (one awaited in a knock-enabled room) is
    /// planned from.
    static var nobody: RoomRanking { RoomRanking(talkers: TalkerListBuilder.prepare(recency: [], candidates: [:], pins: [], dominant: nil), screenShares: []) }

    private init(talkers: TalkerListBuilder.Prepared, screenShares: [SlotPolicy.ScreenShare]) {
        self.talkers = talkers
        self.screenShares = screenShares
    }

    init(participants: some Sequence<Participant>, rules: PublishingRules, election: TalkerElection, pins: [Int]) {
        self.init(participants: participants, rules: rules, order: TalkerOrder(election), pins: pins)
    }

    init(participants: some Sequence<Participant>, rules: PublishingRules, order: TalkerOrder, pins: [Int]) {
        var candidates: [Int: TalkerCandidate] = [:]
        var shares: [SlotPolicy.ScreenShare] = []
        for p in participants {
            let hasAudio = p.audioTrack != nil && rules.audioAllowed(p)
            let hasVideo = (p.publisher?.videoLive() ?? false) && rules.videoAllowed(p) && !p.videoMuted
            if hasAudio || hasVideo {
                let speaking = hasAudio && order.speaking.contains(p.index)
                candidates[p.index] = TalkerCandidate(speaking: speaking, hasAudio: hasAudio, hasVideo: hasVideo,
                                                      young: speaking && order.young.contains(p.index))
            }
            // A screen share is shown while live and its presenter may send video (not its camera's soft mute).
            if let publisher = p.publisher, publisher.videoLive(.screen), rules.videoAllowed(p) {
                shares.append(SlotPolicy.ScreenShare(presenter: p.index, pinOrder: pins.firstIndex(of: p.index), since: publisher.screenSharedSince))
            }
        }
        talkers = TalkerListBuilder.prepare(recency: order.recency, candidates: candidates, pins: pins, dominant: order.dominant)
        screenShares = shares
    }
}
