/// Big-endian field access on raw buffers (network byte order, RFC 3550 section 5.1).
///
/// Callers check bounds before reading; these helpers only assemble bytes.
extension UnsafeRawBufferPointer {
    @inlinable public func u8(_ at: Int) -> UInt8 { self[at] }
    @inlinable public func u16(_ at: Int) -> UInt16 { UInt16(self[at]) << 8 | UInt16(self[at + 1]) }
    @inlinable public func u24(_ at: Int) -> UInt32 { UInt32(self[at]) << 16 | UInt32(self[at + 1]) << 8 | UInt32(self[at + 2]) }
    @inlinable public func u32(_ at: Int) -> UInt32 {
        UInt32(self[at]) << 24 | UInt32(self[at + 1]) << 16 | UInt32(self[at + 2]) << 8 | UInt32(self[at + 3])
    }
}

extension UnsafeMutableRawBufferPointer {
    @inlinable public func setU16(_ v: UInt16, at: Int) { self[at] = UInt8(v >> 8); self[at + 1] = UInt8(truncatingIfNeeded: v) }
    @inlinable public func setU24(_ v: UInt32, at: Int) {
        self[at] = UInt8(truncatingIfNeeded: v >> 16); self[at + 1] = UInt8(truncatingIfNeeded: v >> 8)
        self[at + 2] = UInt8(truncatingIfNeeded: v)
    }
    @inlinable public func setU32(_ v: UInt32, at: Int) {
        self[at] = UInt8(truncatingIfNeeded: v >> 24); self[at + 1] = UInt8(truncatingIfNeeded: v >> 16)
        self[at + 2] = UInt8(truncatingIfNeeded: v >> 8); self[at + 3] = UInt8(truncatingIfNeeded: v)
    }
}

/// A bounded big-endian writer over a caller's buffer: writes fail (return false) instead of overrunning.
public struct ByteWriter {
    public let buffer: UnsafeMutableRawBufferPointer
    public private(set) var offset: Int

    public init(_ buffer: UnsafeMutableRawBufferPointer, offset: Int = 0) {
        self.buffer = buffer
        self.offset = offset
    }

    public var remaining: Int { buffer.count - offset }

    @discardableResult public mutating func u8(_ v: UInt8) -> Bool {
        guard remaining >= 1 else { return false }
        buffer[offset] = v; offset += 1; return true
    }
    @discardableResult public mutating func u16(_ v: UInt16) -> Bool {
        guard remaining >= 2 else { return false }
        buffer.setU16(v, at: offset); offset += 2; return true
    }
    @discardableResult public mutating func u24(_ v: UInt32) -> Bool {
        guard remaining >= 3 else { return false }
        buffer.setU24(v, at: offset); offset += 3; return true
    }
    @discardableResult public mutating func u32(_ v: UInt32) -> Bool {
        guard remaining >= 4 else { return false }
        buffer.setU32(v, at: offset); offset += 4; return true
    }
    @discardableResult public mutating func bytes(_ src: UnsafeRawBufferPointer) -> Bool {
        guard remaining >= src.count else { return false }
        if src.count > 0 { buffer.baseAddress!.advanced(by: offset).copyMemory(from: src.baseAddress!, byteCount: src.count) }
        offset += src.count
        return true
    }
    @discardableResult public mutating func zeros(_ n: Int) -> Bool {
        guard remaining >= n else { return false }
        for i in 0..<n { buffer[offset + i] = 0 }
        offset += n
        return true
    }
}
