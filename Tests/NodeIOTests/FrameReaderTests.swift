@testable import NodeIO
import Testing

/// RFC 4571 framing: a 16-bit length in network order before each packet (RFC 6544 section 3 carries STUN,
/// DTLS and SRTP this way over ICE-TCP).
@Suite struct FrameReaderTests {
    /// Feeds `bytes` to the reader `chunk` bytes at a time and returns the frames it gave, in order.
    struct Outcome { var frames: [[UInt8]]; var buffered: Int; var count: UInt64; var oversized: UInt64; var empty: UInt64 }

    static func frames(_ bytes: [UInt8], chunk: Int, maxFrame: Int = 2048) -> Outcome {
        var r = FrameReader(maxFrame: maxFrame, capacity: maxFrame + 2 + 100)
        var out: [[UInt8]] = []
        var at = 0
        while at < bytes.count {
            let space = r.space()
            let n = min(chunk, space.count, bytes.count - at)
            for k in 0..<n { space[k] = bytes[at + k] }
            r.received(n)
            at += n
            while let f = r.next() { out.append(Array(f)) }
        }
        return Outcome(frames: out, buffered: r.buffered, count: r.frames, oversized: r.oversizedFrames, empty: r.emptyFrames)
    }

    static func framed(_ packets: [[UInt8]]) -> [UInt8] {
        packets.flatMap { [UInt8($0.count >> 8), UInt8($0.count & 0xFF)] + $0 }
    }

    @Test func framesComeOutWholeHoweverTheStreamIsCut() {
        let packets: [[UInt8]] = [[1], [2, 3], Array(repeating: 9, count: 1200), [0x00, 0x01, 0x00, 0x00], Array(repeating: 7, count: 2048)]
        let stream = Self.framed(packets)
        #expect(Array(stream[0..<3]) == [0x00, 0x01, 0x01], "the length is 16 bits, network order")
        for chunk in [1, 2, 3, 7, 1000, stream.count] {
            let o = Self.frames(stream, chunk: chunk)
            #expect(o.frames == packets, "cut every \(chunk) bytes")
            #expect(o.buffered == 0 && o.count == UInt64(packets.count))
        }
    }

    @Test func anOversizedFrameIsSkippedWholeAndTheStreamStaysInStep() {
        let big = [UInt8](repeating: 0xEE, count: 5000)
        let stream = Self.framed([[1, 1], big, [2, 2], Array(repeating: 3, count: 65535), [4]])
        for chunk in [1, 500, stream.count] {
            let o = Self.frames(stream, chunk: chunk, maxFrame: 1500)
            #expect(o.frames == [[1, 1], [2, 2], [4]], "cut every \(chunk)")
            #expect(o.oversized == 2)
        }
    }

    @Test func anEmptyFrameIsCountedAndSkipped() {
        let o = Self.frames([0, 0, 0, 1, 5, 0, 0], chunk: 1)
        #expect(o.frames == [[5]])
        #expect(o.empty == 2)
    }

    @Test func aPartFrameWaitsForTheRest() {
        var r = FrameReader(maxFrame: 100, capacity: 200)
        let space = r.space()
        space[0] = 0; space[1] = 3; space[2] = 1
        r.received(3)
        let none = r.next() == nil, buffered = r.buffered
        #expect(none && buffered == 3)
        let more = r.space()
        more[0] = 2; more[1] = 3
        r.received(2)
        let frame = r.next().map(Array.init)
        #expect(frame == [1, 2, 3])
    }

    @Test func theWriterKeepsWholeFramesWithinItsBound() {
        var w = FrameWriter(capacity: 4 + 2048)
        let p = [UInt8](repeating: 1, count: 1000)
        #expect(p.withUnsafeBytes { w.append($0) })
        #expect(p.withUnsafeBytes { w.append($0) })
        #expect(!p.withUnsafeBytes { w.append($0) }, "a third frame does not fit: refused whole")
        let waiting = w.pending.count, head = Array(w.pending[0..<3])
        #expect(waiting == 2004)
        #expect(head == [0x03, 0xE8, 1])
        w.consumed(1500)  // the kernel took part of the second frame
        #expect(p.withUnsafeBytes { w.append($0) }, "room made by what the kernel took")
        let after = w.pending.count
        #expect(after == 504 + 1002)
        w.consumed(after)
        let empty = w.isEmpty
        #expect(empty)
        #expect(![UInt8]().withUnsafeBytes { w.append($0) }, "an empty packet is no frame")
    }
}
