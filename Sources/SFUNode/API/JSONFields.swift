/// An answer body the control API writes with `JSONWriter` instead of `JSONEncoder` (see JSONWriter for why).
///
/// The body's `Encodable` conformance stays the description of the wire format: the tests hold `writeFields`
/// to the exact bytes `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` makes of the same value, so
/// the two cannot drift apart unnoticed.
protocol JSONFields: Encodable {
    /// Writes the body's fields into the object being written, keys in ascending UTF-8 byte order (the order
    /// `.sortedKeys` gives); a field the `Encodable` form writes as `null` is written as `null` here too.
    func writeFields(_ w: inout JSONWriter)

    /// Roughly how many bytes the answer takes, so the writer's buffer grows once or not at all.
    var estimatedJSONSize: Int { get }
}

extension JSONFields {
    var estimatedJSONSize: Int { 256 }

    /// The body as one JSON object.
    var jsonBytes: [UInt8] {
        var w = JSONWriter(capacity: estimatedJSONSize)
        w.object { writeFields(&$0) }
        return w.bytes
    }
}

/// One call per field for the bodies' `writeFields`.
extension JSONWriter {
    mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    /// `null` when absent, as the API documents its optional fields (never left out).
    mutating func field(_ name: StaticString, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        bool(value)
    }

    mutating func field<T: BinaryInteger>(_ name: StaticString, _ value: T) {
        key(name)
        integer(value)
    }

    /// `null` when absent.
    mutating func field<T: BinaryInteger>(_ name: StaticString, _ value: T?) {
        key(name)
        if let value { integer(value) } else { null() }
    }

    mutating func field(_ name: StaticString, _ values: [String]) {
        key(name)
        array(values) { $0.string($1) }
    }

    mutating func field(_ name: StaticString, _ value: some JSONFields) {
        key(name)
        object { value.writeFields(&$0) }
    }
}
