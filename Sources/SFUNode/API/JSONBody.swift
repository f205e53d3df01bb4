import Foundation

/// A request body checked the strict way: a JSON object, only known fields, each of the right type.
/// Every refusal names the field, so a signaling server's developer sees what to fix.
struct JSONBody {
    let fields: [String: Any]

    static let maxBytes = 256 * 1024

    init(_ data: Data, allowed: Set<String>) throws {
        let object: Any
        if data.isEmpty {
            object = [String: Any]()
        } else {
            do { object = try JSONSerialization.jsonObject(with: data) } catch {
                throw APIError(.badRequest, code: 6010, "malformed JSON body")
            }
        }
        guard let dict = object as? [String: Any] else { throw APIError(.badRequest, code: 6010, "the body must be a JSON object") }
        if let unknown = dict.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIError(.badRequest, code: 6010, "unknown field '\(unknown)' (allowed: \(allowed.sorted().joined(separator: ", ")))")
        }
        fields = dict
    }

    private func wrong(_ key: String, _ expected: String) -> APIError {
        APIError(.badRequest, code: 6010, "field '\(key)' must be \(expected)")
    }

    /// A field given as `null` is refused like any other wrong type: leave it out instead.
    func string(_ key: String) throws -> String? {
        guard let v = fields[key] else { return nil }
        guard let s = v as? String else { throw wrong(key, "a string") }
        return s
    }

    func requiredString(_ key: String) throws -> String {
        guard let s = try string(key), !s.isEmpty else { throw APIError(.badRequest, code: 6010, "field '\(key)' is required") }
        return s
    }

    /// JSONSerialization gives numbers and booleans as NSNumber, and Swift casts 1 to `true` and `true` to 1;
    /// only the boolean's storage type tells them apart.
    static func isBoolean(_ v: Any) -> Bool {
        guard let n = v as? NSNumber else { return false }
        return String(cString: n.objCType) == "c"
    }

    func int(_ key: String, _ range: ClosedRange<Int>) throws -> Int? {
        guard let v = fields[key] else { return nil }
        guard !Self.isBoolean(v), let n = v as? Int, range.contains(n) else {
            throw wrong(key, "a whole number \(range.lowerBound)-\(range.upperBound)")
        }
        return n
    }

    func bool(_ key: String) throws -> Bool? {
        guard let v = fields[key] else { return nil }
        guard Self.isBoolean(v), let b = v as? Bool else { throw wrong(key, "true or false") }
        return b
    }

    func strings(_ key: String) throws -> [String]? {
        guard let v = fields[key] else { return nil }
        guard let a = v as? [Any], let s = a as? [String] else { throw wrong(key, "a list of strings") }
        return s
    }

    func oneOf<T: RawRepresentable>(_ key: String, _ type: T.Type, _ names: String) throws -> T? where T.RawValue == String {
        guard let s = try string(key) else { return nil }
        guard let v = T(rawValue: s) else { throw wrong(key, names) }
        return v
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

extension JSONBody {
    /// A required (or, with `required: false`, optional) room or participant id.
    func identifier(_ key: String, required: Bool = true) throws -> String? {
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
