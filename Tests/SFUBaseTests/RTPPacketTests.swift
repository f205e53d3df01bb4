import SFUMedia
import SFUSimulation
import Testing
@testable import SFUBase

@Suite struct RTPPacketTests {
    // RFC 3550 section 5.1 fixed header followed by an RFC 8285 section 4.2 one-byte extension block:
    // id 1 (1 byte, audio level 0x9e = V + 30 dBov), id 2 (3 bytes), then padding.
    let withOneByteExtension = hex("""
        90 6f 12 34 00 00 10 00 de ad be ef
        be de 00 02 10 9e 22 01 02 03 00 00
        aa bb cc
        """)

    @Test func parsesFixedHeaderFields() throws {
        let h = try #require(parseRTP(withOneByteExtension).successValue)
        #expect(h.marker == false)
        #expect(h.payloadType == 111)
        #expect(h.sequenceNumber == 0x1234)
        #expect(h.timestamp == 0x1000)
        #expect(h.ssrc == 0xDEAD_BEEF)
        #expect(h.payloadRange == 24..<27)
        #expect(h.extensionProfile == 0xBEDE)
    }

    @Test func findsOneByteExtensionElements() throws {
        let h = try #require(parseRTP(withOneByteExtension).successValue)
        withOneByteExtension.withUnsafeBytes { p in
            let elements = Array(h.extensions(in: p)).map { ($0.id, Array(p[$0.range])) }
            #expect(elements.map(\.0) == [1, 2])
            #expect(elements[1].1 == [1, 2, 3])
            let level = AudioLevelExtension.read(p, range: h.extensions(in: p).find(1)!)
            #expect(level == AudioLevelExtension(voiceActivity: true, level: 30))
        }
    }

    @Test func findsTwoByteExtensionElements() throws {
        // RFC 8285 section 4.3: profile 0x1000, id byte, length byte; a zero-length element is allowed.
        let p = hex("90 60 00 01 00 00 00 01 00 00 00 02  10 00 00 02  05 00 07 02 aa bb 00 00  ff")
        let h = try #require(parseRTP(p).successValue)
        p.withUnsafeBytes { raw in
            let e = Array(h.extensions(in: raw))
            #expect(e.map(\.id) == [5, 7])
            #expect(e[0].range.isEmpty)
            #expect(Array(raw[e[1].range]) == [0xAA, 0xBB])
        }
    }

    @Test func oneByteIdFifteenStopsParsing() throws {
        let p = hex("90 60 00 01 00 00 00 01 00 00 00 02  be de 00 01 f0 10 9e 00")
        let h = try #require(parseRTP(p).successValue)
        p.withUnsafeBytes { #expect(Array(h.extensions(in: $0)).isEmpty) }
    }

    @Test func skipsCSRCsAndPadding() throws {
        // CC = 2, padding of 3 bytes (the last octet counts itself, RFC 3550 section 5.1).
        let p = hex("a2 60 00 01 00 00 00 01 00 00 00 02  00 00 00 0a 00 00 00 0b  01 02 03 04  00 00 03")
        let h = try #require(parseRTP(p).successValue)
        #expect(h.csrcCount == 2)
        #expect(h.payloadRange == 20..<24)
        #expect(h.paddingLength == 3)
    }

    @Test(arguments: [
        ("truncated header", "80 60 00 01 00 00", DropReason.truncated),
        ("version 1", "40 60 00 01 00 00 00 01 00 00 00 02", .badVersion),
        ("huge CSRC count", "8f 60 00 01 00 00 00 01 00 00 00 02 00 00 00 01", .truncated),
        ("extension length lies", "90 60 00 01 00 00 00 01 00 00 00 02 be de 00 09 10 01 00 00", .badHeaderExtension),
        ("extension header cut", "90 60 00 01 00 00 00 01 00 00 00 02 be de", .truncated),
        ("zero padding count", "a0 60 00 01 00 00 00 01 00 00 00 02 01 02 00", .badPadding),
        ("padding longer than packet", "a0 60 00 01 00 00 00 01 00 00 00 02 01 02 40", .badPadding),
    ])
    func refusesMalformedPackets(_ name: String, _ bytes: String, _ reason: DropReason) {
        #expect(parseRTP(hex(bytes)).failureValue == reason, "\(name)")
    }

    @Test func builderWritesWhatParserReads() throws {
        var out = [UInt8](repeating: 0, count: 100)
        let payload: [UInt8] = [9, 8, 7]
        let n = try #require(payload.withUnsafeBytes { p in
            out.withUnsafeMutableBytes {
                RTPPacketBuilder(payloadType: 96, sequenceNumber: 65535, timestamp: 0xFFFF_FFFF, ssrc: 42, marker: true)
                    .write(extensions: [(id: 1, value: [0x7F])], payload: p, into: $0)
            }
        })
        let h = try #require(parseRTP(Array(out[0..<n])).successValue)
        #expect(h.marker && h.payloadType == 96 && h.sequenceNumber == 65535 && h.timestamp == 0xFFFF_FFFF && h.ssrc == 42)
        #expect(Array(out[h.payloadRange]) == payload)
    }

    @Test func demultiplexesRTCPByPayloadTypeRange() {
        // RFC 5761 section 4: 200 (SR) is RTCP; PT 96 with marker (0xE0 = 224) is RTP.
        #expect(hex("80 c8 00 06").withUnsafeBytes { isRTCP($0) })
        #expect(!hex("80 e0 00 06").withUnsafeBytes { isRTCP($0) })
        #expect(!hex("80 60 00 06").withUnsafeBytes { isRTCP($0) })
    }
}
