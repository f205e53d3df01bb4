/// Decides which of a subscriber's slots (of one kind) each wanted source takes, without touching a slot:
/// the room applies the moves it returns (and does the work a move implies: keyframe waits, sink lists,
/// rewriter switches). Pure, so the rules have table tests of their own:
/// - sticky: a wanted source already in a slot keeps it (no renumbering when the order of talkers changes);
/// - a newcomer takes an evicted source's slot first (the slot the subscriber was watching changes speaker,
///   as media-core.md's slot rules ask), then an empty one, lowest index first;
/// - an evicted source with no newcomer to replace it is cleared; wanted sources past the slot count wait.
public enum SlotPlanner {
    public enum Move: Equatable, Sendable {
        case place(source: Int, slot: Int)
        case clear(slot: Int)
    }

    /// `current[i]` is the source slot `i` shows (nil: empty); `wanted` the sources it should show, most
    /// important first, without repeats.
    public static func plan(current: [Int?], wanted: [Int]) -> [Move] {
        let wantedSet = Set(wanted)
        let kept = Set(current.compactMap { $0 }.filter { wantedSet.contains($0) })
        var newcomers = wanted.filter { !kept.contains($0) }[...]
        var moves: [Move] = []
        // Pass 0 fills evicted slots (or clears them when nobody is left), pass 1 fills empty ones.
        for pass in 0..<2 {
            for (i, source) in current.enumerated() {
                let evicted = source.map { !wantedSet.contains($0) } ?? false
                guard pass == 0 ? evicted : source == nil else { continue }
                if let next = newcomers.popFirst() {
                    moves.append(.place(source: next, slot: i))
                } else if evicted {
                    moves.append(.clear(slot: i))
                }
            }
        }
        return moves
    }
}
