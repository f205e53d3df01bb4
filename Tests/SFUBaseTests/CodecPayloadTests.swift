import SFUMedia
import SFUSimulation
import Testing
@testable import SFUBase

@Suite struct VP8DescriptorTests {
    func parse(_ s: String) -> Result<VP8Descriptor, DropReason> { hex(s).withUnsafeBytes { VP8Descriptor.parse($0) } }

    /// RFC 6386 section 9.1: a key frame's 3-byte tag, start code 9d 01 2a, then 14-bit width and height with
    /// 2 scaling bits each (little-endian): 1280x720 with scaling bits set, after a 1-byte descriptor.
    @Test func aKeyframeStartCarriesItsFrameSize() throws {
        let p = hex("10 50 02 00 9d 01 2a 00 45 d0 82")  // S=1; P=0; width 0x500 (scale 1), height 0x2d0 (scale 2)
        let d = try parse("10 50 02 00 9d 01 2a 00 45 d0 82").get()
        #expect(p.withUnsafeBytes { d.keyframeSize(in: $0) }.map { [$0.width, $0.height] } == [1280, 720])
        let inter = try parse("10 51 02 00 9d 01 2a 00 45 d0 82").get()
        #expect(p.withUnsafeBytes { inter.keyframeSize(in: $0) } == nil, "an inter frame carries no size")
        let short = hex("10 50 02 00 9d 01 2a 00 05")
        #expect(short.withUnsafeBytes { d.keyframeSize(in: $0) } == nil, "a truncated header gives none")
        let noStart = hex("10 50 02 00 9d 01 2b 00 05 d0 02")
        #expect(noStart.withUnsafeBytes { d.keyframeSize(in: $0) } == nil, "no start code, no size")
    }

    @Test func parsesFullDescriptorOfKeyframeStart() throws {
        // RFC 7741 section 4.2: X=1 S=1 PID=0; I L T K set; 15-bit picture ID 0x1234; TL0PICIDX 7;
        // TID 2, Y, KEYIDX 5; then a VP8 payload header with P=0 (key frame).
        let d = try #require(parse("90 f0 92 34 07 b5 10 02 00").successValue)
        #expect(d.startOfPartition && d.partitionIndex == 0)
        #expect(d.pictureID == 0x1234 && d.pictureIDIs15Bit)
        #expect(d.tl0PicIdx == 7)
        #expect(d.temporalLayer == 2 && d.layerSync && d.keyIndex == 0x15)
        #expect(d.size == 6)
        #expect(d.isKeyframeStart)
    }

    @Test func interFrameAndContinuationAreNotKeyframeStarts() throws {
        #expect(try #require(parse("90 80 05 01").successValue).isKeyframeStart == false)  // P = 1
        let cont = try #require(parse("80 80 05 00").successValue)  // S = 0
        #expect(!cont.isKeyframeStart && cont.pictureID == 5 && !cont.pictureIDIs15Bit)
    }

    @Test func rewritesFieldsInPlaceKeepingWidth() throws {
        var b = hex("90 c0 92 34 07 00")
        let d = try #require(b.withUnsafeBytes { VP8Descriptor.parse($0) }.successValue)
        b.withUnsafeMutableBytes { d.rewrite(pictureID: 0x7FFF, tl0PicIdx: 200, keyIndex: nil, in: $0) }
        #expect(b == hex("90 c0 ff ff c8 00"))
        var short = hex("90 80 05 00")
        let s = try #require(short.withUnsafeBytes { VP8Descriptor.parse($0) }.successValue)
        short.withUnsafeMutableBytes { s.rewrite(pictureID: 0x1FF, tl0PicIdx: nil, keyIndex: nil, in: $0) }
        #expect(short == hex("90 80 7f 00"))  // 7 bits kept
    }

    @Test(arguments: ["", "80", "80 80", "80 80 80", "80 40", "80 20", "90"])
    func refusesTruncatedDescriptors(_ s: String) {
        #expect(parse(s).failureValue == .badCodecPayload)
    }
}

@Suite struct OpusPacketTests {
    func info(_ s: String) -> OpusPacketInfo? { hex(s).withUnsafeBytes { OpusPacketInfo.parse($0) }.successValue }

    // media-core.md section 1 vectors for the SILK VAD flag (RFC 6716 section 4.2.3).
    @Test func silkVADVectors() {
        #expect(info("78 80")?.activity == .voice)
        #expect(info("78 00")?.activity == .noVoice)
        #expect(info("7c 20")?.activity == .voice)  // stereo: side channel VAD
        #expect(info("80 ff")?.activity == .unknown)  // CELT-only
    }

    @Test func dtxPacketsAreSilenceAndNotDecoded() {
        #expect(info("78")?.isDTX == true)
        #expect(info("79")?.isDTX == true)  // code 1, no frames
        #expect(info("7a 00")?.isDTX == true)  // code 2, two empty frames
        #expect(info("78 80 11")?.isDTX == false)
    }

    @Test func frameCountsAndDurations() {
        #expect(info("78 80")?.samples48k == 960)  // hybrid 20 ms
        #expect(info("18 80")?.samples48k == 2880)  // config 3: SILK NB 60 ms
        #expect(info("79 80 80")?.frameCount == 2)  // code 1
        #expect(info("fb 03 01 02 03")?.frameCount == 3)  // code 3 CBR, 3 x 20 ms CELT
        #expect(info("fb 83 01 01 aa bb cc")?.frameCount == 3)  // code 3 VBR
    }

    @Test(arguments: [
        "",  // no TOC
        "79 80 80 80",  // code 1 with odd payload
        "7a 05 01",  // code 2 first frame longer than packet
        "7b",  // code 3 without count byte
        "7b 00",  // zero frames
        "fb 3f",  // 63 x 20 ms > 120 ms
        "7b 42",  // padding flag, no padding length
        "fb 83 ff",  // VBR lengths beyond packet
    ])
    func refusesMalformedOpus(_ s: String) {
        #expect(hex(s).withUnsafeBytes { OpusPacketInfo.parse($0) }.failureValue == .badCodecPayload)
    }
}
