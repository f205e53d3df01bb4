@testable import SFU
import SFUBase
import Testing

/// A stream's rate over its last two seconds: the mean, and the sustained rate a key frame burst does not move.
@Suite struct RateMeterTests {
    /// 2 s of a 400 kbit/s stream with one 60 kB key frame at 500 ms, measured at 2 s (the seven complete
    /// buckets of 250 ms before it).
    @Test func aKeyFrameBurstRaisesTheMeanButNotTheSustainedRate() {
        var m = RateMeter()
        for ms in stride(from: 0, to: 2000, by: 10) {
            m.add(bytes: 500, now: MonoTime(nanoseconds: Int64(ms) * 1_000_000))  // 500 B per 10 ms = 400 kbit/s
            if ms == 500 { m.add(bytes: 60_000, now: MonoTime(nanoseconds: Int64(ms) * 1_000_000)) }
        }
        let now = MonoTime(nanoseconds: 2_000_000_000)
        let mean = m.bitsPerSecond(now: now)!, sustained = m.sustainedBitsPerSecond(now: now)!
        #expect(abs(sustained - 400_000) < 1, "the median bucket: \(sustained)")
        #expect(mean > 600_000, "the key frame's 480 kbit over 1.75 s: \(mean)")
    }

    /// A screen share at 2 frames a second fills every other bucket: its median would be 0.
    @Test func aStreamOfFewFramesIsMeasuredByItsMean() {
        var m = RateMeter()
        for ms in stride(from: 0, to: 2000, by: 500) { m.add(bytes: 10_000, now: MonoTime(nanoseconds: Int64(ms) * 1_000_000)) }
        let now = MonoTime(nanoseconds: 2_000_000_000)
        #expect(m.sustainedBitsPerSecond(now: now) == m.bitsPerSecond(now: now))
        #expect((m.sustainedBitsPerSecond(now: now) ?? 0) > 100_000)
    }

    @Test func bothAreNilBeforeABucketIsCompleteAndAgreeOnASteadyStream() {
        var m = RateMeter()
        m.add(bytes: 1000, now: .zero)
        #expect(m.sustainedBitsPerSecond(now: MonoTime(nanoseconds: 100_000_000)) == nil)
        for ms in stride(from: 10, to: 1000, by: 10) { m.add(bytes: 1000, now: MonoTime(nanoseconds: Int64(ms) * 1_000_000)) }
        let now = MonoTime(nanoseconds: 1_000_000_000)
        #expect(m.bitsPerSecond(now: now) == m.sustainedBitsPerSecond(now: now))
        #expect(m.sustainedBitsPerSecond(now: now) == 800_000, "four buckets of 1000 B per 10 ms")
    }
}

/// The lowest a downlink estimate has been over a window (what a layer must fit to be climbed to).
@Suite struct EstimateFloorTests {
    func at(_ ms: Int) -> MonoTime { MonoTime(nanoseconds: Int64(ms) * 1_000_000) }

    @Test func theFloorIsTheLowestEstimateOfTheWindowAndForgetsOlderOnes() {
        var f = EstimateFloor()
        #expect(f.floor(over: .seconds(3), now: at(0)) == nil)
        // A sawtooth: 560k tops, a 380k cut at 1 s, then 500k.
        f.note(560_000, now: at(0))
        f.note(380_000, now: at(1000))
        f.note(500_000, now: at(1300))
        f.note(560_000, now: at(2000))
        #expect(f.floor(over: .seconds(3), now: at(2100)) == 380_000)
        #expect(f.floor(over: .milliseconds(500), now: at(2100)) == 560_000, "the cut is older than 500 ms")
        #expect(f.floor(over: .seconds(3), now: at(4200)) == 500_000, "the cut is more than 3 s old (250 ms buckets)")
        #expect(f.floor(over: .seconds(3), now: at(60_000)) == nil, "nothing noted for a minute")
    }
}
