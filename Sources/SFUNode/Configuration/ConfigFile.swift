import TOMLKit

/// A configuration value: what the keys take (strings, whole numbers, booleans, lists of those).
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

    /// Environment and flag values are bare text: a TOML value (number, boolean, "string", [list]) when it
    /// reads as one, else the text itself as a string (`--set media.listen=0.0.0.0:10000` needs no quotes).
    /// Only a reading that is that one value counts: `5\nlimits.rooms=1` read as TOML is 5 and a second key,
    /// which was silently dropped; it is text now (and refused by a key that takes a number).
    static func parseLoose(_ text: String) -> ConfigValue {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let table = try? TOMLTable(string: "v = " + t), table.keys == ["v"], let v = table["v"],
           let value = try? ConfigValue(v, key: "v", origin: "") {
            return value
        }
        return .string(t)
    }

    init(_ v: TOMLValueConvertible, key: String, origin: String) throws(ConfigError) {
        switch v.type {
        case .string: self = .string(v.string ?? "")
        case .int: self = .int(v.int ?? 0)
        case .bool: self = .bool(v.bool ?? false)
        case .array:
            var items: [ConfigValue] = []
            for item in v.array.map(Array.init) ?? [] { items.append(try ConfigValue(item, key: key, origin: origin)) }
            self = .array(items)
        default:
            throw ConfigError(key: key, origin: origin,
                              message: "a \(v.type) is not a value any key takes (strings, whole numbers, true/false, [lists])")
        }
    }
}

/// The configuration file, TOML (parsed by TOMLKit: toml++): top-level keys and one `[section]` per group, as
/// `sfu config` prints it. Errors name the file and line: TOML's own for syntax, the key's line for values.
public enum ConfigFile {
    public static func parse(_ text: String, name: String) throws(ConfigError) -> [(line: Int, key: String, value: ConfigValue)] {
        let table: TOMLTable
        do { table = try TOMLTable(string: text) } catch let e as TOMLParseError {
            throw ConfigError(key: "", origin: "\(name) line \(e.source.begin.line)", message: "not TOML: \(e.description)")
        } catch {
            throw ConfigError(key: "", origin: name, message: "not TOML: \(error)")
        }
        let lines = keyLines(text)
        var out: [(Int, String, ConfigValue)] = []
        func add(_ key: String, _ v: TOMLValueConvertible) throws(ConfigError) {
            let line = lines[key] ?? 0
            out.append((line, key, try ConfigValue(v, key: key, origin: line > 0 ? "\(name) line \(line)" : name)))
        }
        for (key, v) in table {
            guard let section = v.table else { try add(key, v); continue }
            for (leaf, item) in section {
                if item.table != nil {
                    throw ConfigError(key: "\(key).\(leaf)", origin: name, message: "sections do not nest: use [\(key)] with key = value lines")
                }
                try add("\(key).\(leaf)", item)
            }
        }
        // In the order they were written, so a key given twice over environment or flags reads naturally.
        return out.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
    }

    /// The line each `section.key` is written on (for errors; TOML's parser keeps no positions).
    static func keyLines(_ text: String) -> [String: Int] {
        var section = ""
        var lines: [String: Int] = [:]
        for (i, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("["), let end = line.firstIndex(of: "]") {
                section = line[line.index(after: line.startIndex)..<end].trimmingCharacters(in: .whitespaces)
            } else if let eq = line.firstIndex(of: "=") {
                let key = line[..<eq].trimmingCharacters(in: .whitespaces)
                lines[section.isEmpty ? key : "\(section).\(key)"] = i + 1
            }
        }
        return lines
    }
}
