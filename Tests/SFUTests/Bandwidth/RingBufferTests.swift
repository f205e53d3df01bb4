import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// The estimator's sliding windows: a ring must behave as the Array it replaced.
@Suite struct RingBufferTests {
    @Test func aRingKeepsFirstInFirstOutOrderThroughGrowthAndWrap() {
        var rng = SplitMix64(seed: 3)
        var ring = RingBuffer<Int>(capacity: 2)
        var model: [Int] = []
        for i in 0..<5000 {
            switch rng.next() % 10 {
            case 0..<5:
                ring.append(i)
                model.append(i)
            case 5..<9:
                if !model.isEmpty { #expect(ring.removeFirst() == model.removeFirst()) }
            default:
                let m = Int(rng.next() % 5) + 2
                ring.removeAll { $0 % m == 0 }
                model.removeAll { $0 % m == 0 }
            }
            #expect(Array(ring) == model)
            #expect(ring.first == model.first && ring.last == model.last)
        }
    }
}
