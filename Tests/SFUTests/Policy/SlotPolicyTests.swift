import Testing
@testable import SFU
@testable import SFUBase

/// The slot policy as a table: candidates (already ranked by the talker list), a subscriber's counts and the
/// screen-share rule in, a plan out.
@Suite struct SlotPolicyTests {
    /// Candidates 1-6: 1 and 2 speak, 3 only just started (young), 4-6 are silent; everyone has audio, 5 has
    /// no camera. Recency 1 2 3 4 5 6; 1 is dominant.
    static let candidates: [Int: TalkerCandidate] = [
        1: .init(speaking: true, hasAudio: true, hasVideo: true),
        2: .init(speaking: true, hasAudio: true, hasVideo: true),
        3: .init(speaking: true, hasAudio: true, hasVideo: true, young: true),
        4: .init(speaking: false, hasAudio: true, hasVideo: true),
        5: .init(speaking: false, hasAudio: true, hasVideo: false),
        6: .init(speaking: false, hasAudio: true, hasVideo: true),
    ]

    static func prepared(pins: [Int] = []) -> TalkerListBuilder.Prepared {
        TalkerListBuilder.prepare(recency: [1, 2, 3, 4, 5, 6], candidates: candidates, pins: pins, dominant: 1)
    }

    static func subscriber(_ index: Int = 0, talkerCount: Int? = nil, audio: Int = 3, cameras: Int = 2, screens: Int = 0,
                           videos: Int = 2, showing: [Int?] = [nil, nil]) -> SlotPolicy.Subscriber {
        .init(index: index, talkerCount: talkerCount, audioSlots: audio, cameraSlots: cameras, screenSlots: screens,
              numberOfVideos: videos, cameraAssignments: showing)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var subscriber: SlotPolicy.Subscriber
        var pins: [Int] = []
        var k = 6
        var shares: [SlotPolicy.ScreenShare] = []
        var rule: ScreenShareRule = .always
        var audio: [Int]
        var cameras: [Int]
        var screens: [Int] = []
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        .init(name: "talkers first, then the recent: audio to three, cameras to the first two with video",
              subscriber: subscriber(), audio: [1, 2, 3], cameras: [1, 2]),
        .init(name: "the subscriber never receives itself; a young talker's camera comes after a silent one's",
              subscriber: subscriber(1), audio: [2, 3, 4], cameras: [2, 4]),
        .init(name: "its own talker count cuts the list", subscriber: subscriber(talkerCount: 1), audio: [1], cameras: [1]),
        .init(name: "max_active_talkers cuts it for everyone", subscriber: subscriber(), k: 2, audio: [1, 2], cameras: [1, 2]),
        .init(name: "number_of_videos (ABWD) gives fewer cameras, the audio stays",
              subscriber: subscriber(videos: 1), audio: [1, 2, 3], cameras: [1]),
        .init(name: "a pinned silent participant is in the list, after the talkers",
              subscriber: subscriber(audio: 4, cameras: 4, videos: 4, showing: [nil, nil, nil, nil]), pins: [6],
              audio: [1, 2, 3, 6], cameras: [1, 2, 3, 6]),
        .init(name: "a young talker takes no camera from one still showing (who stays shown outside the list)",
              subscriber: subscriber(cameras: 3, videos: 3, showing: [1, 2, 4]), audio: [1, 2, 3], cameras: [1, 2, 4]),
        .init(name: "a young talker whose camera is already showing keeps it (no switch out and back for a pause)",
              subscriber: subscriber(cameras: 3, videos: 3, showing: [4, 3, 6]), audio: [1, 2, 3], cameras: [1, 2, 3]),
        .init(name: "a young talker takes an empty camera slot",
              subscriber: subscriber(cameras: 3, videos: 3, showing: [1, 2, nil]), audio: [1, 2, 3], cameras: [1, 2, 3]),
        .init(name: "screen shares take the videos first (always: the oldest share first)",
              subscriber: subscriber(screens: 1, videos: 2, showing: [nil, nil]),
              shares: [.init(presenter: 4, since: .seconds(5)), .init(presenter: 6, since: .seconds(2))],
              audio: [1, 2, 3], cameras: [1], screens: [6]),
        .init(name: "a pinned presenter's share before an older one",
              subscriber: subscriber(screens: 1, videos: 3, showing: [nil, nil]),
              shares: [.init(presenter: 4, pinOrder: 0, since: .seconds(5)), .init(presenter: 6, since: .seconds(2))],
              audio: [1, 2, 3], cameras: [1, 2], screens: [4]),
        .init(name: "with_talker: only the shares of the talkers in the list",
              subscriber: subscriber(talkerCount: 2, screens: 1, videos: 3, showing: [nil, nil]),
              shares: [.init(presenter: 2, since: .seconds(9)), .init(presenter: 6, since: .seconds(1))], rule: .talker,
              audio: [1, 2], cameras: [1, 2], screens: [2]),
        .init(name: "its own share is not shown back", subscriber: subscriber(6, screens: 1, videos: 3, showing: [nil, nil]),
              shares: [.init(presenter: 6, since: .seconds(1))], audio: [1, 2, 3], cameras: [1, 2], screens: []),
    ]

    @Test(arguments: cases)
    func aSubscribersPlanFollowsTheRules(_ c: Case) {
        let plan = SlotPolicy.plan(for: c.subscriber, talkers: Self.prepared(pins: c.pins), maxActiveTalkers: c.k, screenShares: c.shares,
                                   rule: c.rule)
        #expect(plan.audio == c.audio)
        #expect(plan.cameras == c.cameras)
        #expect(plan.screens == c.screens)
        #expect(plan.talkers.filter(\.video).allSatisfy { plan.cameras.contains($0.participant) }, "the list's videos have camera slots")
        #expect(!plan.talkers.contains { $0.participant == c.subscriber.index })
    }

    @Test func publishingRulesRefuseWhatModerationSilences() {
        let p = Participant(id: "p", index: 1, name: "p", role: .participant, talkerCount: nil)
        let m = Participant(id: "m", index: 2, name: "m", role: .moderator, talkerCount: nil)
        let group = PublishingRules(mode: .group, floorHolder: nil, roomAudioMuted: false)
        #expect(group.refusal(p, .audio) == nil && group.refusal(p, .video) == nil)
        let muted = PublishingRules(mode: .group, floorHolder: nil, roomAudioMuted: true)
        #expect(muted.refusal(p, .audio) == .hardMuted && muted.refusal(m, .audio) == nil && muted.refusal(p, .video) == nil,
                "a room mute silences everyone's audio but moderators'")
        let lecture = PublishingRules(mode: .lecture, floorHolder: 1, roomAudioMuted: false)
        #expect(lecture.refusal(p, .audio) == nil && lecture.refusal(m, .video) == nil)
        let other = PublishingRules(mode: .lecture, floorHolder: 7, roomAudioMuted: false)
        #expect(other.refusal(p, .audio) == .noFloor && other.refusal(p, .video) == .noFloor && other.refusal(m, .audio) == nil)
        p.hardMutedVideo = true
        #expect(group.refusal(p, .video) == .hardMuted && group.refusal(p, .audio) == nil)
    }
}
