import Foundation
@testable import SFU
@testable import SFUNode
import Testing

/// The control API writes its answers by hand (`JSONWriter`); these hold every answer to the bytes
/// `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` makes of the same value, which is what the API
/// sent before. No answer carries a `Double`, so every comparison here is byte for byte (bytes, not `String`s,
/// which would compare equal across Unicode normalization forms).
@Suite struct AnswerJSONTests {
    static func encoded(_ value: some Encodable) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try e.encode(value))
    }

    /// Where two outputs first differ, with some context of each, or nil when they are the same bytes.
    static func difference(_ written: [UInt8], _ reference: [UInt8]) -> String? {
        guard written != reference else { return nil }
        let at = zip(written, reference).prefix { $0 == $1 }.count
        func around(_ b: [UInt8]) -> String { String(decoding: b[max(0, at - 60)..<min(b.count, at + 60)], as: UTF8.self) }
        return "first difference at byte \(at) of \(written.count) written / \(reference.count) encoded:\n"
            + "written: \(around(written))\nencoded: \(around(reference))"
    }

    /// The answer as the API sends it (`Success` adds `"result": 0` among the body's fields), both ways.
    static func expectSameAnswer(_ body: some JSONFields, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let d = difference(Success(body: body).jsonBytes, try encoded(Success(body: body)))
        #expect(d == nil, "\(d ?? "")", sourceLocation: sourceLocation)
    }

    /// Strings a signaling server or a client could put in a name: JSON's own syntax, every control
    /// character, the line separators JavaScript once refused, astral characters and a lone combining mark.
    static let hostile: [String] = [
        "\"", "\\", "\\\"", "\"\\\"\\", "ends with \\", "}\"],\"result\":1,\"x\":[\"", "a/b</script>",
        String(String.UnicodeScalarView((0..<0x20).map { Unicode.Scalar(UInt8($0)) })), "\u{0}", "nul\u{0}inside",
        "\u{7F}", "line\u{2028}sep\u{2029}para", "😀👩‍👩‍👧‍👦", "\u{301}", "e\u{301} é", "\u{FEFF}bom", "\u{FFFF}", "日本語", "",
    ]

    static func bigRoomStats(participants: Int = 64) -> RoomStats {
        var counters = RoomCounters()
        counters.packetsIn = 123_456_789
        counters.packetsOut = .max
        counters.drops[.egressFull] = 3
        counters.drops[.srtpReplay] = 1
        counters.drops[.badRTCP] = 12
        let stats = (0..<participants).map { i -> ParticipantStats in
            let slots = i < 4 ? [] : (0..<8).map { s in
                ParticipantStats.SlotStats(mid: "\(s)", kind: s < 4 ? .audio : .video, participant: s % 5 == 4 ? nil : "p-\(s)",
                                           packetsSent: UInt64(i * 100_003 + s), bytesSent: UInt64(i) << 33 + UInt64(s),
                                           retransmissions: UInt64(s * i % 7), fractionLost: UInt8(truncatingIfNeeded: i * 37 + s),
                                           rttMilliseconds: s % 3 == 0 ? nil : Int64(i + s),
                                           source: s < 4 ? nil : s == 7 ? .screen : .camera, layer: s >= 4 && i % 2 == 0 ? s % 3 : nil,
                                           temporalLayer: s == 5 ? 1 : nil)
            }
            var drops: [DropReason: UInt64] = [:]
            if i % 3 == 0 { drops[.hardMuted] = UInt64(i) }
            if i % 5 == 0 { drops[.noFloor] = 0 }  // present with nothing counted: written as 0, as before
            if i == 7 { for r in DropReason.allCases { drops[r] = UInt64(r.rawValue) + 1 } }
            var p = ParticipantStats(participant: "p-\(i)", packetsReceived: UInt64(i) * 1_000, bytesReceived: UInt64(i) * 1_200_000,
                                     bandwidthEstimateBps: i % 2 == 0 ? nil : UInt64(i) * 100_000, numberOfVideos: i < 4 ? nil : i % 5,
                                     slots: slots, drops: drops)
            // Paths of every kind, and none.
            if i % 4 != 0 { p.publishPath = TransportPath(carrier: i % 2 == 0 ? .tcp : .udp, family: i % 3 == 0 ? .ipv6 : .ipv4, relayed: i % 5 == 0) }
            if i % 3 != 0 { p.subscribePath = TransportPath(carrier: i % 2 == 1 ? .tcp : .udp, family: .ipv4, relayed: i % 7 == 0) }
            p.rttMilliseconds = i % 6 == 0 ? nil : Int64(i * 3)
            return p
        }
        return RoomStats(stats, counters)
    }

    static func bigRoomState(participants: Int = 64) -> RoomState {
        var c = RoomConfiguration()
        c.mode = .lecture
        c.maxActiveTalkers = 4
        c.levelSource = .extension
        let members = (0..<participants).map { i in
            RoomSnapshot.Participant(id: "p-\(i)", name: i < hostile.count ? hostile[i] : "Participant \(i)", role: i == 0 ? .moderator : .participant,
                                     connected: i % 4 != 3, hardMutedAudio: i % 2 == 0, hardMutedVideo: i % 3 == 0,
                                     publishesAudio: i < 4, publishesVideo: i < 2, subscribedSlots: i < 4 ? 0 : 8)
        }
        return RoomState(snapshot: RoomSnapshot(name: "room/1", configuration: c, roomAudioMuted: true, locked: false, pinned: ["p-1", "p-2"],
                                                dominantSpeaker: "p-1", activeTalkers: ["p-1", "p-3", "p-0"], raisedHands: ["p-9"],
                                                approvedHands: [], participants: members))
    }

    @Test func aStatsAnswerForARoomOf64IsTheBytesJSONEncoderWrote() throws {
        let stats = Self.bigRoomStats()
        try Self.expectSameAnswer(stats)
        #expect(Success(body: stats).jsonBytes.count > 40_000, "the fixture is the size of a real answer")
    }

    @Test func aRoomStateAnswerForARoomOf64IsTheBytesJSONEncoderWrote() throws {
        var state = Self.bigRoomState()
        try Self.expectSameAnswer(state)
        state.snapshot.dominantSpeaker = nil  // written as null, not left out
        try Self.expectSameAnswer(state)
    }

    @Test func anEmptyRoomsAnswersAreTheBytesJSONEncoderWrote() throws {
        try Self.expectSameAnswer(RoomStats([], RoomCounters()))
        try Self.expectSameAnswer(Self.bigRoomState(participants: 0))
        var quiet = Self.bigRoomStats(participants: 6)  // slots, drops and estimates all empty or absent
        quiet.participants = quiet.participants.map { var p = $0; p.slots = []; p.drops = [:]; p.bandwidthEstimateBps = nil; return p }
        try Self.expectSameAnswer(quiet)
    }

    @Test func everyOtherAnswerIsTheBytesJSONEncoderWrote() throws {
        let sdp = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\na=fingerprint:sha-256 AB:CD\r\na=ice-pwd:x/y+z\r\n"
        try Self.expectSameAnswer(Done())
        try Self.expectSameAnswer(Health(rooms: 3))
        try Self.expectSameAnswer(RoomName(room: "r\"1"))
        try Self.expectSameAnswer(RoomNames(rooms: []))
        try Self.expectSameAnswer(RoomNames(rooms: Self.hostile))
        try Self.expectSameAnswer(ParticipantName(participant: "p\\1"))
        try Self.expectSameAnswer(ClosedConnections(closed: 2))
        try Self.expectSameAnswer(Answer(sdp: sdp, change: "created"))
        try Self.expectSameAnswer(Pinned(pinned: ["a", "b"]))
        try Self.expectSameAnswer(Hands(raised: ["a"], approved: []))
        try Self.expectSameAnswer(Locked(locked: true))
        // A refusal is the one answer sent without `Success`.
        let refusal = Refusal(result: 6011, msg: "no such route: GET /v1/x\"\n")
        #expect(Self.difference(refusal.jsonBytes, try Self.encoded(refusal)) == nil)
    }

    @Test func everyASCIICharacterAndSomeBeyondAreEscapedAsJSONEncoderEscapesThem() throws {
        var all = String(String.UnicodeScalarView((0..<0x80).map { Unicode.Scalar(UInt8($0)) }))
        all += "é\u{2028}\u{2029}😀\u{FEFF}e\u{301}"
        for s in [all] + Self.hostile {
            let refusal = Refusal(result: 1, msg: s)
            let d = Self.difference(refusal.jsonBytes, try Self.encoded(refusal))
            #expect(d == nil, "\(Array(s.unicodeScalars)): \(d ?? "")")
        }
    }

    /// RFC 8259 section 7: a control character may not appear unescaped in a string; whatever else a name
    /// holds, the answer must parse, and parse back to the very same string. Read back with JSONDecoder:
    /// JSONSerialization on Linux drops a U+FEFF that begins a string value (it decodes the string's bytes
    /// as if they were a document with a byte order mark), which is the reader's quirk, not the text's.
    @Test func hostileStringsStayValidJSONAndReadBackUnchanged() throws {
        struct Read: Decodable { var result: Int; var msg: String? = nil; var rooms: [String]? = nil }
        for s in Self.hostile {
            let bytes = Refusal(result: 1, msg: s).jsonBytes
            #expect(!bytes.contains { $0 < 0x20 }, "a raw control character in \(String(decoding: bytes, as: UTF8.self))")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any], "\(Array(s.unicodeScalars))")
            #expect(object.count == 2 && object["result"] as? Int == 1)
            let back = try JSONDecoder().decode(Read.self, from: Data(bytes))
            #expect(back.result == 1 && back.msg.map { Array($0.unicodeScalars) } == Array(s.unicodeScalars))
        }
        let names = try JSONDecoder().decode(Read.self, from: Data(Success(body: RoomNames(rooms: Self.hostile)).jsonBytes))
        #expect(names.result == 0 && names.rooms?.map { Array($0.unicodeScalars) } == Self.hostile.map { Array($0.unicodeScalars) })
    }

    @Test func integersAreExactAtTheEdgesOf64Bits() throws {
        let signed: [Int64] = [0, -1, 9, 10, -10, 99, 100, 1 << 53 + 1, .max, .min]
        let unsigned: [UInt64] = [0, 1, 9_007_199_254_740_993, .max]
        var w = JSONWriter()
        w.array(signed) { $0.integer($1) }
        #expect(Self.difference(w.bytes, try Self.encoded(signed)) == nil)
        w = JSONWriter()
        w.array(unsigned) { $0.integer($1) }
        #expect(String(decoding: w.bytes, as: UTF8.self) == "[0,1,9007199254740993,18446744073709551615]")
    }

    /// `Success` merges `"result": 0` into a body it knows nothing of: before the first greater key, or last.
    @Test func theMergedResultFieldGoesWhereSortedKeysPutsIt() throws {
        for keys: [StaticString] in [[], ["a"], ["z"], ["a", "z"], ["resul", "result_x"], ["a", "b", "r"], ["s", "t"]] {
            var w = JSONWriter()
            w.object { w in
                w.mergeField("result", 0)
                for (i, k) in keys.enumerated() { w.field(k, i + 1) }
            }
            var reference = ["result": 0]
            for (i, k) in keys.enumerated() { reference[k.description] = i + 1 }
            #expect(Self.difference(w.bytes, try Self.encoded(reference)) == nil, "\(keys)")
        }
    }
}
