import Testing
@testable import SFU
@testable import SFUBase

@Suite struct TalkerListTests {
    func c(_ speaking: Bool, video: Bool = true) -> TalkerCandidate { .init(speaking: speaking, hasAudio: true, hasVideo: video) }

    @Test func talkersFirstThenPinnedNonTalkersThenRecentFill() {
        // Recency: 3 most recent. 1 and 3 speak; 5 is pinned and silent; 9 is the subscriber.
        let cands: [Int: TalkerCandidate] = [1: c(true), 2: c(false), 3: c(true), 4: c(false), 5: c(false), 9: c(true)]
        let list = TalkerListBuilder.build(recency: [3, 9, 1, 2, 4, 5], candidates: cands, pins: [5], subscriber: 9, length: 4, videos: 2)
        #expect(list.map(\.participant) == [3, 1, 5, 2])
        #expect(list.map(\.pinned) == [false, false, true, false])
        #expect(list.map(\.video) == [true, true, false, false])
        #expect(!list.contains { $0.participant == 9 }, "a subscriber never receives itself")
    }

    @Test func aDominantSpeakerInAPauseKeepsTheFirstPlaceAmongTheSilent() {
        // 2 held the floor briefly after a "yeah" and went ahead of 1 in recency; 1 is still dominant and only
        // pausing between sentences: with one slot, the slot stays with 1 (found by `sfu tune`: a lecture at
        // K = 1 flipped to the student at each of the lecturer's pauses, 23 switches a minute).
        let cands: [Int: TalkerCandidate] = [1: c(false), 2: c(false), 3: c(false)]
        let list = TalkerListBuilder.build(recency: [2, 3, 1], candidates: cands, pins: [], dominant: 1, subscriber: 0, length: 1, videos: 1)
        #expect(list.map(\.participant) == [1])
    }

    @Test func newSpeakerNeverPushesOutPinnedUsers() {
        // K = 3 with 2 pins: exactly one non-pinned talker place (media-core check 9).
        let cands: [Int: TalkerCandidate] = [1: c(true), 2: c(true), 3: c(false), 4: c(false)]
        let list = TalkerListBuilder.build(recency: [2, 1, 3, 4], candidates: cands, pins: [3, 4], subscriber: 0, length: 3, videos: 3)
        #expect(list.map(\.participant) == [2, 3, 4])
    }

    @Test func videoGoesToTheFirstEntriesThatHaveVideo() {
        let cands: [Int: TalkerCandidate] = [1: c(true, video: false), 2: c(true), 3: c(false), 4: c(false)]
        let list = TalkerListBuilder.build(recency: [1, 2, 3, 4], candidates: cands, pins: [], subscriber: 0, length: 4, videos: 2)
        #expect(list.filter(\.video).map(\.participant) == [2, 3], "a video-less talker does not use up a video")
    }

    @Test func subscriberTalkerCountShortensItsList() {
        let cands: [Int: TalkerCandidate] = [1: c(true), 2: c(true), 3: c(true)]
        #expect(TalkerListBuilder.build(recency: [1, 2, 3], candidates: cands, pins: [], subscriber: 0, length: 2, videos: 0).count == 2)
    }
}
