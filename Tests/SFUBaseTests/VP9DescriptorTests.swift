import SFUMedia
import SFUSimulation
import Testing
@testable import SFUBase

/// RFC 9628 descriptors built byte by byte from the figures of section 4.2 (flexible and non-flexible mode)
/// and of section 4.2.1 (the scalability structure).
@Suite struct VP9DescriptorTests {
    func parse(_ s: String) -> Result<VP9Descriptor, DropReason> { hex(s).withUnsafeBytes { VP9Descriptor.parse($0) } }

    /// Non-flexible mode with an SS: the first packet of a key frame of a three-layer stream.
    ///   aa          I=1 P=0 L=1 F=0 B=1 E=0 V=1 Z=0
    ///   81 23       M=1, picture ID 0x0123
    ///   00          TID 0, U 0, SID 0, D 0
    ///   07          TL0PICIDX 7
    ///   58          SS: N_S=2 (three layers), Y=1, G=1
    ///   01 40 00 b4 / 02 80 01 68 / 05 00 02 d0     320x180, 640x360, 1280x720
    ///   02          N_G=2
    ///   04 01       TID 0, U 0, R 1; P_DIFF 1
    ///   34 01       TID 1, U 1, R 1; P_DIFF 1
    ///   9d          VP9 data
    static let keyframeWithSS = "aa 81 23 00 07 58 01 40 00 b4 02 80 01 68 05 00 02 d0 02 04 01 34 01 9d"

    // Section 4.2, non-flexible mode figure; SS per section 4.2.1's figure.
    @Test func parsesNonFlexibleKeyFrameWithScalabilityStructure() throws {
        let d = try #require(parse(Self.keyframeWithSS).successValue)
        #expect(!d.flexibleMode && !d.interPicturePredicted && d.startOfLayerFrame && !d.endOfLayerFrame)
        #expect(d.pictureID == 0x0123 && d.pictureIDIs15Bit && d.pictureIDOffset == 1)
        #expect(d.temporalLayer == 0 && d.spatialLayer == 0 && !d.switchingUpPoint && !d.interLayerDependency)
        #expect(d.tl0PicIdx == 7 && d.tl0Offset == 4)
        #expect(d.referenceDiffs.isEmpty)
        let ss = try #require(d.scalability)
        #expect(ss.offset == 5 && ss.size == 18)
        #expect(ss.spatialLayers == 3 && ss.pictureGroupSize == 2)
        #expect(Array(ss.resolutions) == [.init(width: 320, height: 180), .init(width: 640, height: 360),
                                          .init(width: 1280, height: 720)])
        #expect(ss.resolution(ofLayer: 2) == .init(width: 1280, height: 720) && ss.resolution(ofLayer: 3) == nil)
        #expect(d.size == 23)
        #expect(d.isKeyframeStart)
    }

    // Section 4.2, flexible mode figure.
    ///   fd          I=1 P=1 L=1 F=1 B=1 E=1 V=0 Z=1
    ///   05          M=0, picture ID 5
    ///   23          TID 1, U 0, SID 1, D 1 (no TL0PICIDX in flexible mode)
    ///   03 05 08    P_DIFF 1 (N=1), 2 (N=1), 4 (N=0)
    @Test func parsesFlexibleModeReferences() throws {
        let d = try #require(parse("fd 05 23 03 05 08 aa").successValue)
        #expect(d.flexibleMode && d.interPicturePredicted && d.startOfLayerFrame && d.endOfLayerFrame)
        #expect(d.notReferencedByUpperSpatialLayers)
        #expect(d.pictureID == 5 && !d.pictureIDIs15Bit && d.pictureIDModulus == 128)
        #expect(d.temporalLayer == 1 && d.spatialLayer == 1 && d.interLayerDependency && !d.switchingUpPoint)
        #expect(d.tl0PicIdx == nil && d.tl0Offset == 0)
        #expect(Array(d.referenceDiffs) == [1, 2, 4])
        #expect(d.scalability == nil && d.size == 6)
        #expect(!d.isKeyframeStart)
    }

    @Test func flexibleModeKeyFrameHasNoReferences() throws {
        let d = try #require(parse("b8 05 50 aa").successValue)  // I L F B; TID 2, U, SID 0
        #expect(d.referenceDiffs.isEmpty && d.size == 3)
        #expect(d.temporalLayer == 2 && d.switchingUpPoint && d.tl0PicIdx == nil)
        #expect(d.isKeyframeStart)
    }

    @Test func keyFrameStartNeedsBeginningNoPredictionAndTheBaseSpatialLayer() throws {
        #expect(try #require(parse("08 aa").successValue).isKeyframeStart, "B, P=0, no layer indices")
        #expect(try #require(parse("00 aa").successValue).isKeyframeStart == false, "not the first packet")
        #expect(try #require(parse("48 aa").successValue).isKeyframeStart == false, "P=1")
        let upper = try #require(parse("28 02 07 aa").successValue)  // L, B; SID 1
        #expect(upper.spatialLayer == 1 && !upper.isKeyframeStart, "a key picture's upper layer starts nothing")
        #expect(try #require(parse("28 00 07 aa").successValue).isKeyframeStart, "SID 0")
    }

    @Test func scalabilityStructureWithoutSizesOrPictureGroup() throws {
        let ss = try #require(parse("0a 00").successValue?.scalability)  // B V; N_S=0, Y=0, G=0
        #expect(ss.spatialLayers == 1 && ss.resolutions.isEmpty && ss.pictureGroupSize == nil && ss.size == 1)
        let gOnly = try #require(parse("0a 08 00").successValue?.scalability)  // G with N_G = 0
        #expect(gOnly.pictureGroupSize == 0 && gOnly.size == 2)
    }

    @Test func scalabilityStructureKeepsThreeResolutionsButSpansAllLayers() throws {
        // N_S=4 (five layers), Y=1: 20 bytes of sizes; then a picture group of one picture with R=3.
        let s = "0a 98 00 10 00 10 00 20 00 20 00 40 00 40 00 80 00 80 01 00 01 00 01 0c 01 02 03 9d"
        let d = try #require(parse(s).successValue)
        let ss = try #require(d.scalability)
        #expect(ss.spatialLayers == 5 && ss.resolutions.count == 3)
        #expect(ss.resolution(ofLayer: 2) == .init(width: 64, height: 64) && ss.resolution(ofLayer: 4) == nil)
        #expect(ss.pictureGroupSize == 1 && ss.size == 1 + 20 + 1 + 1 + 3)
        #expect(d.size == 27 && hex(s)[d.size] == 0x9d)
    }

    @Test func rewritesFifteenBitPictureIDAndTL0InPlace() throws {
        var b = hex(Self.keyframeWithSS)
        let d = try #require(b.withUnsafeBytes { VP9Descriptor.parse($0) }.successValue)
        b.withUnsafeMutableBytes { d.rewrite(pictureID: 0x7FFE, tl0PicIdx: 200, in: $0) }
        #expect(b == hex("aa ff fe 00 c8") + hex(Self.keyframeWithSS).dropFirst(5))
        var expected = d
        expected.pictureID = 0x7FFE
        expected.tl0PicIdx = 200
        #expect(b.withUnsafeBytes { VP9Descriptor.parse($0) }.successValue == expected, "round trip")
    }

    @Test func rewritesSevenBitPictureIDModulo128AndLeavesAbsentFieldsAlone() throws {
        var b = hex("fd 05 23 03 05 08 aa")
        let d = try #require(b.withUnsafeBytes { VP9Descriptor.parse($0) }.successValue)
        b.withUnsafeMutableBytes { d.rewrite(pictureID: 0x1FF, tl0PicIdx: 9, in: $0) }  // no TL0PICIDX here
        #expect(b == hex("fd 7f 23 03 05 08 aa"))
        let again = try #require(b.withUnsafeBytes { VP9Descriptor.parse($0) }.successValue)
        #expect(again.pictureID == 0x7F && !again.pictureIDIs15Bit && Array(again.referenceDiffs) == [1, 2, 4])

        var none = hex("08 aa")
        let n = try #require(none.withUnsafeBytes { VP9Descriptor.parse($0) }.successValue)
        none.withUnsafeMutableBytes { n.rewrite(pictureID: 3, tl0PicIdx: 4, in: $0) }
        #expect(none == hex("08 aa"), "nothing to rewrite")
    }

    @Test(arguments: [
        ("", "empty payload"),
        ("80", "I without a picture ID"),
        ("80 80", "M without the picture ID's second byte"),
        ("20", "L without layer indices"),
        ("20 00", "non-flexible L without TL0PICIDX"),
        ("30", "flexible L without layer indices"),
        ("50", "flexible P without a P_DIFF"),
        ("50 03", "N set on the last P_DIFF"),
        ("d0 05 03 05 07 08", "a fourth P_DIFF"),
        ("02", "V without an SS"),
        ("02 10 01 40 00", "Y without a whole height"),
        ("02 50 01 40 00 b4 02 80", "Y with sizes for one of three layers"),
        ("02 08", "G without N_G"),
        ("02 08 01", "N_G = 1 without its picture"),
        ("02 08 01 08", "a picture with R = 2 and no P_DIFF"),
        ("02 08 02 04 01", "N_G = 2 with one picture"),
    ])
    func refusesTruncatedDescriptors(_ s: String, _ why: String) {
        #expect(parse(s).failureValue == .badCodecPayload, "\(why)")
    }

    /// Every prefix shorter than the descriptor fails cleanly; every prefix that holds it parses to the same
    /// descriptor (the VP9 data behind it is not the descriptor's business).
    @Test(arguments: [VP9DescriptorTests.keyframeWithSS, "fd 05 23 03 05 08 aa", "0a 98 00 10 00 10 00 20 00 20 00 40 00 40 00 80 00 80 01 00 01 00 01 0c 01 02 03 9d"])
    func everyTruncationOfTheDescriptorFails(_ s: String) throws {
        let whole = hex(s)
        let d = try #require(parse(s).successValue)
        for n in 0...whole.count {
            let r = Array(whole.prefix(n)).withUnsafeBytes { VP9Descriptor.parse($0) }
            if n < d.size {
                #expect(r.failureValue == .badCodecPayload, "prefix of \(n) bytes")
            } else {
                #expect(r.successValue == d, "prefix of \(n) bytes")
            }
        }
    }
}
