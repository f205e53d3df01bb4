import Testing
@testable import SFU
@testable import SFUBase

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
