import SFU
import Testing

/// The slot rules on their own: which slot each wanted source takes (media-core.md, slots).
@Suite struct SlotPlannerTests {
    typealias Move = SlotPlanner.Move

    @Test(arguments: [
        // (what the slots show, who is wanted in priority order, the moves)
        ([1, 2, 3], [3, 1, 2], [Move]()),  // same sources in a new order: nobody moves
        ([1, 2, 3], [4, 1, 2], [.place(source: 4, slot: 2)]),  // the newcomer takes the evicted source's slot
        ([1, nil, 3], [4, 1, 3], [.place(source: 4, slot: 1)]),  // an empty slot when nobody is evicted
        ([1, nil, 3], [4, 5, 1], [.place(source: 4, slot: 2), .place(source: 5, slot: 1)]),  // evicted first, then empty
        ([1, 2, 3], [1], [.clear(slot: 1), .clear(slot: 2)]),  // evicted and not replaced: cleared
        ([nil, nil], [7, 8, 9], [.place(source: 7, slot: 0), .place(source: 8, slot: 1)]),  // more wanted than slots: the rest wait
        ([1, 2], [], [.clear(slot: 0), .clear(slot: 1)]),
        ([Int?](), [1], [Move]()),  // no slots
        ([nil, 2, nil], [2], [Move]()),
    ] as [([Int?], [Int], [Move])])
    func slotsAreStickyAndNewcomersTakeEvictedSlotsFirst(_ current: [Int?], _ wanted: [Int], _ moves: [Move]) {
        #expect(SlotPlanner.plan(current: current, wanted: wanted) == moves)
    }

    @Test func afterTheMovesEverySlotShowsAWantedSourceOrNothingAndNoSourceTwice() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let slots = Int.random(in: 0...6, using: &rng)
            var current: [Int?] = (0..<slots).map { _ in Bool.random(using: &rng) ? nil : Int.random(in: 0...9, using: &rng) }
            // A slot never shows a source another slot shows.
            var seen = Set<Int>()
            for i in current.indices { if let c = current[i], !seen.insert(c).inserted { current[i] = nil } }
            let wanted = Array(Set((0..<Int.random(in: 0...8, using: &rng)).map { _ in Int.random(in: 0...9, using: &rng) })).shuffled(using: &rng)
            var after = current
            for move in SlotPlanner.plan(current: current, wanted: wanted) {
                switch move {
                case .place(let s, let i): after[i] = s
                case .clear(let i): after[i] = nil
                }
            }
            let shown = after.compactMap { $0 }
            #expect(Set(shown).count == shown.count, "\(current) \(wanted) -> \(after)")
            #expect(shown.allSatisfy(wanted.contains), "\(current) \(wanted) -> \(after)")
            #expect(shown.count == min(slots, wanted.count), "every slot is used while sources wait: \(current) \(wanted) -> \(after)")
            for (i, c) in current.enumerated() where c.map(wanted.contains) == true {
                #expect(after[i] == c, "a kept source keeps its slot: \(current) \(wanted) -> \(after)")
            }
        }
    }
}
