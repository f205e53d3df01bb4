import Foundation

/// Reads a request body's fields the strict way, inside a `Decodable` init: the body must be a JSON object
/// with only the allowed fields; a field given as `null` is refused like any other wrong type (leave it out
/// instead); every refusal is a 400 (6010) that names the field, so a signaling server's developer sees what
/// to fix.
struct FieldReader {
    static let maxBytes = 256 * 1024

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ s: String) { stringValue = s }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private let fields: KeyedDecodingContainer<Key>

    init(_ decoder: any Decoder, allowed: Set<String>) throws {
        do { fields = try decoder.container(keyedBy: Key.self) } catch {
            throw APIError(.badRequest, code: 6010, "the body must be a JSON object")
        }
        if let unknown = fields.allKeys.map(\.stringValue).sorted().first(where: { !allowed.contains($0) }) {
            throw APIError(.badRequest, code: 6010, "unknown field '\(unknown)' (allowed: \(allowed.sorted().joined(separator: ", ")))")
        }
    }

    func contains(_ key: String) -> Bool { fields.contains(Key(key)) }

    private func wrong(_ key: String, _ expected: String) -> APIError {
        APIError(.badRequest, code: 6010, "field '\(key)' must be \(expected)")
    }

    /// The field as `T`, nil when absent. JSON's types are kept apart: true is not 1, 1.5 is not a whole number.
    private func value<T: Decodable>(_ key: String, _ type: T.Type, _ expected: String) throws -> T? {
        let k = Key(key)
        guard fields.contains(k) else { return nil }
        if (try? fields.decodeNil(forKey: k)) == true { throw wrong(key, expected) }
        do { return try fields.decode(T.self, forKey: k) } catch { throw wrong(key, expected) }
    }

    func required<T>(_ value: T?, _ key: String) throws -> T {
        guard let value else { throw APIError(.badRequest, code: 6010, "field '\(key)' is required") }
        return value
    }

    func string(_ key: String) throws -> String? { try value(key, String.self, "a string") }

    func requiredString(_ key: String) throws -> String {
        guard let s = try string(key), !s.isEmpty else { throw APIError(.badRequest, code: 6010, "field '\(key)' is required") }
        return s
    }

    func int(_ key: String, _ range: ClosedRange<Int>) throws -> Int? {
        let expected = "a whole number \(range.lowerBound)-\(range.upperBound)"
        guard let n = try value(key, Int.self, expected) else { return nil }
        guard range.contains(n) else { throw wrong(key, expected) }
        return n
    }

    func bool(_ key: String) throws -> Bool? { try value(key, Bool.self, "true or false") }

    func strings(_ key: String) throws -> [String]? { try value(key, [String].self, "a list of strings") }

    func oneOf<T: RawRepresentable>(_ key: String, _ type: T.Type, _ names: String) throws -> T? where T.RawValue == String {
        guard let s = try string(key) else { return nil }
        guard let v = T(rawValue: s) else { throw wrong(key, names) }
        return v
    }

    /// A required (or, with `required: false`, optional) room or participant id.
    func identifier(_ key: String, required: Bool) throws -> String? {
        guard let s = try string(key) else {
            if required { throw APIError(.badRequest, code: 6010, "field '\(key)' is required") }
            return nil
        }
        return try Identifier.check(s, field: "field '\(key)'")
    }

    func identifier(_ key: String) throws -> String { try identifier(key, required: true)! }

    /// A list of participant ids (pins), at most 64 of them.
    func identifiers(_ key: String) throws -> [String]? {
        guard let list = try strings(key) else { return nil }
        guard list.count <= 64 else { throw APIError(.badRequest, code: 6010, "field '\(key)' lists at most 64 ids") }
        return try list.map { try Identifier.check($0, field: "field '\(key)'") }
    }

    /// A display name: up to 128 characters, no control characters (it reaches logs and events).
    func displayName(_ key: String) throws -> String? {
        guard let s = try string(key) else { return nil }
        guard s.count <= 128, !s.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError(.badRequest, code: 6010, "field '\(key)' must be at most 128 characters, without control characters")
        }
        return s
    }
}

/// Room and participant ids: 1-64 characters of letters, digits and `. _ ~ @ : + -`, not starting with a
/// dot. They name URL path segments, log lines and events, so nothing else is accepted: no slash, space,
/// control character or quote. A bad id is a 400 that names the field.
enum Identifier {
    static let maxLength = 64
    static let pattern = "^[A-Za-z0-9_~@:+-][A-Za-z0-9._~@:+-]{0,63}$"

    static func isValid(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard (1...maxLength).contains(u.count), u[0] != UInt8(ascii: ".") else { return false }
        return u.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || Array("._~@:+-".utf8).contains(c)
        }
    }

    static func check(_ s: String, field: String) throws -> String {
        guard isValid(s) else {
            throw APIError(.badRequest, code: 6010,
                           "\(field) must be 1-\(maxLength) characters of letters, digits and . _ ~ @ : + - (not starting with .)")
        }
        return s
    }
}
