/// When a video slot may move up to a higher layer of the source it shows (a simulcast layer, or a single
/// stream's layer caps). Going down is always at once; going up waits, so an estimate hovering at a layer's
/// rate does not switch layers - and ask for key frames - back and forth. Pure, so the rule has table tests.
///
/// - An up move waits `hold` after the last move.
/// - An up move that did not hold (the slot went down again within `heldFor`, the estimate less than
///   `decisive` times lower) doubles the wait for the next one (`maxFailures`: once); one that held resets
///   it. Measured with Chromium under a 500 kbit/s cap (scripts/shaped-test.sh): the middle layer plus audio
///   nearly fits, so every probe that got through the shaper's burst took the slot up and the estimate's next
///   cut took it down again - each trip two key frames on every layer (Chromium's simulcast answers a PLI on
///   one with key frames on all), 2-3 trips in 15 s at a fixed 3 s wait, 1-2 at 6 s after a failed one. A
///   wait doubled twice (12 s) kept a slot whose try failed just as the cap was lifted at the lowest layer
///   for 12 s: a probe at the next layer's rate shows that layer fits, not a decisive rise.
/// - An estimate `decisive` times the one the last move was made at (or, after a move up that did not hold,
///   the one that move was made at) is new evidence, not a wobble, and moves up at once: a link whose cap was
///   lifted, or an estimate that left its start value, is not held back by the wait meant for marginal fits.
///   libwebrtc's and LiveKit's allocators also distinguish a probe's confirmed jump from drift.
struct LayerClimb: Sendable, Equatable {
    static let hold: MonoTime.Interval = .seconds(3)
    static let heldFor: MonoTime.Interval = .seconds(10)
    static let maxFailures = 1
    static let decisive = 1.5

    /// When the slot last moved between layers of its source (zero: never, or a new source).
    private(set) var changedAt: MonoTime = .zero
    /// The estimate that move was made at (nil: unknown).
    private(set) var reference: Double?
    /// Up moves in a row that did not hold.
    private(set) var failures = 0
    /// The last up move, until it held or was undone.
    private var climbed: Climb?

    struct Climb: Sendable, Equatable {
        var at: MonoTime
        var estimate: Double?
    }

    init() {}

    /// How long an up move waits after the last move, at `now` (an up move that held has no failures).
    func wait(now: MonoTime) -> MonoTime.Interval { Self.hold * (1 << (held(now: now) ? 0 : failures)) }

    /// Whether this estimate (bits/s) is a decisive rise: over the one the last move was made at, or, for a
    /// slot that has not moved, over `floor` (the lowest estimate of the wait, `EstimateFloor`).
    func isDecisive(_ estimate: Double?, floor: Double?) -> Bool {
        guard let estimate, let base = reference ?? floor else { return false }
        return estimate >= Self.decisive * base
    }

    /// Whether a move up may be made now with this estimate (bits/s; nil when the slot has none): a decisive
    /// rise, or the wait since the last move is over (the caller then also holds the climb to what the
    /// estimate's floor over the wait fits).
    func mayClimb(estimate: Double?, floor: Double? = nil, now: MonoTime) -> Bool {
        isDecisive(estimate, floor: floor) || waited(now: now)
    }

    /// Whether the wait since the last move is over.
    func waited(now: MonoTime) -> Bool { now - changedAt >= wait(now: now) }

    /// The slot moved up, at this estimate.
    mutating func movedUp(estimate: Double?, now: MonoTime) {
        settle(now: now)
        climbed = Climb(at: now, estimate: estimate)
        changedAt = now
        reference = estimate
    }

    /// The slot moved down, at this estimate: an up move undone within `heldFor` by an estimate that fell
    /// less than `decisive` times counts as failed - the layer was marginal. A steeper fall is the link
    /// changing (a cap, a handover), which says nothing about the try.
    mutating func movedDown(estimate: Double?, now: MonoTime) {
        settle(now: now)
        reference = estimate
        if let up = climbed, let before = up.estimate, (estimate ?? 0) * Self.decisive >= before {
            failures = min(failures + 1, Self.maxFailures)
            // The evidence that would justify trying again is a clear rise over what the failed try was made at.
            reference = before
        }
        climbed = nil
        changedAt = now
    }

    /// The slot moved between layers for a reason of its own (another caller chose the layer): the wait
    /// starts again, the failures stay.
    mutating func moved(now: MonoTime) {
        settle(now: now)
        changedAt = now
    }

    /// A new source, or the subscriber asked for another size: no wait, no history.
    mutating func reset() { self = .init() }

    /// Whether the last up move has lasted `heldFor`: it held.
    private func held(now: MonoTime) -> Bool { climbed.map { now - $0.at >= Self.heldFor } ?? false }

    /// An up move that held: the failures are forgotten.
    private mutating func settle(now: MonoTime) {
        guard held(now: now) else { return }
        climbed = nil
        failures = 0
    }
}
