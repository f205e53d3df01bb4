import ArgumentParser
import Foundation
import LoadGen

/// A plan set from a scenario file's `key = value` lines, then `--set key=value` flags: what `bench` and
/// `tune` share, each with its own keys.
protocol KeyValuePlan {
    associatedtype Invalid: Error & CustomStringConvertible
    mutating func set(_ key: String, _ text: String) throws(Invalid)
    mutating func apply(scenario text: String) throws(Invalid)
}

extension BenchPlan: KeyValuePlan {}
extension TunePlan: KeyValuePlan {}

extension KeyValuePlan {
    /// Applies `scenario` (a file path), then each override in order; the first bad one stops the command
    /// with its reason.
    mutating func configure(scenario: String?, overrides: [String]) throws {
        do {
            if let scenario {
                guard let text = try? String(contentsOfFile: scenario, encoding: .utf8) else { throw ValidationError("cannot read \(scenario)") }
                try apply(scenario: text)
            }
            for o in overrides {
                let parts = o.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { throw ValidationError("--set expects key=value, got '\(o)'") }
                try set(parts[0], parts[1])
            }
        } catch let e as Invalid {
            throw ValidationError(e.description)
        }
    }
}
