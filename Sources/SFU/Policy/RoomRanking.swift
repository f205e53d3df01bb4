/// The room's ranking as every subscriber's slot plan starts from it: who can be forwarded now (candidates,
/// hard mute, the floor and soft mute already applied), ordered once with the pins and the dominant speaker
/// (`TalkerListBuilder.prepare`), and the screen shares that may be shown. Rebuilt whenever lists are.
///
/// Read from the room's parts and nothing else, so that it has one place to change when a room spans nodes
/// (issue 25): there the home node ranks local and relayed candidates and hands the others this ranking.
struct RoomRanking {
    var talkers: TalkerListBuilder.Prepared
    var screenShares: [SlotPolicy.ScreenShare]

    init(participants: some Sequence<Participant>, rules: PublishingRules, election: TalkerElection, pins: [Int]) {
        var candidates: [Int: TalkerCandidate] = [:]
        var shares: [SlotPolicy.ScreenShare] = []
        for p in participants {
            let hasAudio = p.audioTrack != nil && rules.audioAllowed(p)
            let hasVideo = (p.publisher?.videoLive() ?? false) && rules.videoAllowed(p) && !p.videoMuted
            if hasAudio || hasVideo {
                let speaking = hasAudio && election.isSpeaking(p.index)
                candidates[p.index] = TalkerCandidate(speaking: speaking, hasAudio: hasAudio, hasVideo: hasVideo,
                                                      young: speaking && election.isYoung(p.index))
            }
            // A screen share is shown while live and its presenter may send video (not its camera's soft mute).
            if let publisher = p.publisher, publisher.videoLive(.screen), rules.videoAllowed(p) {
                shares.append(SlotPolicy.ScreenShare(presenter: p.index, pinOrder: pins.firstIndex(of: p.index), since: publisher.screenSharedSince))
            }
        }
        talkers = TalkerListBuilder.prepare(recency: election.recency, candidates: candidates, pins: pins, dominant: election.dominant)
        screenShares = shares
    }
}
