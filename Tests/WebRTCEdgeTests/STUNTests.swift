import SFUMedia
import SFUSimulation
import Testing
@testable import WebRTCEdge

/// RFC 5769 test vectors.
@Suite struct STUNTests {
    static let password = Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)
    // Section 2.1: sample request (USERNAME padded with spaces, as the RFC does).
    static let request = hex("""
        000100582112a442b7e7a701bc34d686fa87dfae802200105354554e207465737420636c69656e74
        002400046e0001ff80290008932ff9b151263b36000600096576746a3a68367659202020
        000800149aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a280280004e57a3bcf
        """)
    // Section 2.2: sample IPv4 response, 192.0.2.1:32853.
    static let ipv4Response = hex("""
        0101003c2112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f7220
        00200008 0001a147e112a643
        000800142b91f599fd9e90c38c7489f92af9ba53f06be7d780280004c07d4c96
        """)
    // Section 2.3: sample IPv6 response, [2001:db8:1234:5678:11:2233:4455:6677]:32853.
    static let ipv6Response = hex("""
        010100482112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f7220
        002000140002a1470113a9faa5d3f179bc25f4b5bed2b9d9
        00080014a382954e4be67bf11784c97c8292c275bfe3ed4180280004c8fb0b4c
        """)

    @Test func sampleRequestParsesAndVerifies() throws {
        try Self.request.withUnsafeBytes { p in
            let m = try STUNMessage.parse(p).get()
            #expect(m.method == STUNMessage.bindingMethod && m.messageClass == .request)
            #expect(m.usernameString(in: p) == "evtj:h6vY")
            #expect(m.priority == 0x6E00_01FF)
            #expect(m.iceControlled == 0x932F_F9B1_5126_3B36)
            #expect(m.verifyIntegrity(p, key: Self.password))
            #expect(m.verifyFingerprint(p))
            #expect(!m.verifyIntegrity(p, key: Array("wrong".utf8)))
        }
    }

    @Test(arguments: [(ipv4Response, "192.0.2.1:32853"), (ipv6Response, "[2001:db8:1234:5678:11:2233:4455:6677]:32853")])
    func sampleResponsesCarryTheMappedAddress(_ bytes: [UInt8], _ address: String) throws {
        try bytes.withUnsafeBytes { p in
            let m = try STUNMessage.parse(p).get()
            #expect(m.messageClass == .success)
            #expect(m.mappedAddress(in: p) == TransportAddress(address))
            #expect(m.verifyIntegrity(p, key: Self.password))
            #expect(m.verifyFingerprint(p))
        }
    }

    @Test(arguments: [(ipv4Response, "192.0.2.1:32853"), (ipv6Response, "[2001:db8:1234:5678:11:2233:4455:6677]:32853")])
    func builderReproducesTheSampleResponsesByteForByte(_ expected: [UInt8], _ address: String) throws {
        var b = STUNMessageBuilder(class: .success, transactionID: Array(expected[8..<20]))
        b.add(STUNMessage.Attribute.software, Array("test vector".utf8), padding: 0x20)
        b.addXORMappedAddress(try #require(TransportAddress(address)))
        b.addMessageIntegrity(key: Self.password)
        b.addFingerprint()
        #expect(b.bytes == expected)
    }

    @Test(arguments: [
        "",
        "0001000021",  // short header
        "00010004 2112a442 b7e7a701bc34d686fa87dfae",  // length beyond datagram
        "00010000 2112a443 b7e7a701bc34d686fa87dfae",  // wrong magic cookie
        "c0010000 2112a442 b7e7a701bc34d686fa87dfae",  // top bits set
        "00010008 2112a442 b7e7a701bc34d686fa87dfae 00060010 61626364",  // attribute longer than message
        "00010010 2112a442 b7e7a701bc34d686fa87dfae 80280004 00000000 00060000 00000000",  // attribute after FINGERPRINT
        "00010008 2112a442 b7e7a701bc34d686fa87dfae 00080004 00000000",  // short MESSAGE-INTEGRITY
    ])
    func refusesMalformedMessages(_ s: String) {
        hex(s).withUnsafeBytes { #expect(STUNMessage.parse($0).failureValue == .stunMalformed) }
    }

    @Test func classifiesDatagramsByFirstByte() {
        #expect(PacketClass(firstByte: 0) == .stun && PacketClass(firstByte: 3) == .stun)
        #expect(PacketClass(firstByte: 22) == .dtls && PacketClass(firstByte: 63) == .dtls)
        #expect(PacketClass(firstByte: 128) == .rtp && PacketClass(firstByte: 191) == .rtp)
        #expect(PacketClass(firstByte: 4) == .unknown && PacketClass(firstByte: 200) == .unknown)
    }

    @Test func transportAddressesRoundTrip() {
        #expect(TransportAddress("127.0.0.1:10000")?.description == "127.0.0.1:10000")
        // RFC 5952 section 4: the longest run of zero groups as "::" (the first of equal ones), none for one group.
        for (text, canonical) in [("[::1]:5", "[::1]:5"), ("[0:0:0:0:0:0:0:1]:5", "[::1]:5"), ("[::]:9", "[::]:9"),
                                  ("[2001:db8:0:0:1:0:0:1]:1", "[2001:db8::1:0:0:1]:1"), ("[2001:db8:0:1:1:1:1:1]:1", "[2001:db8:0:1:1:1:1:1]:1"),
                                  ("[2001:DB8::ff00:42:8329]:3", "[2001:db8::ff00:42:8329]:3"), ("[fe80:0:0:0:1:0:0:0]:2", "[fe80::1:0:0:0]:2"), ("[1:0:0:1:0:0:0:1]:2", "[1:0:0:1::1]:2")] {
            #expect(TransportAddress(text)?.description == canonical, "\(text)")
            #expect(TransportAddress(canonical) == TransportAddress(text))
        }
        #expect(TransportAddress("[::1]:5")?.host == "::1")
        #expect(TransportAddress("1.2.3:4") == nil && TransportAddress("1.2.3.256:4") == nil && TransportAddress("[::1]") == nil)
    }
}

extension Result {
    var failureValue: Failure? { if case .failure(let f) = self { return f } else { return nil } }
}
