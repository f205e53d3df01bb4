/// Conversions and differences that cannot trap, for figures computed from counters and clocks: a counter summed
/// over workers goes down when one stops, a counter read again after a reset starts over, a wall clock steps.
/// Swift traps on `Int(Double)` out of range or NaN and on an unsigned difference below zero; a rate in a
/// heartbeat or a metric must never take the node down (issue 40: `Int(Double(a &- b) / seconds)` on a counter
/// that went down killed a stopping node with SIGILL).
extension Int {
    /// `value` rounded toward zero and clamped to `Int`'s range; 0 for NaN.
    @inlinable public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 9.223_372_036_854_775_807e18 {
            self = .max
        } else if value <= -9.223_372_036_854_775_808e18 {
            self = .min
        } else {
            self = Int(value)
        }
    }
}

extension UInt64 {
    /// How much the counter grew since `earlier`: 0 when it went down (it was reset, or is a sum that lost a part).
    @inlinable public func growth(since earlier: UInt64) -> UInt64 { self >= earlier ? self - earlier : 0 }
}

extension UInt64 {
    /// Events per second between `earlier` and this reading of a counter, `seconds` apart: 0 when the counter went
    /// down or no time passed, never a trap.
    @inlinable public func perSecond(since earlier: UInt64, seconds: Double) -> Int {
        guard seconds > 0, seconds.isFinite else { return 0 }
        return Int(saturating: Double(growth(since: earlier)) / seconds)
    }
}
