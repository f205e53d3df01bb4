import Foundation
import SFU
import SFUBase
import WebRTCEdge
@testable import SFUNode
import Testing

/// The control channel's messages between the nodes of a room (issue 25): each reads back as it was written,
/// and one that breaks a bound or a rule is refused whole, saying what it broke.
@Suite struct RelayMessageTests {
    static let streams = [
        RelayedStream(participant: "alice", name: "Alice", role: .moderator, kind: .audio, codec: .opus, ssrc: 0x1000_0004, payloadType: 111),
        RelayedStream(participant: "alice", name: "Alice", role: .moderator, kind: .video, codec: .h264, ssrc: 0x1000_0005, payloadType: 102,
                      rtxSSRC: 0x1000_0006, rtxPayloadType: 103,
                      h264: H264ProfileLevelID(profile: .constrainedBaseline, level: .init(levelIDC: 31, constraintSet3: false, profileIDC: 0x42))),
        RelayedStream(participant: "alice", name: "Alice", role: .moderator, kind: .video, codec: .vp8, ssrc: 0x1000_0007, payloadType: 96,
                      rtxSSRC: 0x1000_0008, rtxPayloadType: 97, source: .screen),
        RelayedStream(participant: "bob", name: "Bob", kind: .video, codec: .vp8, ssrc: 0x1000_0009, payloadType: 96, layer: 2),
    ]

    static let members = [RelayedMember(participant: "alice", name: "Alice", role: .moderator), RelayedMember(participant: "dan", name: "Dan", role: .participant)]
    static let moderation = ModerationState(epoch: 42, version: 9, pinned: ["alice"], locked: true, hardMuted: ["bob": .init(audio: true, video: false)],
                                            members: ["alice", "bob"], moderators: ["alice"], by: "alice",
                                            floorCommand: .init(action: .grant, by: "alice", target: "bob"))
    static let messages: [RelayMessage] = [
        .hello(node: "sfu-1", version: RelayMessage.protocolVersion),
        .streams(room: "standup", epoch: 42, streams: streams, left: ["carol"], members: members),
        .streams(room: "standup", epoch: 42, streams: [], left: [], members: []),
        .ranking(room: "standup", SharedRanking(epoch: 42, version: 7, recency: ["bob", "alice"], speaking: ["bob"], young: [], dominant: "bob")),
        .moderation(room: "standup", ModerationState(epoch: 42, version: 9, pinned: ["alice"], locked: true, hardMuted: ["bob": .init(audio: true, video: false)],
                                                     members: ["alice", "bob"])),
        .moderation(room: "standup", moderation),
        .open(room: "standup", epoch: 42, relay: 7, address: TransportAddress("10.0.0.2:40000")!, keyAndSalt: Array(0..<28)),
        .open(room: "standup", epoch: 42, relay: 7, address: TransportAddress("[fd00::2]:40000")!, keyAndSalt: Array(0..<28)),
        .bye(room: "standup", relay: (1 << 53) - 1),
    ]
    static let commands: [RelayMessage] = [
        .command(room: "standup", request: 1, by: "alice", .roomHardMute(audio: true)),
        .command(room: "standup", request: 2, by: "alice", .hardMute(target: "bob", audio: true, video: nil)),
        .command(room: "standup", request: 3, by: "alice", .pin(["bob", "dan"])),
        .command(room: "standup", request: 4, by: "alice", .unpin(["bob"])),
        .command(room: "standup", request: 5, by: "bob", .floor(.request, target: nil)),
        .command(room: "standup", request: 6, by: "alice", .floor(.invite, target: "dan")),
        .command(room: "standup", request: 7, by: "alice", .lock(false)),
        .command(room: "standup", request: 8, by: "alice", .role(target: "dan", .moderator)),
        .result(room: "standup", request: 8, error: nil, state: moderation, closed: nil),
        .result(room: "standup", request: 9, error: RelayCommandError(code: 5003, kind: .unauthorized, message: "bob is not a moderator"), state: moderation,
                closed: nil),
        .result(room: "standup", request: 10, error: RelayCommandError(code: 6022, kind: .unavailable, message: "not the home"), state: nil, closed: nil),
        .drop(room: "standup", request: 11, participant: "dan", by: "alice"),
        .drop(room: "standup", request: 12, participant: "dan", by: nil),
        .result(room: "standup", request: 12, error: nil, state: nil, closed: 2),
    ]

    @Test(arguments: messages + commands)
    func eachMessageReadsBackAsItWasWritten(_ m: RelayMessage) throws {
        #expect(try RelayMessage.decode(try m.encoded()) == m)
    }

    func refusal(_ json: String) -> String? {
        do {
            _ = try RelayMessage.decode(Data(json.utf8))
            return nil
        } catch {
            return error.description
        }
    }

    func stream(_ fields: String) -> String {
        #"{"type":"streams","room":"r","epoch":1,"streams":[{"participant":"a","name":"A","role":"participant","#
            + fields + "}]}"
    }

    @Test func aMessageThatBreaksARuleIsRefusedSayingWhich() {
        let refused: [(String, String)] = [
            ("not json", "not a relay message"),
            (#"{"type":"gossip","room":"r"}"#, "unknown type"),
            (#"{"type":"bye","relay":1}"#, "no room"),
            (#"{"type":"bye","room":"","relay":1}"#, "room must be 1-256 bytes"),
            (#"{"type":"bye","room":"\#(String(repeating: "x", count: 257))","relay":1}"#, "room must be 1-256 bytes"),
            (#"{"type":"bye","room":"r"}"#, "no relay"),
            (#"{"type":"bye","room":"r","relay":0}"#, "relay must be 1 to 2^53 - 1"),
            (#"{"type":"bye","room":"r","relay":9007199254740992}"#, "relay must be 1 to 2^53 - 1"),
            (#"{"type":"open","room":"r","relay":3,"epoch":1,"address":"10.0.0.2:4000","key_and_salt":"AAEC"}"#, "key_and_salt is not 28 bytes"),
            (#"{"type":"open","room":"r","relay":3,"epoch":-1,"address":"10.0.0.2:4000","key_and_salt":"\#(Data(count: 28).base64EncodedString())"}"#, "negative epoch"),
            (#"{"type":"open","room":"r","relay":3,"epoch":1,"address":"10.0.0.2","key_and_salt":"\#(Data(count: 28).base64EncodedString())"}"#, "address is not an IP address and port"),
            (#"{"type":"open","room":"r","relay":3,"epoch":1,"address":"10.0.0.2:0","key_and_salt":"\#(Data(count: 28).base64EncodedString())"}"#, "address is not an IP address and port"),
            (#"{"type":"open","room":"r","relay":3,"epoch":1,"address":"relay.example:4000","key_and_salt":"\#(Data(count: 28).base64EncodedString())"}"#, "address is not an IP address and port"),
            (stream(#""kind":"audio","codec":"vp8","ssrc":1,"payload_type":96"#), "a audio stream in vp8"),
            (stream(#""kind":"video","codec":"vp8","ssrc":1,"payload_type":200"#), "a payload type over 127"),
            (stream(#""kind":"video","codec":"vp8","ssrc":1,"payload_type":300"#), "not a relay message"),
            (stream(#""kind":"video","codec":"vp8","ssrc":1,"payload_type":127,"rtx_ssrc":2"#), "RTX SSRC without its payload type"),
            (stream(#""kind":"video","codec":"vp8","ssrc":1,"payload_type":96,"rtx_ssrc":1,"rtx_payload_type":97"#), "RTX stream on its media SSRC"),
            (stream(#""kind":"audio","codec":"opus","ssrc":1,"payload_type":111,"source":"screen""#), "source must be screen, on a video"),
            (stream(#""kind":"video","codec":"vp8","ssrc":1,"payload_type":96,"source":"window""#), "source must be screen, on a video"),
            (stream(#""kind":"video","codec":"vp8","ssrc":1,"payload_type":96,"layer":4"#), "layer must be 0-3, on a video"),
            (stream(#""kind":"audio","codec":"opus","ssrc":1,"payload_type":111,"layer":0"#), "layer must be 0-3, on a video"),
            (stream(#""kind":"video","codec":"vp8","ssrc":1,"payload_type":96,"h264":{"profile":"high","level_idc":31}"#),
             "bad h264 profile"),
            (#"{"type":"ranking","room":"r","ranking":{"epoch":1,"version":1,"recency":["a"],"speaking":["b"],"young":[]}}"#,
             "speaking names someone not ranked"),
            (#"{"type":"ranking","room":"r","ranking":{"epoch":1,"version":1,"recency":["a"],"speaking":[],"young":[],"dominant":"z"}}"#,
             "dominant speaker is not ranked"),
            (#"{"type":"moderation","room":"r","moderation":{"version":1,"members":[""]}}"#, "members must be 1-256 bytes"),
            (#"{"type":"moderation","room":"r","moderation":{"version":1,"by":""}}"#, "by must be 1-256 bytes"),
            (#"{"type":"streams","room":"r","epoch":1,"streams":[],"members":[{"participant":"","name":"","role":"participant"}]}"#,
             "participant must be 1-256 bytes"),
            (#"{"type":"streams","room":"r","epoch":1,"streams":[],"members":[{"participant":"a","name":"A","role":"king"}]}"#, "not a relay message"),
            (#"{"type":"command","room":"r","request":1,"by":"a","command":{"op":"pin"}}"#, "pin needs ids"),
            (#"{"type":"command","room":"r","request":1,"by":"a","command":{"op":"abdicate"}}"#, "unknown command"),
            (#"{"type":"command","room":"r","request":1,"by":"a","command":{"op":"role","target":"b"}}"#, "role needs role"),
            (#"{"type":"command","room":"r","request":1,"command":{"op":"lock","locked":true}}"#, "no by"),
            (#"{"type":"command","room":"r","request":-1,"by":"a","command":{"op":"lock","locked":true}}"#, "not a relay message"),
            (#"{"type":"result","room":"r","request":1,"error":{"code":1,"kind":"bribed","message":""}}"#, "not a relay message"),
            (#"{"type":"result","room":"r","request":1,"closed":-1}"#, "negative closed"),
            (#"{"type":"drop","room":"r","request":1}"#, "no participant"),
        ]
        for (json, reason) in refused {
            let why = refusal(json)
            #expect(why?.contains(reason) == true, "\(json.prefix(80)): \(why ?? "accepted")")
        }
    }

    @Test func listsAndMessagesOverTheirBoundsAreRefused() throws {
        let one = #"{"participant":"a","name":"A","role":"participant","kind":"audio","codec":"opus","ssrc":SSRC,"payload_type":111}"#
        let many = (1...257).map { one.replacingOccurrences(of: "SSRC", with: "\($0)") }.joined(separator: ",")
        #expect(refusal(#"{"type":"streams","room":"r","epoch":1,"streams":[\#(many)]}"#)?.contains("257 streams, over 256") == true)
        let twice = [1, 1].map { one.replacingOccurrences(of: "SSRC", with: "\($0)") }.joined(separator: ",")
        #expect(refusal(#"{"type":"streams","room":"r","epoch":1,"streams":[\#(twice)]}"#)?.contains("SSRC named twice") == true)
        let crowd = (0...RelayMessage.maxListed).map { "\"p\($0)\"" }.joined(separator: ",")
        #expect(refusal(#"{"type":"moderation","room":"r","moderation":{"version":1,"members":[\#(crowd)]}}"#)?.contains("over 4096") == true)
        #expect(refusal(#"{"type":"streams","room":"r","epoch":1,"streams":[],"left":[\#(crowd)]}"#)?.contains("left lists 4097, over 4096") == true)
        let huge = Data(repeating: 0x20, count: RelayMessage.maxBytes + 1)
        #expect(throws: RelayMessageError.self) { try RelayMessage.decode(huge) }
    }
}
