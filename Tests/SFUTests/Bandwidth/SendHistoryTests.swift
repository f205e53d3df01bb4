import SFU
import Testing

/// When the node says it sent a packet: the time its batch went to the kernel, not the time it was written.
@Suite struct SendHistoryTests {
    @Test func stampedPacketsTakeTheirBatchsDepartureTime() throws {
        var h = SendHistory(firstSequence: 65_534)
        let written = MonoTime.milliseconds(1_000), left = MonoTime.milliseconds(1_007)
        let seqs = (0..<3).map { _ in h.stamp(size: 600, now: written) }
        #expect(seqs == [65_534, 65_535, 0], "sequence numbers wrap as on the wire")
        h.departed(at: left)
        #expect(seqs.map { h.lookup($0)?.sendTime } == [left, left, left], "the 7 ms the worker took to send them is not the downlink's")
        let later = h.stamp(size: 600, now: .milliseconds(1_020))
        #expect(h.lookup(later)?.sendTime == .milliseconds(1_020), "a packet not yet sent keeps the time it was written")
        #expect(h.lookup(seqs[0])?.sendTime == left, "a departure is not moved by later ones")
        h.departed(at: .milliseconds(1_021))
        #expect(h.lookup(later)?.sendTime == .milliseconds(1_021))
        #expect(h.lookup(seqs[2])?.sendTime == left)
    }

    @Test func aDepartureAfterMoreThanTheHistoryHoldsTouchesOnlyWhatItHolds() {
        var h = SendHistory(firstSequence: 0)
        for _ in 0..<(SendHistory.capacity + 10) { _ = h.stamp(size: 100, now: .milliseconds(5)) }
        h.departed(at: .milliseconds(6))
        #expect(h.lookup(UInt16(SendHistory.capacity + 9))?.sendTime == .milliseconds(6))
        #expect(h.lookup(9) == nil, "overwritten by the ring")
    }
}
