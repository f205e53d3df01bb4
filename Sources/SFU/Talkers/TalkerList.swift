/// One entry of a subscriber's active talker list.
public struct TalkerEntry: Equatable, Sendable {
    public var participant: Int
    public var pinned: Bool
    public var speaking: Bool
    /// Whether this entry gets a video slot (the first `number_of_videos` video-capable entries do).
    public var video: Bool

    public init(participant: Int, pinned: Bool, speaking: Bool, video: Bool) {
        self.participant = participant
        self.pinned = pinned
        self.speaking = speaking
        self.video = video
    }
}

/// What the talker list needs to know about a participant that can be forwarded.
public struct TalkerCandidate: Equatable, Sendable {
    public var speaking: Bool
    /// Publishes audio that may be forwarded (not hard-muted, has the floor).
    public var hasAudio: Bool
    /// Publishes video that may be forwarded (not video-muted, not hard-muted, has the floor).
    public var hasVideo: Bool

    public init(speaking: Bool, hasAudio: Bool, hasVideo: Bool) {
        self.speaking = speaking
        self.hasAudio = hasAudio
        self.hasVideo = hasVideo
    }
}

/// Builds a subscriber's ordered active talker list (EnableX semantics, `media-core.md` section 3).
///
/// Talkers first, in recency order (pinned talkers always; non-pinned ones up to `length - pins`, at least
/// one), then pinned non-talkers in pin order, then recent non-talkers to fill the list. The subscriber
/// never appears in its own list.
public enum TalkerListBuilder {
    public static func build(
        recency: [Int], candidates: [Int: TalkerCandidate], pins: [Int], subscriber: Int, length: Int, videos: Int
    ) -> [TalkerEntry] {
        guard length > 0 else { return [] }
        let pinned = pins.filter { $0 != subscriber && candidates[$0] != nil }
        let pinnedSet = Set(pinned)
        let talkerBudget = max(1, length - pinned.count)
        var list: [TalkerEntry] = []
        var listed = Set<Int>()
        var nonPinnedTalkers = 0

        func add(_ id: Int) {
            let c = candidates[id]!
            list.append(TalkerEntry(participant: id, pinned: pinnedSet.contains(id), speaking: c.speaking, video: false))
            listed.insert(id)
        }

        for id in recency where id != subscriber {
            guard let c = candidates[id], c.speaking else { continue }
            if pinnedSet.contains(id) {
                add(id)
            } else if nonPinnedTalkers < talkerBudget {
                add(id)
                nonPinnedTalkers += 1
            }
        }
        for id in pinned where !listed.contains(id) { add(id) }
        for id in recency where list.count < length && id != subscriber && !listed.contains(id) && candidates[id] != nil {
            add(id)
        }
        if list.count > length { list.removeLast(list.count - length) }
        var granted = 0
        for i in list.indices where granted < videos && candidates[list[i].participant]!.hasVideo {
            list[i].video = true
            granted += 1
        }
        return list
    }
}
