import Testing
@testable import SFU
@testable import SFUBase

@Suite struct SlotRewriterTests {
    @Test func switchKeepsSequenceGaplessAndTimestampsWallClockConsistent() {
        var r = SlotRewriter(clockRate: 48_000, framesSpanPackets: false)
        r.switchTo(1)
        var outs: [SlotRewriter.Output] = []
        for i in 0..<10 {
            outs.append(r.rewrite(extendedSequence: 65530 + Int64(i), timestamp: UInt32(4_294_960_000) &+ UInt32(i * 960),
                                  marker: false, vp8: nil, now: .milliseconds(Int64(i) * 20))!)
        }
        r.switchTo(2)
        // The new source's numbering is unrelated; 100 ms of wall time passed since the last output.
        let first = r.rewrite(extendedSequence: 7, timestamp: 123, marker: false, vp8: nil, now: .milliseconds(280))!
        let second = r.rewrite(extendedSequence: 8, timestamp: 123 + 960, marker: false, vp8: nil, now: .milliseconds(300))!
        #expect(first.firstAfterSwitch && !second.firstAfterSwitch)
        #expect(first.sequenceNumber == outs.last!.sequenceNumber &+ 1)
        #expect(second.sequenceNumber == first.sequenceNumber &+ 1)
        #expect(first.timestamp &- outs.last!.timestamp == 100 * 48)
        #expect(r.rewrite(extendedSequence: 6, timestamp: 0, marker: false, vp8: nil, now: .milliseconds(300)) == nil,
                "older packets of the new source are stale")
    }

    @Test func aLatePacketIsPlacedOnlyWithinTheReplayWindow() {
        // A packet far behind the newest (a publisher's sequence numbers jumping 30,000 ahead, then one from the
        // gap) would be numbered 30,000 back: the receiver's SRTP (and the node's own protect) refuse that as a
        // replay, so it is stale, not sent.
        var r = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        r.switchTo(1)
        _ = r.rewrite(extendedSequence: 100, timestamp: 0, marker: true, vp8: nil, now: .zero)
        _ = r.rewrite(extendedSequence: 30_100, timestamp: 900, marker: true, vp8: nil, now: .milliseconds(20))
        #expect(r.rewrite(extendedSequence: 30_100 - SlotRewriter.lateWindow - 1, timestamp: 450, marker: true, vp8: nil, now: .milliseconds(30)) == nil)
        let near = r.rewrite(extendedSequence: 30_100 - SlotRewriter.lateWindow, timestamp: 450, marker: true, vp8: nil, now: .milliseconds(30))
        #expect(near?.sequenceNumber == UInt16(30_100 - SlotRewriter.lateWindow), "within the window it takes its place")
    }

    @Test func switchAfterADayIdleAdvancesTimestampWithoutOverflow() {
        var r = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        r.switchTo(1)
        let a = r.rewrite(extendedSequence: 1, timestamp: 0, marker: true, vp8: nil, now: .zero)!
        r.switchTo(2)
        let b = r.rewrite(extendedSequence: 9, timestamp: 77, marker: true, vp8: nil, now: .seconds(86_400 * 3))!
        #expect(b.sequenceNumber == a.sequenceNumber &+ 1)
        #expect(b.timestamp == 3600 * 90_000, "the advance is capped at one hour")
    }

    @Test func videoSwitchAfterCutFrameLeavesOneSequenceGap() {
        var r = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        r.switchTo(1)
        let a = r.rewrite(extendedSequence: 100, timestamp: 0, marker: false, vp8: nil, now: .zero)!  // frame not finished
        r.switchTo(2)
        let b = r.rewrite(extendedSequence: 5000, timestamp: 0, marker: true, vp8: nil, now: .milliseconds(10))!
        #expect(b.sequenceNumber == a.sequenceNumber &+ 2)
    }

    @Test func vp8PictureIDAndTL0ContinueAcrossSwitch() throws {
        func desc(_ pid: UInt16, _ tl0: UInt8) -> VP8Descriptor {
            var b: [UInt8] = [0x90, 0xC0, 0x80 | UInt8(pid >> 8), UInt8(pid & 0xFF), tl0, 0x00]
            return b.withUnsafeMutableBytes { VP8Descriptor.parse(UnsafeRawBufferPointer($0)) }.successValue!
        }
        var r = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        r.switchTo(1)
        let a = r.rewrite(extendedSequence: 1, timestamp: 0, marker: true, vp8: desc(0x7FFF, 255), now: .zero)!
        r.switchTo(2)
        let b = r.rewrite(extendedSequence: 900, timestamp: 5, marker: true, vp8: desc(1234, 17), now: .milliseconds(33))!
        let c = r.rewrite(extendedSequence: 901, timestamp: 3005, marker: true, vp8: desc(1235, 18), now: .milliseconds(66))!
        #expect(a.pictureID == 0x7FFF && b.pictureID == 0 && c.pictureID == 1)
        #expect(a.tl0PicIdx == 255 && b.tl0PicIdx == 0 && c.tl0PicIdx == 1)
    }
}
