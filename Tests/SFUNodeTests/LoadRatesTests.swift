import SFUBase
import Testing
@testable import SFUNode

/// The heartbeat's rates from two readings of the workers' counters (issue 40, defect 1: a stopping node's sum
/// of counters went down and `Int(Double(a &- b) / seconds)` trapped).
@Suite struct LoadRatesTests {
    typealias Reading = LoadRates.Reading
    static func counts(_ i: UInt64, _ o: UInt64) -> LoadRates.Counts { .init(datagramsIn: i, datagramsOut: o) }

    @Test func ratesAreTheWorkersGrowthPerSecond() {
        let a = Reading(at: 10, workers: [0: Self.counts(1_000, 5_000), 1: Self.counts(2_000, 0)], cpuSeconds: 3)
        let b = Reading(at: 12, workers: [0: Self.counts(3_000, 9_000), 1: Self.counts(4_000, 2_000)], cpuSeconds: 4)
        let r = LoadRates(from: a, to: b)
        #expect(r.packetsInPerSecond == 2_000)
        #expect(r.packetsOutPerSecond == 3_000)
        #expect(r.cpu == 0.5)
    }

    @Test func aWorkerThatStoppedSinceTheLastReadingCountsNothingAndTheRatesDoNotTrap() {
        // Worker 1 stopped: the node-wide sum went from 1e6 down to 1e5, whose wrapped difference is ~1.8e19.
        let a = Reading(at: 10, workers: [0: Self.counts(100_000, 100_000), 1: Self.counts(900_000, 900_000)], cpuSeconds: 3)
        let b = Reading(at: 11, workers: [0: Self.counts(100_500, 100_700)], cpuSeconds: 3.2)
        let r = LoadRates(from: a, to: b)
        #expect(r.packetsInPerSecond == 500)
        #expect(r.packetsOutPerSecond == 700)
    }

    @Test func aCounterThatWentDownAndNoTimePassingGiveZeroNotATrap() {
        let a = Reading(at: 10, workers: [0: Self.counts(.max, 7)], cpuSeconds: 3)
        let b = Reading(at: 10, workers: [0: Self.counts(0, 9)], cpuSeconds: 2)
        let r = LoadRates(from: a, to: b)
        #expect(r == LoadRates())
        let later = Reading(at: 9, workers: [0: Self.counts(1, 1)], cpuSeconds: .nan)
        #expect(LoadRates(from: a, to: later) == LoadRates())
    }

    @Test func conversionsFromDoubleSaturate() {
        #expect(Int(saturating: .nan) == 0)
        #expect(Int(saturating: .infinity) == .max)
        #expect(Int(saturating: -.infinity) == .min)
        #expect(Int(saturating: 1.8e19) == .max)
        #expect(Int(saturating: -12.9) == -12)
        #expect(UInt64(5).growth(since: 9) == 0)
        #expect(UInt64.max.perSecond(since: 0, seconds: 1e-9) == .max)
        #expect(UInt64(10).perSecond(since: 0, seconds: 0) == 0)
    }
}
