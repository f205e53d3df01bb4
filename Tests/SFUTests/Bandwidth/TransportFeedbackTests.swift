import Testing
@testable import SFU
@testable import SFUBase

/// Transport-wide feedback as the node writes it for publishers, read back by the parser a sender uses.
@Suite struct TransportFeedbackTests {
    func parse(_ bytes: [UInt8]) -> TransportCCFeedback? {
        bytes.withUnsafeBytes { p -> TransportCCFeedback? in
            var fb: TransportCCFeedback?
            _ = RTCPCompound.forEach(p) { pkt in fb = TransportCCFeedback.parse(p, pkt) }
            return fb
        }
    }

    func write(_ r: inout TransportFeedbackRecorder, now: MonoTime) -> [UInt8]? {
        var buf = [UInt8](repeating: 0, count: 1500)
        guard let n = buf.withUnsafeMutableBytes({ r.writeFeedback(sender: 1, media: 2, now: now, into: $0) }) else { return nil }
        return Array(buf[0..<n])
    }

    @Test func arrivalsLossesAndLateGapsComeBackAsTheSenderNeedsThem() throws {
        var r = TransportFeedbackRecorder()
        let start = MonoTime.seconds(1000.0123)
        // 60 packets 5 ms apart, sequence numbers wrapping past 65535; 17, 18 and 40 lost; 30 arrives 300 ms late.
        var expected: [UInt16: Int64] = [:]
        for k in 0..<60 where ![17, 18, 40].contains(k) {
            let seq = UInt16(truncatingIfNeeded: 65_520 + k)
            let at = start + .milliseconds(Int64(k) * 5 + (k == 30 ? 300 : 0))
            r.record(sequence: seq, arrival: at)
            expected[seq] = at.nanoseconds / 1000
        }
        let bytes = try #require(write(&r, now: start + .milliseconds(400)))
        #expect(bytes.count % 4 == 0 && bytes.count < 200)
        let fb = try #require(parse(bytes))
        #expect(fb.baseSequence == 65_520 && fb.packets.count == 60 && fb.senderSSRC == 1 && fb.mediaSSRC == 2)
        let reference = Int64(fb.referenceTime) * 64_000
        for p in fb.packets {
            if let want = expected[p.sequenceNumber] {
                let got = try #require(p.arrivalOffsetMicros.map { $0 + reference })
                #expect(abs(got - want) < 250, "seq \(p.sequenceNumber): \(got) vs \(want)")
            } else {
                #expect(p.arrivalOffsetMicros == nil, "seq \(p.sequenceNumber) was lost")
            }
        }
        #expect(write(&r, now: start + .milliseconds(500)) == nil, "nothing new to report")
        r.record(sequence: 65_525, arrival: start + .milliseconds(600))  // already reported: ignored
        #expect(write(&r, now: start + .milliseconds(700)) == nil)
        r.record(sequence: UInt16(truncatingIfNeeded: 65_520 + 60), arrival: start + .milliseconds(800))
        let nextBytes = try #require(write(&r, now: start + .milliseconds(900)))
        let next = try #require(parse(nextBytes))
        #expect(next.baseSequence == UInt16(truncatingIfNeeded: 65_520 + 60) && next.packets.count == 1 && next.feedbackCount == 1)
    }

    @Test func aLongRunIsSplitAcrossFeedbackPacketsOfBoundedSize() throws {
        var r = TransportFeedbackRecorder()
        for k in 0..<1000 { r.record(sequence: UInt16(k), arrival: .seconds(10) + .milliseconds(Int64(k))) }
        var covered = 0
        var packets = 0
        while let bytes = write(&r, now: .seconds(12)) {
            #expect(bytes.count <= 1200)
            covered += try #require(parse(bytes)).packets.count
            packets += 1
        }
        #expect(covered == 1000 && packets == 3)
    }

    @Test func packetsLostAfterTheLastReportedOneAreReportedLostInTheNextFeedback() throws {
        var r = TransportFeedbackRecorder()
        let start = MonoTime.seconds(50)
        for k in 0..<10 { r.record(sequence: UInt16(k), arrival: start + .milliseconds(Int64(k) * 5)) }
        let firstBytes = try #require(write(&r, now: start + .milliseconds(100)))
        let first = try #require(parse(firstBytes))
        #expect(first.baseSequence == 0 && first.packets.count == 10)
        // An outage under way when that feedback went out: 10...39 never arrive, then 40...44 do.
        for k in 40..<45 { r.record(sequence: UInt16(k), arrival: start + .milliseconds(400 + Int64(k - 40) * 5)) }
        let nextBytes = try #require(write(&r, now: start + .milliseconds(500)))
        let next = try #require(parse(nextBytes))
        #expect(next.baseSequence == 10 && next.packets.count == 35, "the burst is reported, not skipped")
        #expect(next.packets.prefix(30).allSatisfy { $0.arrivalOffsetMicros == nil })
        let reference = Int64(next.referenceTime) * 64_000
        let arrivals = next.packets.suffix(5).compactMap { $0.arrivalOffsetMicros.map { $0 + reference } }
        let want = (0..<5).map { (start + .milliseconds(400 + Int64($0) * 5)).nanoseconds / 1000 }
        #expect(arrivals.count == 5 && zip(arrivals, want).allSatisfy { abs($0 - $1) < 250 })
    }
}
