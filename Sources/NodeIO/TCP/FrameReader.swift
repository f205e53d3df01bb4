/// Reads RFC 4571 framing from a byte stream: each packet (STUN, DTLS, SRTP, SRTCP) preceded by its length
/// as 16 bits, network order (RFC 6544 section 3 carries ICE this way). Sans-IO and allocation-free: the
/// connection reads into `space`, says how much with `received`, then takes whole frames with `next` until it
/// has none; what is left of a frame stays for the next read.
///
/// A frame longer than `maxFrame` cannot be a media packet the node would take (the UDP path's limit): it is
/// skipped, however long, and counted, so the stream stays in step. A zero-length frame is counted and
/// skipped. Garbage framing therefore costs only the bytes it sends; the connection's owner decides when to
/// give up on it (an unauthenticated connection has seconds).
public struct FrameReader: ~Copyable {
    public let maxFrame: Int
    private let storage: UnsafeMutableRawBufferPointer
    /// Buffered bytes are `storage[start..<end]`.
    private var start = 0
    private var end = 0
    /// Bytes of an oversized frame still to skip.
    private var skipping = 0
    public private(set) var oversizedFrames: UInt64 = 0
    public private(set) var emptyFrames: UInt64 = 0
    public private(set) var frames: UInt64 = 0

    /// `capacity` must hold at least one largest frame and its length (`maxFrame + 2`).
    public init(maxFrame: Int = 2048, capacity: Int = 8192) {
        precondition(capacity >= maxFrame + 2)
        self.maxFrame = maxFrame
        storage = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { storage.deallocate() }

    /// Where the next read goes: never empty while `next` has been called until nil (a whole largest frame
    /// always fits once the buffered bytes move to the front).
    public mutating func space() -> UnsafeMutableRawBufferPointer {
        if start > 0 && (storage.count - end) < maxFrame + 2 {
            let n = end - start
            if n > 0 { storage.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: n) }
            start = 0
            end = n
        }
        return UnsafeMutableRawBufferPointer(rebasing: storage[end...])
    }

    /// `count` bytes were read into `space()`.
    public mutating func received(_ count: Int) {
        precondition(count >= 0 && end + count <= storage.count)
        end += count
    }

    /// The next whole frame, valid until the next call to `space`; nil when only part of one is buffered.
    public mutating func next() -> UnsafeRawBufferPointer? {
        while true {
            if skipping > 0 {
                let n = min(skipping, end - start)
                start += n
                skipping -= n
                if skipping > 0 { return nil }
            }
            guard end - start >= 2 else { return nil }
            let length = Int(storage[start]) << 8 | Int(storage[start + 1])
            if length == 0 {
                emptyFrames &+= 1
                start += 2
                continue
            }
            if length > maxFrame {
                oversizedFrames &+= 1
                start += 2
                skipping = length
                continue
            }
            guard end - start >= 2 + length else { return nil }
            let frame = UnsafeRawBufferPointer(rebasing: storage[(start + 2)..<(start + 2 + length)])
            start += 2 + length
            if start == end { start = 0; end = 0 }
            frames &+= 1
            return frame
        }
    }

    /// Bytes buffered and not yet taken as frames.
    public var buffered: Int { end - start }
}

/// A connection's outgoing frames waiting for the kernel: whole RFC 4571 frames only, never part of one,
/// bounded (`capacity`): a frame that does not fit is refused and the caller counts it. Allocated at its first
/// frame, so a connection that never sends media costs nothing here.
public struct FrameWriter: ~Copyable {
    public let capacity: Int
    private var storage: UnsafeMutableRawBufferPointer?
    private var start = 0
    private var end = 0

    public init(capacity: Int) { self.capacity = max(capacity, 4 + 2048) }

    deinit { storage?.deallocate() }

    /// Appends one frame; false (nothing appended) when it would not fit beside what waits. The buffer starts
    /// at 16 KiB and doubles up to `capacity` only while a reader falls behind.
    public mutating func append(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard packet.count > 0, packet.count <= 0xFFFF else { return false }
        let need = packet.count + 2
        if storage == nil { storage = .allocate(byteCount: min(capacity, 16 * 1024), alignment: 16) }
        var s = storage!
        if s.count - end < need, start > 0 {
            let n = end - start
            if n > 0 { s.baseAddress!.copyMemory(from: s.baseAddress! + start, byteCount: n) }
            start = 0
            end = n
        }
        if s.count - end < need, s.count < capacity {
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: min(capacity, max(s.count * 2, end + need)), alignment: 16)
            if end > 0 { grown.baseAddress!.copyMemory(from: s.baseAddress!, byteCount: end) }
            s.deallocate()
            storage = grown
            s = grown
        }
        guard s.count - end >= need else { return false }
        s[end] = UInt8(packet.count >> 8)
        s[end + 1] = UInt8(packet.count & 0xFF)
        (s.baseAddress! + end + 2).copyMemory(from: packet.baseAddress!, byteCount: packet.count)
        end += need
        return true
    }

    /// What waits to be written, in order.
    public var pending: UnsafeRawBufferPointer {
        guard let s = storage else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(rebasing: s[start..<end])
    }

    /// The kernel took `count` bytes of `pending`.
    public mutating func consumed(_ count: Int) {
        precondition(count >= 0 && start + count <= end)
        start += count
        if start == end { start = 0; end = 0 }
    }

    public var isEmpty: Bool { start == end }
}
