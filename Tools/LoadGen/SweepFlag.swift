import Foundation

/// `--sweep key=v1,v2,...` as `sfu bench` and `sfu tune` read it: the key and its values (blanks dropped), or
/// nil when the text is not of that form. Each command then checks every value against its own plan.
func splitSweep(_ text: String) -> (key: String, values: [String])? {
    let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
    guard parts.count == 2, !parts[0].isEmpty else { return nil }
    let values = parts[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    return (parts[0], values)
}
