/// The H.264 sub-profile and level a payload format declares (RFC 6184 section 8.1, `profile-level-id` and
/// `max-recv-level`): what a publisher's stream may use, or what a subscriber's decoder takes. The node
/// compares them to decide whether a subscriber can decode a source; it never looks into the stream's own SPS.
///
/// `profile-level-id` is three bytes in hex: profile_idc, profile-iop (constraint_set0..5 flags, then two
/// reserved bits) and level_idc. Different (profile_idc, profile-iop) pairs can name the same sub-profile
/// (section 8.1, table 5): Constrained Baseline is 42 with constraint_set1, 4D with constraint_set0, or 58 with
/// both; those are folded into one `Profile` so that equal capabilities compare equal. Besides table 5, High
/// with constraint_set4 (Progressive High) and with constraint_set4 and 5 (Constrained High, H.264 Annex A),
/// which Safari and hardware encoders offer, are read too.
public struct H264ProfileLevelID: Sendable, Equatable, CustomStringConvertible {
    /// The profiles of RFC 6184 table 5 (H.264 Annex A).
    public enum Profile: String, Sendable, Equatable {
        case constrainedBaseline, baseline, main, extended, high, progressiveHigh, constrainedHigh, high10, high422, high444
        case high10Intra, high422Intra, high444Intra, cavlc444Intra
    }

    public var profile: Profile
    /// The highest level (`Level`) the format declares.
    public var level: Level

    public init(profile: Profile, level: Level) {
        self.profile = profile
        self.level = level
    }

    /// An H.264 level in a comparable form: level_idc is ten times the level number (31 is level 3.1), and
    /// level 1b, which sits between 1 and 1.1, is spelled level_idc 11 with constraint_set3 in the Baseline,
    /// Main and Extended profiles, or level_idc 9 (section 8.1).
    public struct Level: Sendable, Comparable, CustomStringConvertible {
        /// level_idc x 2, with 1b as 21 (between level 1, 20, and level 1.1, 22): an order, not a value.
        let rank: Int

        public init(levelIDC: UInt8, constraintSet3: Bool, profileIDC: UInt8) {
            let oneB = levelIDC == 9 || (levelIDC == 11 && constraintSet3 && [0x42, 0x4D, 0x58].contains(profileIDC))
            rank = oneB ? 21 : Int(levelIDC) * 2
        }

        public static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }

        /// A level_idc that names this level on its own (9 for 1b), as a relay description carries it.
        public var levelIDC: UInt8 { rank == 21 ? 9 : UInt8(clamping: rank / 2) }

        public var description: String {
            rank == 21 ? "1b" : rank % 20 == 0 ? "\(rank / 20)" : "\(rank / 20).\(rank % 20 / 2)"
        }
    }

    public var description: String { "\(profile.rawValue) level \(level)" }

    /// Section 8.1: "If no profile-level-id is present, the Baseline profile, without additional constraints
    /// at Level 1, MUST be inferred."
    public static let absent = H264ProfileLevelID(profile: .baseline, level: Level(levelIDC: 10, constraintSet3: false, profileIDC: 0x42))

    /// Parses six hex digits; nil for anything else, or for a (profile_idc, profile-iop) pair that table 5
    /// does not list.
    public init?(hex: Substring) {
        guard hex.count == 6, let v = UInt32(hex, radix: 16) else { return nil }
        let idc = UInt8(v >> 16), iop = UInt8((v >> 8) & 0xFF), levelIDC = UInt8(v & 0xFF)
        guard let profile = Self.profile(idc: idc, iop: iop) else { return nil }
        self.profile = profile
        level = Level(levelIDC: levelIDC, constraintSet3: iop & 0x10 != 0, profileIDC: idc)
    }

    /// Table 5: each profile's (profile_idc, profile-iop mask) forms, `x` bits ignored. Reserved bits set
    /// name no listed profile.
    static func profile(idc: UInt8, iop: UInt8) -> Profile? {
        func matches(_ pattern: String) -> Bool {
            // Most significant bit first: '1' and '0' must match, 'x' is either.
            for (i, c) in pattern.enumerated() {
                let bit = (iop >> UInt8(7 - i)) & 1
                if (c == "1" && bit != 1) || (c == "0" && bit != 0) { return false }
            }
            return true
        }
        switch idc {
        case 0x42: return matches("x1xx0000") ? .constrainedBaseline : matches("x0xx0000") ? .baseline : nil
        case 0x4D: return matches("1xxx0000") ? .constrainedBaseline : matches("0x0x0000") ? .main : nil
        case 0x58: return matches("11xx0000") ? .constrainedBaseline : matches("10xx0000") ? .baseline
            : matches("00xx0000") ? .extended : nil
        case 0x64: return iop == 0 ? .high : iop == 0x08 ? .progressiveHigh : iop == 0x0C ? .constrainedHigh : nil
        case 0x6E: return iop == 0 ? .high10 : iop == 0x10 ? .high10Intra : nil
        case 0x7A: return iop == 0 ? .high422 : iop == 0x10 ? .high422Intra : nil
        case 0xF4: return iop == 0 ? .high444 : iop == 0x10 ? .high444Intra : nil
        case 0x2C: return iop == 0x10 ? .cavlc444Intra : nil
        default: return nil
        }
    }

    /// What an H.264 format's fmtp parameters (`a=fmtp:<pt> k=v;k=v`) declare: its profile-level-id (or the
    /// default when absent) raised by `max-recv-level`, which a receiver may add when it decodes a higher
    /// level than its profile-level-id names. Nil when profile-level-id is present but unreadable.
    public init?(fmtp: String?) {
        var id = Self.absent
        var maxRecv: Substring?
        for parameter in (fmtp ?? "").split(separator: ";") {
            let kv = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces }
            guard kv.count == 2 else { continue }
            if kv[0] == "profile-level-id" {
                guard let parsed = H264ProfileLevelID(hex: kv[1]) else { return nil }
                id = parsed
            } else if kv[0] == "max-recv-level" {
                maxRecv = kv[1]
            }
        }
        // max-recv-level: profile-iop then level_idc, in hex (section 8.1).
        if let m = maxRecv, m.count == 4, let v = UInt16(m, radix: 16) {
            let higher = Level(levelIDC: UInt8(v & 0xFF), constraintSet3: v & 0x1000 != 0, profileIDC: 0x42)
            if higher > id.level { id.level = higher }
        }
        self = id
    }

    /// Whether a subscriber whose format declares `receiver` can decode a stream this format describes.
    ///
    /// The stream's sub-profile must be one the receiver's decoder takes: its own, or one whose bitstreams the
    /// H.264 spec requires that decoder to decode (Annex A.2; `Profile.decodes(_:)`). A profile-level-id names
    /// what a decoder supports (RFC 6184 section 8.1), and a decoder reads the stream's own SPS, so a
    /// Constrained Baseline stream sent under a High format is decoded as Constrained Baseline. The node answers each
    /// client with the client's own profile-level-id (section 8.2.2 keeps each format's profile); it only
    /// chooses which of them a source goes under. The stream's level must not exceed what the receiver
    /// declared: with level-asymmetry-allowed=1 the node may send a subscriber anything up to the subscriber's
    /// level, and without it the one level both directions use is still the subscriber's own. A publisher at a
    /// lower level than the subscriber is fine either way.
    public func isDecodable(by receiver: H264ProfileLevelID) -> Bool {
        receiver.profile.decodes(profile) && level <= receiver.level
    }
}

extension H264ProfileLevelID.Profile {
    /// Whether a decoder of this profile must decode streams of `stream`'s sub-profile (H.264 Annex A.2).
    /// Constrained Baseline is the subset every Baseline, Main, Extended and High-family decoder takes; plain
    /// Baseline may use FMO, ASO and redundant slices (A.2.1), which only Baseline and Extended decoders take;
    /// Main is taken by the High family, Constrained High and Progressive High by High. A Progressive High
    /// decoder takes Main only when it is frame-coded, which profile-level-id does not say, so not here; an
    /// intra-only profile is taken by its own decoder and the wider non-intra ones. When in doubt a pair is
    /// left out: a missing pair costs a slot reported undecodable, a wrong one a stream the subscriber cannot
    /// show.
    func decodes(_ stream: Self) -> Bool {
        if stream == self { return true }
        switch self {
        case .constrainedBaseline, .high10Intra, .high422Intra, .high444Intra, .cavlc444Intra: return false
        case .baseline, .main, .constrainedHigh: return stream == .constrainedBaseline
        case .extended: return stream == .constrainedBaseline || stream == .baseline
        case .progressiveHigh: return Self.constrainedHigh.decodes(stream)
        case .high: return Self.progressiveHigh.decodes(stream) || stream == .main
        case .high10: return Self.high.decodes(stream) || stream == .high10Intra
        case .high422: return Self.high10.decodes(stream) || stream == .high422Intra
        case .high444: return Self.high422.decodes(stream) || stream == .high444Intra || stream == .cavlc444Intra
        }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return s
    }
}
