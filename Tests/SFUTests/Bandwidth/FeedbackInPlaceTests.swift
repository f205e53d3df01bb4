import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// Transport-cc feedback read in place on the media worker (issue 12): the same packets as the array parser,
/// nothing reported from a malformed feedback, and the 24-bit reference time unwrapped across its wrap.
@Suite struct FeedbackInPlaceTests {
    /// The feedback packet of `bytes` (one RTCP packet).
    func packet(_ p: UnsafeRawBufferPointer, length: Int? = nil) -> RTCPPacket {
        let n = length ?? p.count
        return RTCPPacket(packetType: p[1], countOrFormat: p[0] & 0x1F, range: 0..<n)
    }

    func write(_ r: inout TransportFeedbackRecorder, now: MonoTime) -> [UInt8]? {
        var buf = [UInt8](repeating: 0, count: 1500)
        guard let n = buf.withUnsafeMutableBytes({ r.writeFeedback(sender: 1, media: 2, now: now, into: $0) }) else { return nil }
        return Array(buf[0..<n])
    }

    @Test func readingInPlaceReportsEveryArrivalAndLossInOrder() throws {
        var rng = SplitMix64(seed: 12)
        for round in 0..<50 {
            var r = TransportFeedbackRecorder()
            let start = MonoTime.seconds(500 + Double(round))
            var expected: [UInt16: Int64] = [:]
            var t = start
            let first = UInt16(truncatingIfNeeded: rng.next())
            let count = 1 + Int(rng.next() % 300)
            for k in 0..<count {
                // Runs of losses, small and large (2-byte) deltas, now and then a packet that arrives early.
                t = t + .init(nanoseconds: Int64(rng.next() % 4 == 0 ? rng.next() % 200_000_000 : rng.next() % 3_000_000))
                if rng.next() % 5 == 0, k > 0, k < count - 1 { continue }
                let seq = first &+ UInt16(k)
                r.record(sequence: seq, arrival: t)
                expected[seq] = t.nanoseconds / 1000
            }
            while let bytes = write(&r, now: t + .milliseconds(100)) {
                var seen: [(UInt16, Int64?)] = []
                let h = try #require(bytes.withUnsafeBytes { p in
                    TransportCCFeedback.forEachPacket(p, packet(p)) { seen.append(($0, $1)) }
                })
                #expect(seen.count == h.statusCount)
                for (i, (seq, offset)) in seen.enumerated() {
                    #expect(seq == h.baseSequence &+ UInt16(i))
                    if let want = expected[seq] {
                        let got = try #require(offset.map { $0 + Int64(h.referenceTime) * 64_000 }, "seq \(seq) arrived")
                        #expect(abs(got - want) < 250, "seq \(seq): \(got) vs \(want)")
                    } else {
                        #expect(offset == nil, "seq \(seq) was lost")
                    }
                }
            }
        }
    }

    @Test func aMalformedFeedbackReportsNothingAtAll() throws {
        var r = TransportFeedbackRecorder()
        for k in 0..<40 where k % 7 != 3 { r.record(sequence: UInt16(k), arrival: .seconds(10) + .milliseconds(Int64(k) * 30)) }
        let bytes = try #require(write(&r, now: .seconds(12)))
        // Cut short anywhere past the fixed fields: the chunks or the deltas no longer fit.
        for cut in 20..<(bytes.count - 3) {
            var calls = 0
            let h = bytes.withUnsafeBytes { p in TransportCCFeedback.forEachPacket(p, packet(p, length: cut)) { _, _ in calls += 1 } }
            #expect(h == nil && calls == 0, "cut at \(cut)")
        }
        // The reserved symbol 3 in a status vector, and more packets than allowed.
        var reserved = bytes
        reserved[20] = 0xFF
        reserved[21] = 0xFF
        var calls = 0
        #expect(reserved.withUnsafeBytes { p in TransportCCFeedback.forEachPacket(p, packet(p)) { _, _ in calls += 1 } } == nil)
        #expect(bytes.withUnsafeBytes { p in TransportCCFeedback.forEachPacket(p, packet(p), maxPackets: 39) { _, _ in calls += 1 } } == nil)
        #expect(calls == 0)
        #expect(bytes.withUnsafeBytes { p in TransportCCFeedback.forEachPacket(p, packet(p), maxPackets: 40) { _, _ in calls += 1 } } != nil)
        #expect(calls == 40)
    }

    /// Packets sent 10 ms apart that arrive 10 ms apart across the moment the receiver's 24-bit reference time
    /// (64 ms units) wraps: read as signed it jumps from 2^23 - 1 to -2^23, 6.2 days into the receiver's clock.
    @Test func arrivalsStayContinuousWhenTheReferenceTimeWraps() throws {
        for wrapAt in [Int64(1) << 23, Int64(1) << 24, 3 << 23] {
            let wrapMicros = wrapAt * 64_000
            var history = SendHistory(firstSequence: 65_000)
            var inPlace = SendHistory(firstSequence: 65_000)
            var r = TransportFeedbackRecorder()
            let sendStart = MonoTime.seconds(100)
            let arrivalStart = MonoTime(nanoseconds: (wrapMicros - 300_000) * 1000)  // the wrap is 30 packets in
            var feedback: [[UInt8]] = []
            for k in 0..<60 {
                let seq = history.stamp(size: 1000, now: sendStart + .milliseconds(Int64(k) * 10))
                _ = inPlace.stamp(size: 1000, now: sendStart + .milliseconds(Int64(k) * 10))
                let arrival = arrivalStart + .milliseconds(Int64(k) * 10)
                r.record(sequence: seq, arrival: arrival)
                if k % 10 == 9, let f = write(&r, now: arrival) { feedback.append(f) }
            }
            #expect(feedback.count == 6)
            // In order, then with two feedbacks swapped on the way: each is read nearest the one before.
            for order in [[0, 1, 2, 3, 4, 5], [0, 1, 3, 2, 4, 5]] {
                var parsed = history, raw = inPlace
                var arrivals: [Int64: Int64] = [:]
                for i in order {
                    try feedback[i].withUnsafeBytes { p in
                        let fb = try #require(TransportCCFeedback.parse(p, packet(p)))
                        for f in parsed.resolve(fb) { arrivals[f.sequence] = f.arrivalMicros }
                        #expect(raw.resolve(p, packet(p)) != nil)
                        #expect(raw.resolved == parsed.resolve(fb), "both readings agree")
                    }
                }
                #expect(arrivals.count == 60)
                // Only differences matter (the receiver's clock has an unknown origin).
                let base = try #require(arrivals.keys.min())
                let first = try #require(arrivals[base])
                for (seq, arrival) in arrivals {
                    let expected = first + (seq - base) * 10_000
                    #expect(abs(arrival - expected) < 250, "wrap at \(wrapAt), order \(order), seq \(seq): \(arrival) vs \(expected)")
                }
            }
        }
    }

    @Test func aLargeFeedbackIsResolvedWholeButItsBufferIsNotKept() throws {
        var history = SendHistory(firstSequence: 0)
        var r = TransportFeedbackRecorder()
        for k in 0..<400 {
            let seq = history.stamp(size: 1200, now: .seconds(5) + .milliseconds(Int64(k)))
            if k < 390 { r.record(sequence: seq, arrival: .seconds(9) + .milliseconds(Int64(k))) }
        }
        let large = try #require(write(&r, now: .seconds(10)))
        for k in 390..<400 { r.record(sequence: UInt16(k), arrival: .seconds(10) + .milliseconds(Int64(k))) }
        let small = try #require(write(&r, now: .seconds(11)))
        let h1 = large.withUnsafeBytes { p in history.resolve(p, packet(p)) }
        #expect(h1?.statusCount == 390)
        #expect(history.resolved.count == 390 && history.resolved.last?.sequence == 389)
        let h2 = small.withUnsafeBytes { p in history.resolve(p, packet(p)) }
        #expect(h2?.statusCount == 10)
        #expect(history.resolved.map(\.sequence) == Array(390..<400))
        #expect(history.resolved.capacity <= SendHistory.keptResolvedCapacity)
    }
}
