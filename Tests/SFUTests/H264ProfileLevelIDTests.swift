import Testing
@testable import SFU

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
        #expect(!cb31.isDecodable(by: try #require(id("42001f"))), "Constrained Baseline and Baseline are different profiles")
        #expect(cb31.isDecodable(by: try #require(id("4de01f"))), "table 5's equivalent form of Constrained Baseline")
        #expect(!cb31.isDecodable(by: try #require(id("64001f"))))
    }
}
