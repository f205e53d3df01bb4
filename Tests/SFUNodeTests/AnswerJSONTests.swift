import Foundation
@testable import SFU
@testable import SFUNode
import Testing

/// The control API writes its answers one way, by hand (`JSONWriter`). These hold that writing to what the
/// document promises and to what `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` - what the API
/// sent before the writer - makes of the same strings and numbers: every answer one JSON object with its keys
/// in ascending byte order at every level, the documented fields, strings escaped byte for byte as JSONEncoder
/// escapes them (compared as bytes, not `String`s, which would compare equal across Unicode normalization
/// forms) and read back unchanged. schemathesis checks every answer against docs/openapi.yaml besides.
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

    /// The keys of every object in `bytes`, each object's in the order written (a small scanner of JSON text:
    /// strings with their escapes, nesting; what is between tokens does not matter here).
    static func keyOrders(_ bytes: [UInt8]) -> [[String]] {
        var orders: [[String]] = [], stack: [(object: Bool, index: Int, expectingKey: Bool)] = []
        var i = 0
        func readString() -> String {
            var raw: [UInt8] = [0x22]
            i += 1
            while i < bytes.count, bytes[i] != 0x22 {
                if bytes[i] == 0x5C { raw.append(bytes[i]); i += 1 }
                raw.append(bytes[i]); i += 1
            }
            raw.append(0x22); i += 1
            return (try? JSONDecoder().decode(String.self, from: Data(raw))) ?? "?"
        }
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "{"):
                orders.append([]); stack.append((true, orders.count - 1, true)); i += 1
            case UInt8(ascii: "["):
                stack.append((false, -1, false)); i += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                stack.removeLast(); i += 1
            case UInt8(ascii: ","):
                if let top = stack.last, top.object { stack[stack.count - 1].expectingKey = true }
                i += 1
            case 0x22:
                let text = readString()
                if let top = stack.last, top.object, top.expectingKey {
                    orders[top.index].append(text)
                    stack[stack.count - 1].expectingKey = false
                }
            default:
                i += 1
            }
        }
        return orders
    }

    /// `body` as the API sends it (`Success` adds `"result": 0` among its fields): one JSON object, every
    /// object's keys in ascending byte order; its top level's keys are `keys` and `result`. Returns it parsed.
    @discardableResult
    static func expectWellFormed(_ body: some JSONFields, keys: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let bytes = Success(body: body).jsonBytes
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any], sourceLocation: sourceLocation)
        let orders = keyOrders(bytes)
        for keys in orders {
            #expect(keys == keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }, "\(keys)", sourceLocation: sourceLocation)
        }
        #expect(orders.first == (keys + ["result"]).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) },
                sourceLocation: sourceLocation)
        #expect(object["result"] as? Int == 0, sourceLocation: sourceLocation)
        return object
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

    static let participantKeys = ["awaited", "connected", "hard_muted", "name", "origin", "participant", "publishes", "role", "slots"]
    static let stateKeys = ["active_talkers", "awaited_participants", "dominant_speaker", "floor", "hard_muted", "knock", "level_source",
                            "locked", "max_active_talkers", "mode", "participants", "pinned", "recording", "room", "screen_share",
                            "stream_bandwidth", "streaming", "video_degradation"]

    @Test func aStatsAnswerForARoomOf64HasEveryParticipantsFieldsInOrder() throws {
        let stats = Self.bigRoomStats()
        let o = try Self.expectWellFormed(stats, keys: ["drops", "packets_forwarded", "packets_received", "participants"])
        #expect(Success(body: stats).jsonBytes.count > 40_000, "the fixture is the size of a real answer")
        #expect(o["packets_forwarded"] as? UInt64 == .max && o["packets_received"] as? Int == 123_456_789)
        let participants = try #require(o["participants"] as? [[String: Any]])
        #expect(participants.count == 64)
        #expect(participants[5]["bandwidth_estimate"] as? Int == 500_000 && participants[4]["bandwidth_estimate"] is NSNull)
        #expect((participants[7]["drops"] as? [String: Any])?.count == DropReason.allCases.count)
    }

    @Test func aRoomStateAnswerForARoomOf64HasTheDocumentedFields() throws {
        var state = Self.bigRoomState()
        let o = try Self.expectWellFormed(state, keys: Self.stateKeys)
        let members = try #require(o["participants"] as? [[String: Any]])
        #expect(members.count == 64 && members.allSatisfy { Set($0.keys) == Set(Self.participantKeys) })
        // Names read back exactly, whatever they hold (read with JSONDecoder: JSONSerialization on Linux drops a
        // U+FEFF that begins a string value).
        struct Read: Decodable { struct Member: Decodable { var name: String }; var participants: [Member] }
        let names = try JSONDecoder().decode(Read.self, from: Data(Success(body: state).jsonBytes)).participants.map(\.name)
        #expect(zip(names, Self.hostile).allSatisfy { Array($0.unicodeScalars) == Array($1.unicodeScalars) } && names.count == 64)
        #expect(o["dominant_speaker"] as? String == "p-1" && o["recording"] is NSNull)
        state.snapshot.dominantSpeaker = nil  // written as null, not left out
        #expect(try Self.expectWellFormed(state, keys: Self.stateKeys)["dominant_speaker"] is NSNull)
    }

    @Test func anEmptyRoomsAnswersAreWellFormed() throws {
        try Self.expectWellFormed(RoomStats([], RoomCounters()), keys: ["drops", "packets_forwarded", "packets_received", "participants"])
        try Self.expectWellFormed(Self.bigRoomState(participants: 0), keys: Self.stateKeys)
        var quiet = Self.bigRoomStats(participants: 6)  // slots, drops and estimates all empty or absent
        quiet.participants = quiet.participants.map { var p = $0; p.slots = []; p.drops = [:]; p.bandwidthEstimateBps = nil; return p }
        try Self.expectWellFormed(quiet, keys: ["drops", "packets_forwarded", "packets_received", "participants"])
    }

    @Test func everyOtherAnswerHasItsDocumentedFields() throws {
        let sdp = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\na=fingerprint:sha-256 AB:CD\r\na=ice-pwd:x/y+z\r\n"
        try Self.expectWellFormed(Done(), keys: [])
        #expect(try Self.expectWellFormed(Health(rooms: 3), keys: ["node", "rooms", "state", "status"])["node"] is NSNull)
        try Self.expectWellFormed(RoomName(room: "r\"1"), keys: ["room"])
        try Self.expectWellFormed(RoomNames(rooms: []), keys: ["rooms"])
        try Self.expectWellFormed(RoomNames(rooms: Self.hostile), keys: ["rooms"])
        try Self.expectWellFormed(ParticipantName(participant: "p\\1"), keys: ["participant"])
        try Self.expectWellFormed(ClosedConnections(closed: 2), keys: ["closed_connections"])
        #expect(try Self.expectWellFormed(Answer(sdp: sdp, change: "created"), keys: ["change", "sdp"])["sdp"] as? String == sdp)
        try Self.expectWellFormed(Pinned(pinned: ["a", "b"]), keys: ["pinned"])
        try Self.expectWellFormed(Hands(raised: ["a"], approved: []), keys: ["approved_hands", "raised_hands"])
        try Self.expectWellFormed(Locked(locked: true), keys: ["locked"])
        try Self.expectWellFormed(Denied(denied: ["x"], closed: 1), keys: ["closed_connections", "denied"])
        try Self.expectWellFormed(PlacementAnswer(room: "r", node: "a", controlURL: "http://a", reason: "home", home: "a", epoch: 3),
                                  keys: ["control_url", "epoch", "home", "node", "reason", "room"])
        // A refusal is the one answer sent without `Success`.
        let refusal = Refusal(result: 6011, msg: "no such route: GET /v1/x\"\n")
        let r = try #require(try JSONSerialization.jsonObject(with: Data(refusal.jsonBytes)) as? [String: Any])
        #expect(Self.keyOrders(refusal.jsonBytes) == [["msg", "result"]] && r["result"] as? Int == 6011 && r["msg"] as? String == refusal.msg)
    }

    @Test func everyASCIICharacterAndSomeBeyondAreEscapedAsJSONEncoderEscapesThem() throws {
        var all = String(String.UnicodeScalarView((0..<0x80).map { Unicode.Scalar(UInt8($0)) }))
        all += "é\u{2028}\u{2029}😀\u{FEFF}e\u{301}"
        for s in [all] + Self.hostile {
            var w = JSONWriter()
            w.string(s)
            let d = Self.difference(w.bytes, try Self.encoded(s))
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
