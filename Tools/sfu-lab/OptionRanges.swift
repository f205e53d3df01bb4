import ArgumentParser

/// Checks of numeric options before a command uses them: a duration like `--seconds nan` or `1e300` would
/// otherwise trap where it becomes a frame count or a nanosecond figure (issue 40's class of conversions).
enum OptionRanges {
    static func require(_ option: String, _ value: Double, in range: ClosedRange<Double>) throws {
        guard value.isFinite, range.contains(value) else {
            throw ValidationError("\(option) must be a number from \(range.lowerBound) to \(range.upperBound), not \(value)")
        }
    }

    static func require(_ option: String, _ value: Int, in range: ClosedRange<Int>) throws {
        guard range.contains(value) else { throw ValidationError("\(option) must be from \(range.lowerBound) to \(range.upperBound), not \(value)") }
    }
}
