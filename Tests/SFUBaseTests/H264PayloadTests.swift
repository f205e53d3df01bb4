import SFUMedia
import SFUSimulation
import Testing
@testable import SFUBase

/// RFC 6184 payloads built byte by byte from its figures. NAL unit headers: 0x65 IDR slice (NRI 3, type 5),
/// 0x41 non-IDR slice (NRI 2, type 1), 0x67 SPS, 0x68 PPS, 0x06 SEI (NRI 0).
@Suite struct H264PayloadTests {
    func parse(_ s: String) -> Result<H264Payload, DropReason> { hex(s).withUnsafeBytes { H264Payload.parse($0) } }

    /// Every whole NAL unit the walker reports, as (type, bytes).
    func units(_ s: String) throws -> [(UInt8, [UInt8])] {
        let b = hex(s)
        let h = try #require(parse(s).successValue)
        var out: [(UInt8, [UInt8])] = []
        b.withUnsafeBytes { p in h.forEachNALUnit(in: p) { unit, r in out.append((unit.type, Array(b[r]))) } }
        return out
    }

    // Figure 2 (section 5.6): the payload is the NAL unit, its first byte the NAL unit header.
    @Test func singleIDRSliceStartsAKeyFrame() throws {
        let h = try #require(parse("65 88 84 00 33").successValue)
        #expect(h.packet == .single)
        #expect(h.header.nri == 3 && h.nalType == 5)
        #expect(h.isKeyframeStart && !h.carriesSPS && !h.carriesPPS)
        #expect(try units("65 88 84 00 33").map(\.1) == [hex("65 88 84 00 33")])
    }

    @Test func singleParameterSetsAndSlices() throws {
        let sps = try #require(parse("67 42 c0 1f").successValue)
        #expect(sps.isKeyframeStart && sps.carriesSPS && !sps.carriesPPS, "an SPS opens a key frame")
        let pps = try #require(parse("68 ce 3c 80").successValue)
        #expect(!pps.isKeyframeStart && pps.carriesPPS && !pps.carriesSPS)
        let slice = try #require(parse("41 9a 02 03").successValue)
        #expect(!slice.isKeyframeStart && slice.nalType == 1 && slice.header.nri == 2)
        #expect(try #require(parse("0b").successValue).nalType == 11, "a one-byte NAL unit (end of stream) is whole")
    }

    // Figure 7 (section 5.7.1): a STAP-A header (F=0, NRI=3, type 24), then each unit after its 16-bit size.
    @Test func stapAWithParameterSetsAndIDRSlice() throws {
        let s = "78  00 04 67 42 c0 1f  00 04 68 ce 3c 80  00 03 65 88 84"
        let h = try #require(parse(s).successValue)
        #expect(h.packet == .stapA(units: 3))
        #expect(h.nalType == 7, "the first unit's type")
        #expect(h.carriesSPS && h.carriesPPS && h.isKeyframeStart)
        let u = try units(s)
        #expect(u.map(\.0) == [7, 8, 5])
        #expect(u.map(\.1) == [hex("67 42 c0 1f"), hex("68 ce 3c 80"), hex("65 88 84")])
    }

    @Test func stapAWithIDRSliceAloneStartsAKeyFrameAndWithoutOneDoesNot() throws {
        #expect(try #require(parse("78 00 02 68 ce 00 03 65 88 84").successValue).isKeyframeStart)
        let plain = try #require(parse("18 00 02 06 05 00 03 41 9a 02").successValue)  // SEI + non-IDR slice
        #expect(plain.packet == .stapA(units: 2) && !plain.isKeyframeStart && !plain.carriesSPS)
        #expect(plain.header.nri == 0)
    }

    // Figure 14 (section 5.8): FU indicator (F, NRI, type 28), FU header |S|E|R|Type|, then the fragment.
    @Test func fuAFirstFragmentOfIDRSliceStartsAKeyFrame() throws {
        let h = try #require(parse("7c 85 88 84 00").successValue)
        #expect(h.packet == .fuA(start: true, end: false))
        #expect(h.nalType == 5 && h.header.nri == 3 && h.header.type == 28)
        #expect(h.isKeyframeStart)
        #expect(try units("7c 85 88 84 00").isEmpty, "a fragment is no whole NAL unit")
    }

    @Test func fuAMiddleAndEndFragmentsAndOtherSlicesStartNothing() throws {
        let middle = try #require(parse("7c 05 11 22").successValue)
        #expect(middle.packet == .fuA(start: false, end: false) && middle.nalType == 5 && !middle.isKeyframeStart)
        let end = try #require(parse("7c 45 11").successValue)
        #expect(end.packet == .fuA(start: false, end: true) && !end.isKeyframeStart)
        let slice = try #require(parse("5c 81 9a").successValue)
        #expect(slice.packet == .fuA(start: true, end: false) && slice.nalType == 1 && !slice.isKeyframeStart)
        #expect(try #require(parse("7c 87 42 c0").successValue).carriesSPS, "an SPS fragmented from its start")
    }

    @Test func fuAReservedBitIsIgnoredAndTwoBytesSuffice() throws {
        #expect(try #require(parse("7c a5 88").successValue).packet == .fuA(start: true, end: false))  // R = 1
        #expect(try #require(parse("7c 45").successValue).packet == .fuA(start: false, end: true))
    }

    @Test(arguments: [
        ("", "empty payload"),
        ("e5 88 84", "F bit set on a single NAL unit"),
        ("f8 00 02 67 42", "F bit set on a STAP-A"),
        ("fc 85 88", "F bit set on a FU indicator"),
        ("00 11 22", "type 0, reserved"),
        ("79 00 00 00 02 67 42", "STAP-B (25), interleaved mode only"),
        ("7a 00 00 00 00 00 00", "MTAP16 (26), interleaved mode only"),
        ("7b 00 00 00 00 00 00 00", "MTAP24 (27), interleaved mode only"),
        ("7d 85 00 00 88", "FU-B (29), interleaved mode only"),
        ("7e 11 22", "type 30, reserved"),
        ("7f 11 22", "type 31, reserved"),
        ("78", "STAP-A without a unit"),
        ("78 00", "STAP-A size cut short"),
        ("78 00 04 67 42 c0", "STAP-A unit longer than the payload"),
        ("78 00 04 67 42 c0 1f 00", "STAP-A second size cut short"),
        ("78 00 00", "STAP-A unit of size 0"),
        ("78 00 02 67 42 00 00 68 ce", "STAP-A unit of size 0 after a valid one"),
        ("78 00 02 e7 42", "F bit set on an aggregated unit"),
        ("78 00 02 78 00", "a STAP-A nested in a STAP-A"),
        ("78 00 02 00 42", "an aggregated unit of type 0"),
        ("7c", "FU-A of one byte"),
        ("7c c5 88 84", "FU-A with both S and E"),
        ("7c 9c 00", "FU-A fragmenting a FU-A"),
        ("7c 80 00", "FU-A fragmenting type 0"),
    ])
    func refusesMalformedPayloads(_ s: String, _ why: String) {
        #expect(parse(s).failureValue == .badCodecPayload, "\(why)")
    }

    /// Every prefix of a valid packet parses without trapping; exactly the expected lengths are accepted
    /// (for a STAP-A, those ending on a unit boundary), and what is accepted reports only ranges inside it.
    @Test(arguments: [
        ("65 88 84 00 33", Set(1...5)),
        ("78  00 04 67 42 c0 1f  00 04 68 ce 3c 80  00 03 65 88 84", Set([7, 13, 18])),
        ("7c 85 88 84 00", Set(2...5)),
    ])
    func everyTruncationFailsCleanlyOrEndsOnABoundary(_ s: String, _ accepted: Set<Int>) {
        let whole = hex(s)
        var ok = Set<Int>()
        for n in 0...whole.count {
            let prefix = Array(whole.prefix(n))
            prefix.withUnsafeBytes { p in
                switch H264Payload.parse(p) {
                case .success(let h):
                    ok.insert(n)
                    h.forEachNALUnit(in: p) { _, r in #expect(r.lowerBound >= 0 && r.upperBound <= n && !r.isEmpty) }
                case .failure(let reason):
                    #expect(reason == .badCodecPayload)
                }
            }
        }
        #expect(ok == accepted)
    }

    @Test func truncatedSTAPAReportsTheUnitsBeforeTheCut() throws {
        let h = try #require(parse("78 00 04 67 42 c0 1f 00 04 68 ce 3c 80").successValue)
        #expect(h.packet == .stapA(units: 2) && h.carriesSPS && h.carriesPPS)
    }
}
