import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// The transport-cc estimator on virtual time, over a simulated bottleneck (`FeedbackLoop`).
@Suite struct GCCEstimatorTests {
    /// Runs `seconds` with the sender sending `rate(estimate)` bits/s in 5 ms bursts of 1200-byte packets;
    /// `probe` may add a probe cluster at a given second. Returns the estimate every 100 ms.
    func run(_ loop: inout FeedbackLoop, _ gcc: inout GCCEstimator, seconds: Double, from start: Double = 0,
             change: (Double, inout SimulatedLink) -> Void = { _, _ in },
             rate: (Double) -> Double, probe: ((Double) -> Double?)? = nil) -> [(t: Double, bps: Double)] {
        var trace: [(Double, Double)] = []
        var credit = 0.0
        var cluster = 0
        let steps = Int(seconds * 200)
        let origin = loop.now
        for k in 1...steps {
            let t = start + Double(k) / 200
            change(t, &loop.link)
            let estimate = Double(gcc.estimate ?? 300_000)
            credit += rate(estimate) / 200 / 8
            while credit >= 1200 { loop.send(size: 1200); credit -= 1200 }
            if let p = probe?(t) {
                // A cluster of 10 packets at rate p: 1200 bytes every 9600/p seconds, within this step or the next.
                cluster += 1
                let spacing = MonoTime.Interval(nanoseconds: Int64(9600 / p * 1e9))
                for i in 0..<10 {
                    _ = loop.advance(to: loop.now + (i == 0 ? MonoTime.Interval(nanoseconds: 0) : spacing)).map { gcc.onPacketFeedback($0, now: loop.now) }
                    loop.send(size: 1200, probeCluster: cluster)
                }
            }
            for fb in loop.advance(to: origin + .milliseconds(Int64(k) * 5)) { gcc.onPacketFeedback(fb, now: loop.now) }
            if k % 20 == 0 { trace.append((t, Double(gcc.estimate ?? 0))) }
        }
        return trace
    }

    @Test func aGreedySenderSettlesNearTheBottleneckWithoutRunningAway() {
        var loop = FeedbackLoop(link: SimulatedLink(capacityBps: 1_000_000))
        var gcc = GCCEstimator(startBitrate: 300_000)
        let trace = run(&loop, &gcc, seconds: 40, rate: { $0 })
        let late = trace.filter { $0.t >= 20 }.map(\.bps)
        #expect(late.min()! > 500_000 && late.max()! < 1_300_000, "estimate between \(late.min()!) and \(late.max()!)")
        #expect(loop.link.queueingDelay(at: loop.now) < .milliseconds(250))
    }

    @Test func aCapFallsAndTheEstimateFollowsWithinSecondsThenRecovers() {
        var loop = FeedbackLoop(link: SimulatedLink(capacityBps: 2_000_000))
        var gcc = GCCEstimator(startBitrate: 300_000)
        var trace = run(&loop, &gcc, seconds: 30, rate: { $0 })
        let before = trace.last!.bps
        #expect(before > 1_200_000, "climbed to \(before) on a 2 Mbit/s link")
        trace = run(&loop, &gcc, seconds: 10, from: 30, change: { _, l in l.capacityBps = 400_000 }, rate: { $0 })
        let capped = trace.filter { $0.t >= 33 }.map(\.bps)
        #expect(capped.max()! < 550_000, "within 3 s of the cap the estimate is under 550 kbit/s: \(capped.max()!)")
        trace = run(&loop, &gcc, seconds: 30, from: 40, change: { _, l in l.capacityBps = 2_000_000 }, rate: { $0 })
        #expect(trace.last!.bps > 1_000_000, "back above 1 Mbit/s after the cap is lifted: \(trace.last!.bps)")
    }

    @Test func randomLossUnderTenPercentHoldsOverTwentyPercentCuts() {
        var loop = FeedbackLoop(link: SimulatedLink(capacityBps: 10_000_000, lossRate: 0.05))
        var gcc = GCCEstimator(startBitrate: 800_000)
        let held = run(&loop, &gcc, seconds: 20, rate: { _ in 800_000 })
        #expect(held.last!.bps >= 700_000, "5 % loss does not collapse the estimate: \(held.last!.bps)")
        loop.link.lossRate = 0.25
        let cut = run(&loop, &gcc, seconds: 10, from: 20, rate: { _ in 800_000 })
        #expect(cut.last!.bps < 0.7 * held.last!.bps, "25 % loss cuts it: \(cut.last!.bps)")
    }

    @Test func anApplicationLimitedSenderLearnsTheLinkOnlyByProbing() {
        var loop = FeedbackLoop(link: SimulatedLink(capacityBps: 5_000_000))
        var gcc = GCCEstimator(startBitrate: 300_000)
        let idle = run(&loop, &gcc, seconds: 20, rate: { _ in 300_000 })
        #expect(idle.last!.bps < 600_000, "sending 300 kbit/s says little about a 5 Mbit/s link: \(idle.last!.bps)")
        let probed = run(&loop, &gcc, seconds: 2, from: 20, rate: { _ in 300_000 }, probe: { t in abs(t - 20.5) < 0.001 ? 3_000_000 : nil })
        #expect(probed.last!.bps > 2_000_000, "a 3 Mbit/s probe that arrives intact lifts it: \(probed.last!.bps)")
        // A probe beyond the link measures the link.
        var loop2 = FeedbackLoop(link: SimulatedLink(capacityBps: 1_500_000))
        var gcc2 = GCCEstimator(startBitrate: 300_000)
        _ = run(&loop2, &gcc2, seconds: 10, rate: { _ in 300_000 })
        _ = run(&loop2, &gcc2, seconds: 2, from: 10, rate: { _ in 300_000 }, probe: { t in abs(t - 10.5) < 0.001 ? 6_000_000 : nil })
        let measured = gcc2.lastProbeResult ?? 0
        #expect(measured > 1_000_000 && measured < 2_000_000, "a 6 Mbit/s probe over 1.5 Mbit/s measures \(measured)")
    }

    /// A sender stamping abs-send-time at `rate` bits/s (1200-byte packets) over `link` for `seconds`.
    func uplink(_ link: inout SimulatedLink, _ est: inout ReceiveSideEstimator, rate: (Double?) -> Double, seconds: Double, from start: MonoTime) -> MonoTime {
        var now = start
        var credit = 0.0
        for _ in 0..<Int(seconds * 200) {
            now = now + .milliseconds(5)
            credit += rate(est.estimate.map { Double($0) }) / 200 / 8
            while credit >= 1200 {
                credit -= 1200
                let abs = UInt32(truncatingIfNeeded: (UInt64(now.nanoseconds) << 18) / 1_000_000_000) & 0xFF_FFFF
                if let arrival = link.transmit(size: 1200, at: now) { est.packet(absSendTime: abs, arrival: arrival, size: 1200) }
            }
        }
        return now
    }

    @Test func aREMBOnlyPublishersUplinkIsEstimatedFromAbsSendTime() throws {
        // A sender that follows the node's REMB (as aiortc and browsers do) over an 800 kbit/s uplink.
        var link = SimulatedLink(capacityBps: 800_000)
        var est = ReceiveSideEstimator()
        _ = uplink(&link, &est, rate: { $0 ?? 300_000 }, seconds: 30, from: .seconds(50))
        let capped = try #require(est.estimate)
        #expect(capped > 400_000 && capped < 1_000_000, "\(capped)")
        // 500 kbit/s over a free 10 Mbit/s link (through abs-send-time wrapping at 64 s): no congestion seen.
        var free = SimulatedLink(capacityBps: 10_000_000)
        var est2 = ReceiveSideEstimator()
        _ = uplink(&free, &est2, rate: { _ in 500_000 }, seconds: 30, from: .seconds(50))
        let open = try #require(est2.estimate)
        #expect(open >= 500_000, "\(open)")
    }
}
