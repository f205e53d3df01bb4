import SFU
import Testing

/// The layer allocation rule on its own (rates in kbit/s as bits/s; layers 150k / 500k / 1000k unless said).
@Suite struct LayerAllocatorTests {
    static let three: [Double?] = [150_000, 500_000, 1_000_000]

    func allocate(_ sources: [LayerAllocator.Source], _ budget: Double) -> [Int] {
        LayerAllocator.allocate(sources, budget: budget, upMargin: 1.15)
    }

    @Test func oneSourceTakesTheHighestLayerItsBudgetPays() {
        #expect(allocate([.init(rates: Self.three, shown: nil)], 1_000_000) == [2])
        #expect(allocate([.init(rates: Self.three, shown: nil)], 999_999) == [1])
        #expect(allocate([.init(rates: Self.three, shown: nil)], 100_000) == [0], "the lowest layer even when nothing fits")
    }

    @Test func aLayerAboveTheOneShownMustFitWithTheMarginToSpare() {
        #expect(allocate([.init(rates: Self.three, shown: 1)], 1_100_000) == [1], "1.1 Mbit/s < 1.15 x 1 Mbit/s: stays")
        #expect(allocate([.init(rates: Self.three, shown: 1)], 1_150_000) == [2])
        #expect(allocate([.init(rates: Self.three, shown: 2)], 1_000_000) == [2], "kept without the margin")
    }

    @Test func theFirstSourceIsServedFirstAfterEveryoneHasItsLowestLayer() {
        let two = [LayerAllocator.Source(rates: Self.three, shown: nil), .init(rates: Self.three, shown: nil)]
        // 1.4 Mbit/s: floors 300k, then the first climbs to 1 Mbit/s (850k more), the second keeps 150k.
        #expect(allocate(two, 1_400_000) == [2, 0])
        #expect(allocate(two, 1_500_000) == [2, 1], "350k more pays the second's middle layer")
        #expect(allocate(two, 2_000_000) == [2, 2])
        #expect(allocate(two, 300_000) == [0, 0])
    }

    @Test func aLayerWithoutAMeasuredRateIsNotClimbedToButKeptWhileShown() {
        let unmeasured: [Double?] = [150_000, 500_000, nil]
        #expect(allocate([.init(rates: unmeasured, shown: nil)], 5_000_000) == [1])
        #expect(allocate([.init(rates: unmeasured, shown: 2)], 200_000) == [2], "no evidence yet that it is too dear")
        #expect(allocate([.init(rates: [nil, nil], shown: nil)], 5_000_000) == [0])
    }

    @Test func aSingleLayerSourcePaysItsRateAndLeavesTheRestToOthers() {
        let camera = LayerAllocator.Source(rates: [700_000], shown: 0)
        let simulcast = LayerAllocator.Source(rates: Self.three, shown: nil)
        #expect(allocate([camera, simulcast], 1_300_000) == [0, 1], "600k left after the camera: the middle layer")
    }
}
