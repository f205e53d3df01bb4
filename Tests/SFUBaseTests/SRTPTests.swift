import SFUMedia
import SFUSimulation
import Testing
@testable import SFUBase

/// Known answers from Tests/Fixtures/srtp_vectors.py, an independent implementation of RFC 3711 (key
/// derivation checked against its appendix B.3) and RFC 7714 written on Python's `cryptography`.
@Suite struct SRTPTests {
    static let rfc3711Key = hex("E1F97A0D3E018BE0D64FA32C06DE4139")
    static let rfc3711Salt = hex("0EC675AD498AFEEBB6960B3AABE6")
    static let gcmKey = hex("000102030405060708090a0b0c0d0e0f")
    static let gcmSalt = hex("a0a1a2a3a4a5a6a7a8a9aaab")
    static let plainRTP = hex("800f1234decafbadcafebabe") + [UInt8](repeating: 0xAB, count: 16)

    static let vectors: [(SRTPProfile, [UInt8], [UInt8], String)] = [
        (.aesCM128HmacSHA1_80, rfc3711Key, rfc3711Salt,
         "800f1234decafbadcafebabe4e55dc4ce79978d88ca4d215949d2402b78d6acc99ea179b8dbb"),
        (.aesCM128HmacSHA1_32, rfc3711Key, rfc3711Salt,
         "800f1234decafbadcafebabe4e55dc4ce79978d88ca4d215949d2402b78d6acc"),
        (.aeadAES128GCM, gcmKey, gcmSalt,
         "800f1234decafbadcafebabec5002ede04cfdd2eb91159e0880aa06ed2976826f796b201df3131a127e8a392"),
        (.aeadAES256GCM, Array(0..<32), gcmSalt,
         "800f1234decafbadcafebabe0af7f21e8a90bdad7a425c9c31ed4bb1d90238917e7390a2793500e1681acaea"),
    ]

    func run(_ s: SRTPSession, _ packet: [UInt8], rtcp: Bool = false, protect: Bool) -> Result<[UInt8], DropReason> {
        var buf = packet + [UInt8](repeating: 0, count: SRTPSession.maxOverhead)
        return buf.withUnsafeMutableBytes { b in
            let r = switch (rtcp, protect) {
            case (false, true): s.protectRTP(b, length: packet.count)
            case (false, false): s.unprotectRTP(b, length: packet.count)
            case (true, true): s.protectRTCP(b, length: packet.count)
            case (true, false): s.unprotectRTCP(b, length: packet.count)
            }
            return r.map { Array(b[0..<$0]) }
        }
    }

    @Test(arguments: 0..<4)
    func protectMatchesKnownAnswer(_ i: Int) throws {
        let (profile, key, salt, expected) = Self.vectors[i]
        let keys = SRTPKeyingMaterial(profile: profile, masterKey: key, masterSalt: salt)
        let tx = try SRTPSession(keys: keys, direction: .outbound)
        #expect(run(tx, Self.plainRTP, protect: true).successValue == hex(expected), "\(profile)")
        let rx = try SRTPSession(keys: keys, direction: .inbound)
        #expect(run(rx, hex(expected), protect: false).successValue == Self.plainRTP)
    }

    @Test func srtcpMatchesKnownAnswer() throws {
        let keys = SRTPKeyingMaterial(profile: .aesCM128HmacSHA1_80, masterKey: Self.rfc3711Key, masterSalt: Self.rfc3711Salt)
        let rtcp = hex("81c8000ccafebabe") + Array(0..<44)
        let tx = try SRTPSession(keys: keys, direction: .outbound)
        // libsrtp numbers SRTCP packets from 1 (RFC 3711 section 3.4 leaves the start to the sender).
        let expected = hex("81c8000ccafebabeda82aaf34b2914111d5a31e15ed1000c6e550139d5013b3087bce13209a8257ee057b81dc50f29f17bcf47e1800000015ecc0dbd5eff631dfea3")
        #expect(run(tx, rtcp, rtcp: true, protect: true).successValue == expected)
        let rx = try SRTPSession(keys: keys, direction: .inbound)
        #expect(run(rx, expected, rtcp: true, protect: false).successValue == rtcp)
    }

    /// A sender and a receiver sharing keys made of `fill`.
    func pair(_ profile: SRTPProfile, fill: UInt8) throws -> (tx: SRTPSession, rx: SRTPSession) {
        let keys = SRTPKeyingMaterial(profile: profile, masterKey: .init(repeating: fill, count: profile.masterKeyLength),
                                      masterSalt: .init(repeating: fill &+ 1, count: profile.masterSaltLength))
        return (try SRTPSession(keys: keys, direction: .outbound), try SRTPSession(keys: keys, direction: .inbound))
    }

    @Test(arguments: SRTPProfile.allCases)
    func replayedPacketIsDropped(_ profile: SRTPProfile) throws {
        let (tx, rx) = try pair(profile, fill: 1)
        let p = try #require(run(tx, Self.plainRTP, protect: true).successValue)
        #expect(run(rx, p, protect: false).successValue == Self.plainRTP)
        #expect(run(rx, p, protect: false).failureValue == .srtpReplay)
    }

    @Test(arguments: SRTPProfile.allCases)
    func tamperedPacketFailsAuthentication(_ profile: SRTPProfile) throws {
        let (tx, rx) = try pair(profile, fill: 3)
        var p = try #require(run(tx, Self.plainRTP, protect: true).successValue)
        p[20] ^= 1
        #expect(run(rx, p, protect: false).failureValue == .srtpAuthFailed)
        #expect(run(rx, Array(p[0..<14]), protect: false).failureValue != nil)  // shorter than the tag
    }

    @Test func outboundAllowsRetransmissionOfSameSequence() throws {
        let keys = SRTPKeyingMaterial(profile: .aeadAES128GCM, masterKey: Self.gcmKey, masterSalt: Self.gcmSalt)
        let tx = try SRTPSession(keys: keys, direction: .outbound)
        let first = try #require(run(tx, Self.plainRTP, protect: true).successValue)
        #expect(run(tx, Self.plainRTP, protect: true).successValue == first)  // NACK answer: same bytes again
    }

    @Test(arguments: SRTPProfile.allCases)
    func outboundStreamsOfManySSRCsEachDecrypt(_ profile: SRTPProfile) throws {
        // One session per SSRC up to the limit, a shared one past it: the receiver cannot tell.
        let (tx, rx) = try pair(profile, fill: 5)
        for round in 0..<2 {
            for ssrc in UInt32(1)...UInt32(SRTPSession.dedicatedLimit + 8) {
                var rtp = Self.plainRTP
                rtp[3] = UInt8(round)
                rtp.replaceSubrange(8..<12, with: [UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)])
                let p = try #require(run(tx, rtp, protect: true).successValue)
                #expect(run(rx, p, protect: false).successValue == rtp)
                var rtcp = hex("80c8000600000000") + [UInt8](repeating: 7, count: 20)  // SR of this SSRC
                rtcp.replaceSubrange(4..<8, with: rtp[8..<12])
                let c = try #require(run(tx, rtcp, rtcp: true, protect: true).successValue)
                #expect(run(rx, c, rtcp: true, protect: false).successValue == rtcp)
            }
        }
        #expect(tx.dedicatedSessions == SRTPSession.dedicatedLimit)
    }

    @Test func refusesKeysOfWrongLength() {
        let keys = SRTPKeyingMaterial(profile: .aeadAES128GCM, masterKey: [1, 2, 3], masterSalt: Self.gcmSalt)
        #expect(throws: SRTPSession.SetupError.badKeyLength(expected: 16, got: 3)) {
            try SRTPSession(keys: keys, direction: .inbound)
        }
    }

    @Test func sessionsCreateAndFreeInALoop() throws {
        // Deterministic freeing: thousands of sessions come and go (valgrind/LSan runs show no growth).
        let keys = SRTPKeyingMaterial(profile: .aeadAES128GCM, masterKey: Self.gcmKey, masterSalt: Self.gcmSalt)
        for _ in 0..<2000 {
            let s = try SRTPSession(keys: keys, direction: .outbound)
            #expect(run(s, Self.plainRTP, protect: true).successValue != nil)
        }
    }
}
