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

@Suite struct VideoCountPolicyTests {
    /// Feeds one estimate per second; returns the alerts' video counts.
    func run(_ estimates: [Int], start: Int = 1, audio: Int = 80) -> (Int, [Int]) {
        var p = VideoCountPolicy(initial: start)
        var alerts: [Int] = []
        for (i, b) in estimates.enumerated() {
            if let a = p.update(estimateKbps: b, streamKbps: 80, audioKbps: audio, maxVideos: 6, now: .milliseconds(Int64(i) * 1000)) {
                alerts.append(a.numberOfVideos)
            }
        }
        return (p.numberOfVideos, alerts)
    }

    // media-core.md section 4 checks (S = 80 kbps, two talkers' audio reserve).
    @Test func enableXExample240GivesTwoVideos() { #expect(run([240]).0 == 2) }
    @Test func threeHundredStaysAtTwo() { #expect(run([240, 300, 300, 300, 300, 300, 300, 300]).1 == [2]) }
    @Test func threeSixtyHeldThreeSecondsGivesThree() {
        let (n, alerts) = run([240] + Array(repeating: 360, count: 8))
        #expect(n == 3 && alerts == [2, 3])
    }
    @Test func threeThirtyKeepsThree() { #expect(run([240] + Array(repeating: 360, count: 8) + Array(repeating: 330, count: 5)).0 == 3) }
    @Test func threeTenHeldOneSecondDropsToTwo() {
        let (n, alerts) = run([240] + Array(repeating: 360, count: 8) + [310, 310])
        #expect(n == 2 && alerts == [2, 3, 2])
    }
    @Test func flappingEstimateRaisesNoAlert() {
        let (_, alerts) = run([300] + (0..<20).map { $0 % 2 == 0 ? 370 : 300 })
        #expect(alerts == [2], "only the first estimate's settle")
    }
    @Test func anEstimateLimitedByWhatIsSentNeverTakesVideosAway() {
        // A browser that has received only audio (40 kbps) reports ~1.5x that; S = R = 300 kbps.
        var parameters = VideoCountPolicy.Parameters()
        parameters.settlePeriod = .seconds(2)
        var p = VideoCountPolicy(parameters: parameters, initial: 1)
        func feed(_ b: Int, sent: Int, at s: Int64) -> VideoCountPolicy.Alert? {
            p.update(estimateKbps: b, streamKbps: 300, audioKbps: 40, maxVideos: 4, sentKbps: sent, now: .milliseconds(s * 1000))
        }
        #expect(feed(70, sent: 400, at: 0) == nil && p.numberOfVideos == 1, "while the estimate settles, one video stays")
        #expect(feed(70, sent: 40, at: 1) == nil && feed(70, sent: 40, at: 3) == nil && p.numberOfVideos == 1, "app-limited")
        #expect(feed(900, sent: 600, at: 4) == nil && p.numberOfVideos == 1)
        // Congestion: the estimate falls below what is sent.
        _ = feed(400, sent: 600, at: 5)
        #expect(feed(400, sent: 600, at: 6)?.numberOfVideos == 0, "a real drop still lowers the count after 1 s")
    }

    @Test func aBrowsersClimbingEstimateKeepsOneVideoUntilItLevelsOff() {
        // Chromium: first REMB ~170 kbps, +8 %/s while it receives ~420 kbps of video; S = R = 300 kbps.
        var p = VideoCountPolicy(parameters: .forRealReceivers, initial: 1)
        var b = 170.0
        for s in 0..<14 {
            #expect(p.update(estimateKbps: Int(b), streamKbps: 300, audioKbps: 40, maxVideos: 4, sentKbps: 420,
                             now: .milliseconds(Int64(s) * 1000)) == nil, "second \(s): \(Int(b)) kbps")
            b *= 1.08
        }
        #expect(p.numberOfVideos == 1, "still climbing past 8 s: not settled, one video kept")
        // Levelled off at ~1.5 x what it receives: one video fits, and it stays.
        for s in 14..<24 { _ = p.update(estimateKbps: 640, streamKbps: 300, audioKbps: 40, maxVideos: 4, sentKbps: 420, now: .milliseconds(Int64(s) * 1000)) }
        #expect(p.numberOfVideos == 1)
        // Then real congestion: far below what is sent.
        _ = p.update(estimateKbps: 150, streamKbps: 300, audioKbps: 40, maxVideos: 4, sentKbps: 420, now: .milliseconds(25_000))
        #expect(p.numberOfVideos == 0)
    }

    @Test func collapseDropsAtOnce() {
        var p = VideoCountPolicy(initial: 1)
        _ = p.update(estimateKbps: 240, streamKbps: 80, audioKbps: 80, maxVideos: 6, now: .zero)
        let a = p.update(estimateKbps: 100, streamKbps: 80, audioKbps: 80, maxVideos: 6, now: .milliseconds(100))
        #expect(a == .init(bandwidthKbps: 100, streamBandwidthKbps: 80, numberOfVideos: 0))
    }
}

@Suite struct SlotRewriterTests {
    @Test func switchKeepsSequenceGaplessAndTimestampsWallClockConsistent() {
        var r = SlotRewriter(clockRate: 48_000, framesSpanPackets: false)
        r.switchTo(1)
        var outs: [SlotRewriter.Output] = []
        for i in 0..<10 {
            outs.append(r.rewrite(extendedSequence: 65530 + Int64(i), timestamp: UInt32(4_294_960_000) &+ UInt32(i * 960),
                                  marker: false, vp8: nil, now: .milliseconds(Int64(i) * 20))!)
        }
        r.switchTo(2)
        // The new source's numbering is unrelated; 100 ms of wall time passed since the last output.
        let first = r.rewrite(extendedSequence: 7, timestamp: 123, marker: false, vp8: nil, now: .milliseconds(280))!
        let second = r.rewrite(extendedSequence: 8, timestamp: 123 + 960, marker: false, vp8: nil, now: .milliseconds(300))!
        #expect(first.firstAfterSwitch && !second.firstAfterSwitch)
        #expect(first.sequenceNumber == outs.last!.sequenceNumber &+ 1)
        #expect(second.sequenceNumber == first.sequenceNumber &+ 1)
        #expect(first.timestamp &- outs.last!.timestamp == 100 * 48)
        #expect(r.rewrite(extendedSequence: 6, timestamp: 0, marker: false, vp8: nil, now: .milliseconds(300)) == nil,
                "older packets of the new source are stale")
    }

    @Test func aLatePacketIsPlacedOnlyWithinTheReplayWindow() {
        // A packet far behind the newest (a publisher's sequence numbers jumping 30,000 ahead, then one from the
        // gap) would be numbered 30,000 back: the receiver's SRTP (and the node's own protect) refuse that as a
        // replay, so it is stale, not sent.
        var r = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        r.switchTo(1)
        _ = r.rewrite(extendedSequence: 100, timestamp: 0, marker: true, vp8: nil, now: .zero)
        _ = r.rewrite(extendedSequence: 30_100, timestamp: 900, marker: true, vp8: nil, now: .milliseconds(20))
        #expect(r.rewrite(extendedSequence: 30_100 - SlotRewriter.lateWindow - 1, timestamp: 450, marker: true, vp8: nil, now: .milliseconds(30)) == nil)
        let near = r.rewrite(extendedSequence: 30_100 - SlotRewriter.lateWindow, timestamp: 450, marker: true, vp8: nil, now: .milliseconds(30))
        #expect(near?.sequenceNumber == UInt16(30_100 - SlotRewriter.lateWindow), "within the window it takes its place")
    }

    @Test func switchAfterADayIdleAdvancesTimestampWithoutOverflow() {
        var r = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        r.switchTo(1)
        let a = r.rewrite(extendedSequence: 1, timestamp: 0, marker: true, vp8: nil, now: .zero)!
        r.switchTo(2)
        let b = r.rewrite(extendedSequence: 9, timestamp: 77, marker: true, vp8: nil, now: .seconds(86_400 * 3))!
        #expect(b.sequenceNumber == a.sequenceNumber &+ 1)
        #expect(b.timestamp == 3600 * 90_000, "the advance is capped at one hour")
    }

    @Test func videoSwitchAfterCutFrameLeavesOneSequenceGap() {
        var r = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        r.switchTo(1)
        let a = r.rewrite(extendedSequence: 100, timestamp: 0, marker: false, vp8: nil, now: .zero)!  // frame not finished
        r.switchTo(2)
        let b = r.rewrite(extendedSequence: 5000, timestamp: 0, marker: true, vp8: nil, now: .milliseconds(10))!
        #expect(b.sequenceNumber == a.sequenceNumber &+ 2)
    }

    @Test func vp8PictureIDAndTL0ContinueAcrossSwitch() throws {
        func desc(_ pid: UInt16, _ tl0: UInt8) -> VP8Descriptor {
            var b: [UInt8] = [0x90, 0xC0, 0x80 | UInt8(pid >> 8), UInt8(pid & 0xFF), tl0, 0x00]
            return b.withUnsafeMutableBytes { VP8Descriptor.parse(UnsafeRawBufferPointer($0)) }.successValue!
        }
        var r = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        r.switchTo(1)
        let a = r.rewrite(extendedSequence: 1, timestamp: 0, marker: true, vp8: desc(0x7FFF, 255), now: .zero)!
        r.switchTo(2)
        let b = r.rewrite(extendedSequence: 900, timestamp: 5, marker: true, vp8: desc(1234, 17), now: .milliseconds(33))!
        let c = r.rewrite(extendedSequence: 901, timestamp: 3005, marker: true, vp8: desc(1235, 18), now: .milliseconds(66))!
        #expect(a.pictureID == 0x7FFF && b.pictureID == 0 && c.pictureID == 1)
        #expect(a.tl0PicIdx == 255 && b.tl0PicIdx == 0 && c.tl0PicIdx == 1)
    }
}
