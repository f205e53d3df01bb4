import SFUMedia
import SFUSimulation
import Testing
@testable import SFUBase

/// RFC 6184 section 8.1: profile-level-id, table 5's equivalent forms, level 1b, max-recv-level, and the rule
/// the node uses to tell whether a subscriber's format decodes a publisher's.
@Suite struct H264ProfileLevelIDTests {
    func id(_ hex: String) -> H264ProfileLevelID? { H264ProfileLevelID(hex: Substring(hex)) }

    @Test(arguments: [
        ("42e01f", H264ProfileLevelID.Profile.constrainedBaseline), ("42c02a", .constrainedBaseline),
        ("4d801f", .constrainedBaseline), ("58c01f", .constrainedBaseline),
        ("42001f", .baseline), ("58a01f", .baseline), ("4d001f", .main), ("4d401f", .main), ("58001f", .extended),
        ("64001f", .high), ("640c1f", .constrainedHigh), ("64081f", .progressiveHigh), ("6e001f", .high10), ("7a101f", .high422Intra),
        ("f4001f", .high444), ("2c101f", .cavlc444Intra),
    ])
    func tableFiveFormsNameTheirProfile(_ hex: String, _ profile: H264ProfileLevelID.Profile) {
        #expect(id(hex)?.profile == profile, "\(hex)")
    }

    @Test(arguments: ["42e0", "42e01f00", "zz001f", "420f1f", "64011f", "2c001f", "99001f"])
    func unreadableOrUnlistedFormsAreRefused(_ hex: String) {
        #expect(id(hex) == nil, "\(hex)")
    }

    @Test func levelsOrderWithLevel1bBetween1And11() throws {
        let l = { (h: String) in try #require(self.id(h)).level }
        #expect(try l("42e01f").description == "3.1" && l("42e01e").description == "3" && l("640c34").description == "5.2")
        #expect(try l("42f00b").description == "1b", "level_idc 11 with constraint_set3 in Baseline")
        #expect(H264ProfileLevelID.Level(levelIDC: 11, constraintSet3: true, profileIDC: 0x64).description == "1.1", "but not in High")
        #expect(try l("42e009").description == "1b")
        #expect(try l("42e00a") < l("42f00b") && l("42f00b") < l("42e00b"))
    }

    @Test func fmtpWithoutProfileLevelIDIsBaselineLevel1AndMaxRecvLevelRaisesTheLevel() throws {
        #expect(H264ProfileLevelID(fmtp: "packetization-mode=1") == .absent)
        #expect(H264ProfileLevelID(fmtp: nil)?.profile == .baseline && H264ProfileLevelID(fmtp: nil)?.level.description == "1")
        let raised = try #require(H264ProfileLevelID(fmtp: "profile-level-id=42e01f; max-recv-level=e034;packetization-mode=1"))
        #expect(raised.profile == .constrainedBaseline && raised.level.description == "5.2")
        #expect(H264ProfileLevelID(fmtp: "profile-level-id=nothex;packetization-mode=1") == nil)
    }

    @Test func aSourceIsDecodableBySameProfileAtItsLevelOrHigher() throws {
        let cb31 = try #require(id("42e01f")), cb30 = try #require(id("42e01e")), cb52 = try #require(id("42e034"))
        #expect(cb31.isDecodable(by: cb31) && cb30.isDecodable(by: cb31) && cb31.isDecodable(by: cb52))
        #expect(!cb52.isDecodable(by: cb31), "a level above the subscriber's")
        #expect(cb31.isDecodable(by: try #require(id("4de01f"))), "table 5's equivalent form of Constrained Baseline")
    }

    /// (stream, receiver, decodable): a decoder takes the sub-profiles H.264 Annex A.2 makes it decode, at
    /// the receiver's level or below.
    @Test(arguments: [
        ("640c1f", "64001f", true), ("640c1f", "640c1f", true), ("64081f", "64001f", true),
        ("42e01f", "640c1f", true), ("42e01f", "4d001f", true), ("42e01f", "64001f", true), ("42e01f", "42001f", true),
        ("4d801f", "64081f", true), ("42e01f", "58001f", true), ("42001f", "58001f", true),
        ("4d001f", "64001f", true), ("4d001f", "6e001f", true), ("64001f", "f4001f", true), ("6e101f", "7a001f", true),
        ("42001f", "4d001f", false), ("42001f", "64001f", false), ("42001f", "42e01f", false),
        ("4d001f", "640c1f", false), ("4d001f", "64081f", false), ("4d001f", "42e01f", false),
        ("64001f", "640c1f", false), ("64001f", "4d001f", false), ("640c1f", "4d001f", false), ("640c1f", "42e01f", false),
        ("6e001f", "64001f", false), ("64001f", "6e101f", false),
        ("640c20", "64001f", false), ("42e028", "64001f", false),
    ])
    func aDecoderTakesTheSubsetsOfItsProfileAtItsLevel(_ stream: String, _ receiver: String, _ decodable: Bool) throws {
        #expect(try #require(id(stream)).isDecodable(by: #require(id(receiver))) == decodable, "\(stream) by \(receiver)")
    }
}
