/// Writes JSON text (RFC 8259) into bytes by hand, for the control API's answers.
///
/// Why not `JSONEncoder`: encoding a 64-participant room's stats answer through it took ~6 ms of a core
/// (6.4 % of the node under `sfu bench`, which polls stats once a second), on a thread that shares the core
/// with the media worker, and that preemption was the bench's forwarding p99 (Benchmarks/README.md). The
/// writer appends to one growing `[UInt8]` with no intermediate containers, boxes or `String`s.
///
/// The output is the bytes `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` gave the API's answers on
/// Linux, so clients saw nothing change (the tests compare strings and numbers with JSONEncoder's byte for byte,
/// and every answer's key order):
/// - no whitespace between tokens (RFC 8259 section 2 allows it; JSONEncoder writes none);
/// - keys in ascending UTF-8 byte order: the writer does not sort, callers write keys in that order (`a_b`
///   before `aa`: `_` is 0x5F). Only `mergeField` places a key by comparison;
/// - strings as in `string(_:)`; integers in decimal, exact, `-` for negatives (section 6). No `Double` is
///   written by any answer, so the writer has none (JSONEncoder's shortest round-trip form would be needed).
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Whether the next value or key needs a `,` before it (a value or a closed container came before it at
    /// this level). After a key it is false, so the key's value gets none.
    private var needsComma = false
    private var depth = 0
    /// A field to write at its sorted place among the fields of the object open at `depth`.
    private var merged: (key: StaticString, value: Int, depth: Int)?

    init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    // MARK: Containers

    mutating func object(_ fields: (inout JSONWriter) -> Void) {
        beginValue()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        depth += 1
        fields(&self)
        writeMerged { _ in true }
        depth -= 1
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    mutating func array<S: Sequence>(_ items: S, _ element: (inout JSONWriter, S.Element) -> Void) {
        beginValue()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        depth += 1
        for item in items { element(&self, item) }
        depth -= 1
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Adds `"key": value` to the object being written, before the first later key the caller writes (or
    /// at its end): how `Success` puts `"result": 0` among a body's fields in sorted order without the body
    /// knowing about it.
    mutating func mergeField(_ key: StaticString, _ value: Int) {
        precondition(depth > 0 && merged == nil, "one merged field, inside an object")
        merged = (key, value, depth)
    }

    // MARK: Keys

    /// A field name known at compile time: plain ASCII that needs no escaping (checked in debug builds).
    mutating func key(_ name: StaticString) {
        writeMerged { $0.lexicographicallyPrecedes(Self.bytes(of: name)) }
        writeKey(name)
    }

    /// A field name made at run time (a dictionary's key), escaped like any string.
    mutating func key(string name: String) {
        writeMerged { $0.lexicographicallyPrecedes(name.utf8) }
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes the merged field here if it belongs to this object and `goesFirst` says its key sorts before
    /// the one about to be written.
    private mutating func writeMerged(if goesFirst: (UnsafeBufferPointer<UInt8>) -> Bool) {
        guard let m = merged, m.depth == depth, goesFirst(Self.bytes(of: m.key)) else { return }
        merged = nil
        writeKey(m.key)
        integer(m.value)
    }

    private mutating func writeKey(_ name: StaticString) {
        let raw = Self.bytes(of: name)
        assert(raw.allSatisfy { $0 >= 0x20 && $0 < 0x80 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: raw)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    private static func bytes(of s: StaticString) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }

    // MARK: Values

    mutating func null() {
        beginValue()
        bytes.append(contentsOf: Self.bytes(of: "null"))
        needsComma = true
    }

    mutating func bool(_ value: Bool) {
        beginValue()
        bytes.append(contentsOf: Self.bytes(of: value ? "true" : "false"))
        needsComma = true
    }

    /// Decimal digits, no leading zeros, `-` before a negative (RFC 8259 section 6): exact for any 64-bit
    /// integer, where a parser that reads numbers as doubles would round above 2^53 (section 6 warns of it).
    mutating func integer<T: BinaryInteger>(_ value: T) {
        beginValue()
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDigits(UInt64(value.magnitude))
        needsComma = true
    }

    private mutating func appendDigits(_ value: UInt64) {
        var count = 1, rest = value
        while rest >= 10 { rest /= 10; count += 1 }
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        var i = bytes.count, rest2 = value
        repeat {
            i -= 1
            bytes[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest2 % 10)
            rest2 /= 10
        } while rest2 > 0
    }

    /// A string per RFC 8259 section 7: `"` and `\` escaped, and every control character U+0000-U+001F, as
    /// the two-character forms `\b \f \n \r \t` where they exist and `\u00xx` (lowercase hex, as JSONEncoder
    /// writes) otherwise. Everything else passes through as its UTF-8 bytes (section 8.1: JSON text is UTF-8),
    /// including DEL, U+2028/U+2029 (valid in JSON strings, unlike in older JavaScript) and astral characters
    /// (no surrogate pairs needed in UTF-8). `/` is not escaped (`.withoutEscapingSlashes`).
    mutating func string(_ value: String) {
        beginValue()
        bytes.append(UInt8(ascii: "\""))
        var s = value
        s.withUTF8 { appendEscaped($0) }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var start = 0
        for i in 0..<utf8.count {
            let b = utf8[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
            bytes.append(UInt8(ascii: "\\"))
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(b)
            case 0x08: bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(UInt8(ascii: "f"))
            case 0x0A: bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            default:
                bytes.append(contentsOf: Self.bytes(of: "u00"))
                bytes.append(Self.hexDigit(b >> 4))
                bytes.append(Self.hexDigit(b & 0x0F))
            }
            start = i + 1
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    private mutating func beginValue() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}
