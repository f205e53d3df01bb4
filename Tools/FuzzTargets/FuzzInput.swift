/// Reads a fuzz input as a sequence of small decisions (libFuzzer's "structure-aware" style without a
/// grammar): every read succeeds, a short input reads zeros, so any byte string is a valid program and the
/// mutator's edits map to nearby programs.
public struct FuzzReader {
    private let bytes: UnsafeRawBufferPointer
    public private(set) var offset = 0

    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    public var isEmpty: Bool { offset >= bytes.count }
    public var remaining: Int { max(0, bytes.count - offset) }

    public mutating func u8() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func u16() -> UInt16 { UInt16(u8()) << 8 | UInt16(u8()) }
    public mutating func u32() -> UInt32 { UInt32(u16()) << 16 | UInt32(u16()) }
    public mutating func bool() -> Bool { u8() & 1 == 1 }

    /// A value in 0..<n (n > 0).
    public mutating func index(_ n: Int) -> Int { Int(u8()) % n }

    /// Up to `n` bytes (fewer at the end of the input).
    public mutating func bytes(_ n: Int) -> [UInt8] {
        let k = min(n, remaining)
        defer { offset += k }
        return Array(bytes[offset..<(offset + k)])
    }

    /// A length-prefixed chunk: one length byte, then that many bytes; 255 takes the rest of the input up to
    /// `max`, so a long datagram costs one byte of framing.
    public mutating func chunk(max: Int = 1400) -> [UInt8] {
        let n = Int(u8())
        return bytes(n == 255 ? max : Swift.min(n, max))
    }
}

/// Writes inputs in `FuzzReader`'s format: how the targets build their seeds.
public struct FuzzWriter {
    public private(set) var bytes: [UInt8] = []
    public init() {}
    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { bytes += [UInt8(v >> 8), UInt8(v & 0xFF)] }
    public mutating func u32(_ v: UInt32) { u16(UInt16(v >> 16)); u16(UInt16(v & 0xFFFF)) }
    public mutating func raw(_ b: [UInt8]) { bytes += b }
    public mutating func chunk(_ b: [UInt8]) {
        precondition(b.count < 255, "seed chunks are short")
        bytes.append(UInt8(b.count))
        bytes += b
    }
}

/// A broken promise of the system under fuzz: stops the run with a message (printed in optimised builds
/// too, unlike a precondition's) that libFuzzer keeps in its log beside the saved input.
@inline(never)
func promise(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
             file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { fatalError("fuzz promise broken: \(message())", file: file, line: line) }
}
