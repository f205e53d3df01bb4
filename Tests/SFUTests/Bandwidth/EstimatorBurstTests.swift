import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// The transport-cc estimator where bursts could fool it, as they did with Chromium over `tc tbf` links
/// (scripts/shaped-test.sh): a token bucket that lets a probe's first packets through at line rate, and the
/// keyframes of videos coming back after a quiet spell queueing for a moment at the bottleneck.
@Suite struct EstimatorBurstTests {
    /// A sender on a `FeedbackLoop`, one millisecond at a time: audio every 10 ms (120 bytes, as two audio
    /// slots send) plus whatever `extra` sends at that millisecond; every feedback goes to the estimator.
    struct Sender {
        var loop: FeedbackLoop
        var gcc = GCCEstimator(startBitrate: 300_000)
        var ms = 0
        var estimates: [(ms: Int, bps: Double)] = []

        init(_ link: SimulatedLink) { loop = FeedbackLoop(link: link) }

        mutating func run(milliseconds: Int, extra: (Int, inout FeedbackLoop) -> Void = { _, _ in }) {
            for _ in 0..<milliseconds {
                ms += 1
                if ms % 10 == 0 { loop.send(size: 120) }
                extra(ms, &loop)
                for fb in loop.advance(to: loop.now + .milliseconds(1)) { gcc.onPacketFeedback(fb, now: loop.now) }
                estimates.append((ms, Double(gcc.estimate ?? 0)))
            }
        }

        /// A probe cluster as the room sends one: `bps` for 30 ms, 300-byte padding packets in 2 ms steps.
        mutating func probe(bps: Double, cluster: Int) {
            let start = ms
            var sent = 0
            run(milliseconds: 40) { at, loop in
                let elapsed = at - start
                guard elapsed <= 30, elapsed % 2 == 0 else { return }
                while sent < Int(bps * Double(elapsed) / 1000 / 8) {
                    loop.send(size: 300, probeCluster: cluster)
                    sent += 300
                }
            }
        }

        func maxEstimate(after start: Int) -> Double { estimates.filter { $0.ms > start }.map(\.bps).max() ?? 0 }
        func minEstimate(after start: Int) -> Double { estimates.filter { $0.ms > start }.map(\.bps).min() ?? 0 }
    }

    @Test func aProbeThroughATokenBucketIsMeasuredOnAllOfItNotOnTheBurstItsFirstPacketsRode() {
        // 400 kbit/s with a 4 KiB bucket (`tc qdisc ... tbf rate 400kbit burst 4kb`), a 1.9 Mbit/s cluster
        // (7 kB: the first 4 kB pass at once). Whenever the receiver's 100 ms feedback falls, the estimate must
        // not read the probe's own rate; measured on the whole cluster a bucket still inflates it (4 kB over
        // the ~70 ms the cluster takes to arrive), so the bound is what the link can deliver in that time.
        var worst = 0.0
        for offset in stride(from: 0, to: 100, by: 10) {
            var s = Sender(SimulatedLink(capacityBps: 400_000, propagation: .milliseconds(20), burstBytes: 4096))
            s.run(milliseconds: 2000 + offset)
            let start = s.ms
            s.probe(bps: 1_900_000, cluster: 1)
            s.run(milliseconds: 400)
            worst = max(worst, s.maxEstimate(after: start))
        }
        #expect(worst < 1_000_000, "a probe through 400 kbit/s and a 4 KiB bucket read up to \(Int(worst / 1000)) kbit/s")
    }

    @Test func keyframesAfterAQuietSpellDoNotTakeTheEstimateBelowWhatTheLinkCarries() {
        // 2 Mbit/s (4 KiB bucket); a probe has found it; then audio only for 5 s (the videos were off, as
        // under a cap); then two videos come back: a 15 kB keyframe from each at once, then 480 kbit/s each
        // (2 kB frames every 33 ms). The keyframes queue for ~60 ms; the estimate must stay where two videos
        // and audio fit (at least 1.5 Mbit/s), not drop to 0.85 x the quiet spell's rate.
        var s = Sender(SimulatedLink(capacityBps: 2_000_000, propagation: .milliseconds(20), burstBytes: 4096))
        s.run(milliseconds: 1000)
        s.probe(bps: 2_400_000, cluster: 1)
        s.run(milliseconds: 5000)
        let before = Double(s.gcc.estimate ?? 0)
        #expect(before > 1_700_000, "the probe found the link: \(Int(before / 1000)) kbit/s")
        let start = s.ms
        s.run(milliseconds: 3000) { at, loop in
            let elapsed = at - start
            if elapsed == 1 { for _ in 0..<25 { loop.send(size: 1200) } }  // two keyframes, forwarded as they come
            if elapsed > 33, elapsed % 33 == 0 { for _ in 0..<4 { loop.send(size: 1000) } }  // a frame of each video
        }
        let low = s.minEstimate(after: start)
        #expect(low >= 1_500_000, "the estimate fell to \(Int(low / 1000)) kbit/s after the keyframes")
    }
}
