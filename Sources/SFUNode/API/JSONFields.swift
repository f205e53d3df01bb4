/// An answer body the control API writes with `JSONWriter` instead of `JSONEncoder` (see JSONWriter for why):
/// its one encoding. What it must write is docs/openapi.yaml's schema (schemathesis checks every answer against
/// it in CI; `AnswerJSONTests` the fields, key order and escaping).
protocol JSONFields {
    /// Writes the body's fields into the object being written, keys in ascending UTF-8 byte order (the same
    /// bytes for the same answer, whatever the platform's dictionaries do); a nullable field absent is `null`.
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
