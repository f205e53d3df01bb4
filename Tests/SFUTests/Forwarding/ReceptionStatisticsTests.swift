@testable import SFU
@testable import SFUBase
import Testing

/// Receiver-report figures (RFC 3550 appendix A.3 and A.8) and level samples, on their own.
@Suite struct ReceptionStatisticsTests {
    /// Feeds sequence numbers 20 ms apart in arrival and RTP time (48 kHz) from sequence 100.
    func received(_ sequences: [Int64], clockRate: Int = 48_000) -> ReceptionStatistics {
        var r = ReceptionStatistics(clockRate: clockRate)
        for s in sequences {
            let ms = (s - 100) * 20
            r.record(extendedSequence: s, timestamp: UInt32(ms * Int64(clockRate) / 1000), payloadBytes: 100,
                     now: .milliseconds(1_000 + ms))
        }
        return r
    }

    @Test(arguments: [
        // (sequences received, cumulative lost, fraction lost in 1/256)
        (Array(Int64(100)...109), 0, 0),
        (Array(Int64(100)...109).filter { $0 != 103 && $0 != 107 }, 2, 51),  // 2 of 10: 51/256
        (Array(Int64(100)...109) + [105, 106], 0, 0),  // duplicates do not hide loss, nor read as negative loss
        ([100, 109], 8, 204),  // 8 of 10: (8 << 8) / 10, rounded down
    ] as [([Int64], Int32, UInt8)])
    func lossIsCountedAgainstTheExtendedSequenceRange(_ sequences: [Int64], _ cumulative: Int32, _ fraction: UInt8) throws {
        var r = received(sequences)
        let next = r.nextReport(highest: sequences.max()!)
        let report = try #require(next)
        #expect(report.cumulativeLost == cumulative)
        #expect(report.fractionLost == fraction)
    }

    @Test func theFractionLostCoversOnlyTheIntervalSinceThePreviousReport() throws {
        var r = received(Array(Int64(100)...109).filter { $0 != 105 })
        let first = r.nextReport(highest: 109)
        #expect(first?.cumulativeLost == 1 && first?.fractionLost == 25, "1 of 10")
        for s in Int64(110)...119 { r.record(extendedSequence: s, timestamp: 0, payloadBytes: 100, now: .seconds(2)) }
        let second = r.nextReport(highest: 119)
        let next = try #require(second)
        #expect(next.cumulativeLost == 1, "the loss since the start stays")
        #expect(next.fractionLost == 0, "nothing was lost in the new interval")
    }

    @Test func noReportBeforeTheFirstPacket() {
        var r = ReceptionStatistics(clockRate: 90_000)
        #expect(r.nextReport(highest: 0) == nil)
    }

    @Test func jitterIsZeroForEvenArrivalAndFollowsAVaryingTransitTime() {
        #expect(received(Array(Int64(100)...199)).jitter == 0)
        // Every other packet 10 ms late (480 RTP ticks): |D| is 480 each time, so J converges on 480.
        var r = ReceptionStatistics(clockRate: 48_000)
        for i in Int64(0)..<400 {
            r.record(extendedSequence: i, timestamp: UInt32(i * 960), payloadBytes: 100,
                     now: .milliseconds(1_000 + i * 20 + (i % 2 == 0 ? 0 : 10)))
        }
        #expect(abs(r.jitter - 480) < 1)
    }

    @Test(arguments: [
        // (extended sequence, RTP timestamp) after a first packet at (1000, 0) -> samples it is worth
        ([(1001, 960)], [1]),  // 20 ms: one sample
        ([(1001, 480), (1002, 960), (1003, 1440), (1004, 1920)], [0, 1, 0, 1]),  // 10 ms packets: every second one
        ([(1001, 960 * 21)], [21]),  // DTX: 420 ms of silence over contiguous sequence numbers counts
        ([(1005, 960 * 5)], [1]),  // a gap is loss: not filled in
        ([(1001, 960), (1001, 960), (999, 0)], [1, 0, 0]),  // duplicates and reordered packets were counted
    ] as [([(Int64, UInt32)], [Int])])
    func levelsAreSampledOncePerTwentyMillisecondsOfRTPTime(_ packets: [(Int64, UInt32)], _ expected: [Int]) {
        var s = LevelSampler()
        #expect(s.samples(extendedSequence: 1000, timestamp: 0) == 1)
        #expect(packets.map { s.samples(extendedSequence: $0.0, timestamp: $0.1) } == expected)
    }
}
