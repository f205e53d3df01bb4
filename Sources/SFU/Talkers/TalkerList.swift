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
    /// Speaking, but only just (a "yeah", a cough, a laugh): not the dominant speaker and not yet for
    /// `RoomConfiguration.sustainedSpeech`. Heard at once, but it comes after those who hold the floor and
    /// takes a video only when nobody else would.
    public var young: Bool

    public init(speaking: Bool, hasAudio: Bool, hasVideo: Bool, young: Bool = false) {
        self.speaking = speaking
        self.hasAudio = hasAudio
        self.hasVideo = hasVideo
        self.young = young
    }
}

/// Builds subscribers' ordered active talker lists (EnableX semantics, `media-core.md` section 3).
///
/// Talkers first: the dominant speaker, then those who have been speaking a while in recency order, then
/// those who only just started (pinned talkers always; non-pinned ones up to `length - pins`, at least
/// one), then pinned non-talkers in pin order, then recent non-talkers to fill the list. Videos go to the
/// first entries with video, the just-started talkers last. The subscriber
/// never appears in its own list. `prepare` orders the room once; each subscriber's list then costs
/// O(length + pins), not O(room), which matters for rooms of a thousand.
public enum TalkerListBuilder {
    public static func build(
        recency: [Int], candidates: [Int: TalkerCandidate], pins: [Int], dominant: Int? = nil, subscriber: Int, length: Int,
        videos: Int
    ) -> [TalkerEntry] {
        prepare(recency: recency, candidates: candidates, pins: pins, dominant: dominant)
            .list(for: subscriber, length: length, videos: videos)
    }

    public static func prepare(recency: [Int], candidates: [Int: TalkerCandidate], pins: [Int], dominant: Int? = nil) -> Prepared {
        let pinned = pins.filter { candidates[$0] != nil }
        let pinnedSet = Set(pinned)
        var talkers: [Int] = []
        var young: [Int] = []
        var others: [Int] = []
        if let d = dominant, candidates[d]?.speaking == true { talkers.append(d) }
        for id in recency where id != dominant || candidates[id]?.speaking != true {
            guard let c = candidates[id] else { continue }
            if c.speaking && c.young {
                young.append(id)
            } else if c.speaking {
                talkers.append(id)
            } else if !pinnedSet.contains(id) {
                others.append(id)
            }
        }
        talkers += young
        // A dominant speaker between two sentences is silent for a moment but still the one listeners follow:
        // it leads the silent, or a one-slot subscriber hears someone else's room at each of its pauses.
        if let d = dominant, let i = others.firstIndex(of: d) {
            others.remove(at: i)
            others.insert(d, at: 0)
        }
        return Prepared(candidates: candidates, pinned: pinned, pinnedSet: pinnedSet, talkers: talkers, others: others)
    }

    /// The room's candidates in list order, shared by every subscriber's list.
    public struct Prepared {
        let candidates: [Int: TalkerCandidate]
        let pinned: [Int]
        let pinnedSet: Set<Int>
        /// Speaking candidates in recency order (pinned ones included).
        let talkers: [Int]
        /// Silent, unpinned candidates in recency order.
        let others: [Int]

        public func list(for subscriber: Int, length: Int, videos: Int) -> [TalkerEntry] {
            guard length > 0 else { return [] }
            let pinCount = pinned.count - (pinnedSet.contains(subscriber) ? 1 : 0)
            let talkerBudget = max(1, length - pinCount)
            var list: [TalkerEntry] = []
            list.reserveCapacity(length + pinCount)
            var placedPinned = 0
            var nonPinnedTalkers = 0
            func add(_ id: Int) {
                let c = candidates[id]!
                list.append(TalkerEntry(participant: id, pinned: pinnedSet.contains(id), speaking: c.speaking, video: false))
            }
            for id in talkers where id != subscriber {
                if pinnedSet.contains(id) {
                    add(id)
                    placedPinned += 1
                } else if nonPinnedTalkers < talkerBudget {
                    add(id)
                    nonPinnedTalkers += 1
                } else if placedPinned == pinCount {
                    break  // every pinned talker is placed and the talker budget is spent
                }
            }
            for id in pinned where id != subscriber && !(candidates[id]!.speaking) { add(id) }
            for id in others where list.count < length && id != subscriber { add(id) }
            if list.count > length { list.removeLast(list.count - length) }
            var granted = 0
            for late in [false, true] {
                for i in list.indices where granted < videos && candidates[list[i].participant]!.hasVideo
                    && candidates[list[i].participant]!.young == late {
                    list[i].video = true
                    granted += 1
                }
            }
            return list
        }
    }
}
