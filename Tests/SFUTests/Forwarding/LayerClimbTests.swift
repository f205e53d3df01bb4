@testable import SFU
import SFUBase
import Testing

/// When a slot may move up a layer (`LayerClimb`), on its own: the 3 s wait, the longer wait after moves up
/// that did not hold, and the decisive rise that needs no wait.
@Suite struct LayerClimbTests {
    func at(_ seconds: Double) -> MonoTime { MonoTime(nanoseconds: Int64(seconds * 1e9)) }

    @Test func aMoveUpWaitsThreeSecondsAfterTheLastMove() {
        var c = LayerClimb()
        #expect(c.mayClimb(estimate: 500_000, now: at(100)), "a new slot has no wait")
        c.movedDown(estimate: 500_000, now: at(110))
        #expect(!c.mayClimb(estimate: 600_000, now: at(112.9)))
        #expect(c.mayClimb(estimate: 600_000, now: at(113)))
    }

    @Test func aMoveUpThatDidNotHoldDoublesTheWaitForTheNextOnce() {
        var c = LayerClimb()
        var t = 10.0
        for wait in [6.0, 6, 6] {
            c.movedUp(estimate: 500_000, now: at(t))
            c.movedDown(estimate: 400_000, now: at(t + 2))  // undone after 2 s at 80 % of the estimate: did not hold
            t += 2
            #expect(!c.mayClimb(estimate: 500_000, now: at(t + wait - 0.1)), "wait \(wait) s")
            #expect(c.mayClimb(estimate: 500_000, now: at(t + wait)), "wait \(wait) s")
            t += wait
        }
        #expect(c.failures == LayerClimb.maxFailures)
    }

    @Test func aMoveUpThatHeldForgetsTheFailures() {
        var c = LayerClimb()
        c.movedUp(estimate: 500_000, now: at(10))
        c.movedDown(estimate: 400_000, now: at(11))
        #expect(c.failures == 1)
        c.movedUp(estimate: 500_000, now: at(20))
        c.movedDown(estimate: 400_000, now: at(30))  // held 10 s: a fall for a new reason, not a failed try
        #expect(c.failures == 0)
        #expect(c.mayClimb(estimate: 400_000, now: at(33)), "the plain 3 s wait again")
    }

    @Test func aMoveUpUndoneByASteepFallIsNoFailure() {
        var c = LayerClimb()
        c.movedUp(estimate: 2_000_000, now: at(10))
        c.movedDown(estimate: 450_000, now: at(11))  // a cap: the link changed
        #expect(c.failures == 0)
        #expect(!c.mayClimb(estimate: 500_000, now: at(13.9)))
        #expect(c.mayClimb(estimate: 500_000, now: at(14)), "the plain 3 s")
        #expect(c.mayClimb(estimate: 675_000, now: at(11)), "or at once, 1.5 x the estimate it went down at")
    }

    @Test func aDecisiveRiseOverTheEstimateOfTheLastMoveNeedsNoWait() {
        var c = LayerClimb()
        c.movedDown(estimate: 600_000, now: at(10))  // e.g. a start value the first feedback corrects
        #expect(!c.mayClimb(estimate: 899_000, now: at(10.5)))
        #expect(c.mayClimb(estimate: 900_000, now: at(10.5)), "1.5 x the estimate the slot went down at")
    }

    @Test func afterAFailedMoveUpOnlyARiseOverWhatThatMoveWasMadeAtIsDecisive() {
        var c = LayerClimb()
        c.movedUp(estimate: 520_000, now: at(10))
        c.movedDown(estimate: 380_000, now: at(11))
        #expect(!c.mayClimb(estimate: 600_000, now: at(12)), "1.5 x 380k, but not over the 520k the failed try had")
        #expect(c.mayClimb(estimate: 780_000, now: at(12)), "1.5 x 520k")
    }

    @Test func anotherSourceOrSizeStartsAfresh() {
        var c = LayerClimb()
        c.movedUp(estimate: 500_000, now: at(10))
        c.movedDown(estimate: 400_000, now: at(11))
        c.reset()
        #expect(c == LayerClimb())
        #expect(c.mayClimb(estimate: 400_000, now: at(11)))
    }
}
