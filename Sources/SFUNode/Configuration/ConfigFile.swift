/// A configuration value: what the file's right-hand sides can be.
public enum ConfigValue: Equatable, Sendable, CustomStringConvertible {
    case string(String), int(Int), bool(Bool), array([ConfigValue])

    public var description: String { fileText }

    /// As the file writes it: strings quoted, with backslashes and quotes escaped.
    public var fileText: String {
        switch self {
        case .string(let s): "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case .int(let i): "\(i)"
        case .bool(let b): "\(b)"
        case .array(let a): "[" + a.map(\.fileText).joined(separator: ", ") + "]"
        }
    }

    /// Environment and flag values are bare text: a number, a boolean, a [list], or else a string.
    static func parseLoose(_ text: String) -> ConfigValue {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let i = Int(t) { return .int(i) }
        if t == "true" || t == "false" { return .bool(t == "true") }
        if t.hasPrefix("["), let v = try? ConfigFile.value(t, line: 0, name: "") { return v }
        if t.hasPrefix("\""), let v = try? ConfigFile.value(t, line: 0, name: "") { return v }
        return .string(t)
    }
}

/// The configuration file: a small TOML subset people edit by hand — `# comments`, `[section]` headers and
/// `key = value` lines where a value is a "string", a whole number, true/false, or a [list] of those.
public enum ConfigFile {
    public static func parse(_ text: String, name: String) throws(ConfigError) -> [(line: Int, key: String, value: ConfigValue)] {
        var section = ""
        var out: [(Int, String, ConfigValue)] = []
        var number = 0
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            number += 1
            let line = stripComment(String(raw)).trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else {
                    throw ConfigError(key: line, origin: "\(name) line \(number)", message: "a section header is [name]")
                }
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                continue
            }
            guard let eq = line.firstIndex(of: "=") else {
                throw ConfigError(key: line, origin: "\(name) line \(number)", message: "expected key = value")
            }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            let full = section.isEmpty ? key : "\(section).\(key)"
            out.append((number, full, try value(line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces), line: number, name: name, key: full)))
        }
        return out
    }

    static func stripComment(_ line: String) -> String {
        var inString = false
        var previous: Character = " "
        for (i, ch) in zip(line.indices, line) {
            if ch == "\"" && previous != "\\" { inString.toggle() }
            if ch == "#" && !inString { return String(line[..<i]) }
            previous = ch
        }
        return line
    }

    static func value(_ t: String, line: Int, name: String, key: String = "") throws(ConfigError) -> ConfigValue {
        let origin = "\(name) line \(line)"
        if t.hasPrefix("\"") {
            guard t.count >= 2, t.hasSuffix("\"") else { throw ConfigError(key: key, origin: origin, message: "unterminated string") }
            var s = ""
            var escaped = false
            for ch in t.dropFirst().dropLast() {
                if escaped { s.append(ch == "n" ? "\n" : ch); escaped = false } else if ch == "\\" { escaped = true } else { s.append(ch) }
            }
            return .string(s)
        }
        if t.hasPrefix("[") {
            guard t.hasSuffix("]") else { throw ConfigError(key: key, origin: origin, message: "unterminated list") }
            let inner = t.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
            if inner.isEmpty { return .array([]) }
            var items: [ConfigValue] = []
            for part in splitList(String(inner)) { items.append(try value(part.trimmingCharacters(in: .whitespaces), line: line, name: name, key: key)) }
            return .array(items)
        }
        if t == "true" || t == "false" { return .bool(t == "true") }
        if let i = Int(t.replacingOccurrences(of: "_", with: "")) { return .int(i) }
        throw ConfigError(key: key, origin: origin, message: "cannot read \(t): strings need \"quotes\"")
    }

    /// Splits a list body on commas outside quotes.
    static func splitList(_ s: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var inString = false
        for ch in s {
            if ch == "\"" { inString.toggle() }
            if ch == "," && !inString { parts.append(current); current = "" } else { current.append(ch) }
        }
        parts.append(current)
        return parts
    }
}

import Foundation
