/// A point on the caller's monotonic clock, in nanoseconds.
///
/// The engine never reads a clock: every input carries the `MonoTime` at which it happened, so tests can
/// drive it on virtual time and the node drives it from `CLOCK_MONOTONIC`.
public struct MonoTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    @inlinable public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static let zero = MonoTime(nanoseconds: 0)
    /// A time later than any the engine will see: "no deadline".
    public static let never = MonoTime(nanoseconds: .max)

    @inlinable public static func milliseconds(_ ms: Int64) -> MonoTime { MonoTime(nanoseconds: ms * 1_000_000) }
    /// Saturating (NaN is zero): a time from a configured or computed figure never traps.
    @inlinable public static func seconds(_ s: Double) -> MonoTime { MonoTime(nanoseconds: Int64(Int(saturating: s * 1e9))) }

    @inlinable public var milliseconds: Int64 { nanoseconds / 1_000_000 }
    @inlinable public var seconds: Double { Double(nanoseconds) / 1e9 }

    @inlinable public static func < (a: MonoTime, b: MonoTime) -> Bool { a.nanoseconds < b.nanoseconds }
    @inlinable public static func + (a: MonoTime, d: Interval) -> MonoTime {
        MonoTime(nanoseconds: a.nanoseconds &+ d.nanoseconds)
    }
    @inlinable public static func - (a: MonoTime, b: MonoTime) -> Interval { Interval(nanoseconds: a.nanoseconds &- b.nanoseconds) }

    public var description: String { "\(Double(nanoseconds) / 1e6)ms" }

    /// A length of time in nanoseconds (named to avoid clashing with `Swift.Duration`'s attoseconds).
    public struct Interval: Comparable, Hashable, Sendable {
        public var nanoseconds: Int64
        @inlinable public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
        @inlinable public static func milliseconds(_ ms: Int64) -> Interval { Interval(nanoseconds: ms * 1_000_000) }
        /// Saturating (NaN is zero), as `MonoTime.seconds`.
        @inlinable public static func seconds(_ s: Double) -> Interval { Interval(nanoseconds: Int64(Int(saturating: s * 1e9))) }
        @inlinable public var milliseconds: Int64 { nanoseconds / 1_000_000 }
        @inlinable public var seconds: Double { Double(nanoseconds) / 1e9 }
        @inlinable public static func < (a: Interval, b: Interval) -> Bool { a.nanoseconds < b.nanoseconds }
    }
}
