import Foundation
import SFU
import SFUBase
import WebRTCEdge

/// What the nodes of a room that spans nodes tell each other on their control channel (issue 25;
/// docs/cluster.md, "Between nodes"): one JSON object per WebSocket message, its kind in `type`. The channel
/// itself (one connection per pair of nodes, set up from `Registry.spans(of:)`) is not built yet; this is its
/// contract, checked whole on the way in like every other boundary: a peer node is another process that may
/// run another version, be restarted half-way or be impersonated, so every list and string is bounded, every
/// number range-checked, and a message that breaks a rule is refused with what it broke - never half applied.
public enum RelayMessage: Sendable, Equatable {
    /// The first message on a connection: who speaks, and the protocol it speaks.
    case hello(node: String, version: Int)
    /// What the sender relays to the receiver in `room` now (`Room.relays.carried(to:)`): the whole description, so
    /// that a lost or reordered one is repaired by the next; and who of those it described before has left
    /// the room at the sender (the receiver lets its remote participants of that id go); and everyone in the
    /// room at the sender (`Room.relays.localMembers`), relayed or not, so that every node knows the whole room.
    case streams(room: String, epoch: Int64, streams: [RelayedStream], left: [String], members: [RelayedMember])
    /// The home's talker order (`Room.home.shareRanking()`).
    case ranking(room: String, SharedRanking)
    /// The home's moderation (`Room.home.moderationState`).
    case moderation(room: String, ModerationState)
    /// The sender opened its end of `room`'s relay with the receiver, at the room's `epoch`, the relay named
    /// `relay` (a random number the node that dials the channel draws for each relay it opens; the other node
    /// answers with its own `open` of the same number, and never opens one itself): what the receiver
    /// sends for this room (its relayed media, its feedback on the sender's) goes to `address` (a UDP socket
    /// of the sender's for this relay alone), and the sender protects what it sends with this SRTP master key
    /// and salt (AEAD_AES_128_GCM, RFC 7714: 16 + 12 bytes). A key is drawn for each relay end the sender opens
    /// and never used by another: a relay opened again starts its sequence numbers over under a new key, so
    /// no (key, SSRC, index) nonce is used twice.
    case open(room: String, epoch: Int64, relay: UInt64, address: TransportAddress, keyAndSalt: [UInt8])
    /// The sender closed its end of the relay `relay` of `room` (the room ended there, or is no longer shared,
    /// or it refuses the relay): the receiver closes its end of that relay, and of no other.
    case bye(room: String, relay: UInt64)
    /// A moderator command issued at the sender, a node of `room` that is not its home, for the home (the
    /// receiver) to decide: `by` is the issuer's participant id, `request` the sender's number for the answer.
    case command(room: String, request: UInt64, by: String, ModerationCommand)
    /// A participant of the receiver's own, removed from `room` through the sender (a moderator `by` dropped
    /// it, or the sender's caller removed it): the receiver, its node, removes it and says how many of its
    /// connections closed; the other nodes see it leave with the receiver's next `streams`.
    case drop(room: String, request: UInt64, participant: String, by: String?)
    /// The answer to `command` or `drop` `request`: refused (`error`) or done, the room's moderation after it
    /// (`state`; the home's answer to a command), which the sender applies before it answers its caller, and
    /// how many connections a drop closed.
    case result(room: String, request: UInt64, error: RelayCommandError?, state: ModerationState?, closed: Int?)

    /// 2: `members` in `streams`, `command`, `drop` and `result`, screen shares (`source`). Nodes of other
    /// versions do not relay to each other.
    public static let protocolVersion = 2
    /// Bounds of what a message may carry.
    public static let maxBytes = 1 << 20
    public static let maxIDBytes = 256
    public static let maxStreams = 256
    public static let maxListed = 4096
    public static let keyAndSaltBytes = 28
    /// Layers of one simulcast source at most.
    public static let maxLayers = 4
    public static let maxRelayID: UInt64 = 1 << 53
}

public struct RelayMessageError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}

extension RelayMessage {
    /// The message as it crosses: compact JSON, snake_case keys.
    public func encoded() throws -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return try e.encode(Envelope(self))
    }

    /// Reads and checks one message; throws `RelayMessageError` saying what is wrong with it.
    public static func decode(_ data: Data) throws(RelayMessageError) -> RelayMessage {
        guard data.count <= maxBytes else { throw RelayMessageError("message of \(data.count) bytes, over \(maxBytes)") }
        let envelope: Envelope
        do {
            envelope = try JSONDecoder().decode(Envelope.self, from: data)
        } catch let e as RelayMessageError {
            throw e
        } catch {
            throw RelayMessageError("not a relay message: \(Self.reason(error))")
        }
        return envelope.message
    }

    static func reason(_ error: Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let c), DecodingError.valueNotFound(_, let c):
            "wrong type at \(c.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted(let c):
            c.codingPath.isEmpty ? "unreadable (\(c.debugDescription.prefix(100)))" : "bad value at \(c.codingPath.map(\.stringValue).joined(separator: "."))"
        case let e as RelayMessageError: e.description
        default: "\(error)"
        }
    }
}

/// The JSON shape: `{"type": ..., fields}`; decoding checks every bound as it reads.
struct Envelope: Codable {
    var message: RelayMessage

    init(_ m: RelayMessage) { message = m }

    enum Key: String, CodingKey {
        case type, node, version, room, epoch, streams, ranking, moderation, address, relay, left, members
        case request, by, command, error, participant, closed
        case keyAndSalt = "key_and_salt"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch message {
        case .hello(let node, let version):
            try c.encode("hello", forKey: .type)
            try c.encode(node, forKey: .node)
            try c.encode(version, forKey: .version)
        case .streams(let room, let epoch, let streams, let left, let members):
            try c.encode("streams", forKey: .type)
            try c.encode(left, forKey: .left)
            try c.encode(members.map(WireMember.init), forKey: .members)
            try c.encode(room, forKey: .room)
            try c.encode(epoch, forKey: .epoch)
            try c.encode(streams.map(WireStream.init), forKey: .streams)
        case .ranking(let room, let r):
            try c.encode("ranking", forKey: .type)
            try c.encode(room, forKey: .room)
            try c.encode(WireRanking(r), forKey: .ranking)
        case .moderation(let room, let m):
            try c.encode("moderation", forKey: .type)
            try c.encode(room, forKey: .room)
            try c.encode(m, forKey: .moderation)
        case .open(let room, let epoch, let relay, let address, let key):
            try c.encode("open", forKey: .type)
            try c.encode(relay, forKey: .relay)
            try c.encode(room, forKey: .room)
            try c.encode(epoch, forKey: .epoch)
            try c.encode("\(address)", forKey: .address)
            try c.encode(Data(key).base64EncodedString(), forKey: .keyAndSalt)
        case .bye(let room, let relay):
            try c.encode("bye", forKey: .type)
            try c.encode(relay, forKey: .relay)
            try c.encode(room, forKey: .room)
        case .command(let room, let request, let by, let command):
            try c.encode("command", forKey: .type)
            try c.encode(room, forKey: .room)
            try c.encode(request, forKey: .request)
            try c.encode(by, forKey: .by)
            try c.encode(WireCommand(command), forKey: .command)
        case .drop(let room, let request, let participant, let by):
            try c.encode("drop", forKey: .type)
            try c.encode(room, forKey: .room)
            try c.encode(request, forKey: .request)
            try c.encode(participant, forKey: .participant)
            try c.encodeIfPresent(by, forKey: .by)
        case .result(let room, let request, let error, let state, let closed):
            try c.encode("result", forKey: .type)
            try c.encode(room, forKey: .room)
            try c.encode(request, forKey: .request)
            try c.encodeIfPresent(error, forKey: .error)
            try c.encodeIfPresent(state, forKey: .moderation)
            try c.encodeIfPresent(closed, forKey: .closed)
        }
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        func id(_ k: Key) throws -> String { try Check.id(try c.decode(String.self, forKey: k), k.stringValue) }
        func epoch() throws -> Int64 {
            let e = try c.decode(Int64.self, forKey: .epoch)
            guard e >= 0 else { throw RelayMessageError("negative epoch") }
            return e
        }
        // A relay's number is below 2^53, so that any JSON reader keeps it exact.
        func relay() throws -> UInt64 {
            let r = try c.decode(UInt64.self, forKey: .relay)
            guard r > 0, r < RelayMessage.maxRelayID else { throw RelayMessageError("relay must be 1 to 2^53 - 1") }
            return r
        }
        switch try c.decode(String.self, forKey: .type) {
        case "hello":
            message = .hello(node: try id(.node), version: try c.decode(Int.self, forKey: .version))
        case "streams":
            let wire = try c.decode([WireStream].self, forKey: .streams)
            guard wire.count <= RelayMessage.maxStreams else { throw RelayMessageError("\(wire.count) streams, over \(RelayMessage.maxStreams)") }
            let streams = try wire.map { try $0.stream() }
            guard Set(streams.map(\.ssrc)).count == streams.count else { throw RelayMessageError("an SSRC named twice") }
            let left = try Check.ids(try c.decodeIfPresent([String].self, forKey: .left) ?? [], "left")
            let wireMembers = try c.decodeIfPresent([WireMember].self, forKey: .members) ?? []
            guard wireMembers.count <= RelayMessage.maxListed else { throw RelayMessageError("members lists \(wireMembers.count), over \(RelayMessage.maxListed)") }
            message = .streams(room: try id(.room), epoch: try epoch(), streams: streams, left: left, members: try wireMembers.map { try $0.member() })
        case "ranking":
            message = .ranking(room: try id(.room), try c.decode(WireRanking.self, forKey: .ranking).ranking())
        case "moderation":
            let m = try c.decode(ModerationState.self, forKey: .moderation)
            try Check.moderation(m)
            message = .moderation(room: try id(.room), m)
        case "open":
            guard let key = Data(base64Encoded: try c.decode(String.self, forKey: .keyAndSalt)), key.count == RelayMessage.keyAndSaltBytes else {
                throw RelayMessageError("key_and_salt is not \(RelayMessage.keyAndSaltBytes) bytes of base64")
            }
            let text = try c.decode(String.self, forKey: .address)
            guard text.utf8.count <= 64, let address = TransportAddress(text), address.port != 0 else {
                throw RelayMessageError("address is not an IP address and port")
            }
            message = .open(room: try id(.room), epoch: try epoch(), relay: try relay(), address: address, keyAndSalt: [UInt8](key))
        case "bye":
            message = .bye(room: try id(.room), relay: try relay())
        case "command":
            let request = try c.decode(UInt64.self, forKey: .request)
            message = .command(room: try id(.room), request: request, by: try id(.by), try c.decode(WireCommand.self, forKey: .command).command())
        case "result":
            let request = try c.decode(UInt64.self, forKey: .request)
            let error = try c.decodeIfPresent(RelayCommandError.self, forKey: .error)
            if let e = error { _ = try Check.text(e.message, "error.message") }
            let state = try c.decodeIfPresent(ModerationState.self, forKey: .moderation)
            if let state { try Check.moderation(state) }
            let closed = try c.decodeIfPresent(Int.self, forKey: .closed)
            guard (closed ?? 0) >= 0 else { throw RelayMessageError("negative closed") }
            message = .result(room: try id(.room), request: request, error: error, state: state, closed: closed)
        case "drop":
            let request = try c.decode(UInt64.self, forKey: .request)
            let by = try c.decodeIfPresent(String.self, forKey: .by).map { try Check.id($0, "by") }
            message = .drop(room: try id(.room), request: request, participant: try id(.participant), by: by)
        case let other:
            throw RelayMessageError("unknown type \(other.prefix(32))")
        }
    }
}

/// One relayed stream as it crosses.
struct WireStream: Codable {
    var participant: String
    var name: String
    var role: Role
    var kind: MediaKind
    var codec: Codec
    var ssrc: UInt32
    var payloadType: UInt8
    var rtxSSRC: UInt32?
    var rtxPayloadType: UInt8?
    /// H.264's profile (its name) and level (a level_idc, 9 for 1b).
    var h264: H264Wire?
    /// "screen" for a screen share; absent for a camera (and audio).
    var source: String?
    /// A simulcast source's layer, 0 the lowest; absent for one that is not simulcast.
    var layer: Int?

    struct H264Wire: Codable {
        var profile: String
        var levelIDC: UInt8
        enum CodingKeys: String, CodingKey {
            case profile
            case levelIDC = "level_idc"
        }
    }

    enum CodingKeys: String, CodingKey {
        case participant, name, role, kind, codec, ssrc, h264, source, layer
        case payloadType = "payload_type"
        case rtxSSRC = "rtx_ssrc"
        case rtxPayloadType = "rtx_payload_type"
    }

    init(_ s: RelayedStream) {
        participant = s.participant
        name = Check.name(s.name)
        role = s.role
        kind = s.kind
        codec = s.codec
        ssrc = s.ssrc
        payloadType = s.payloadType
        rtxSSRC = s.rtxSSRC
        rtxPayloadType = s.rtxPayloadType
        h264 = s.h264.map {
            H264Wire(profile: $0.profile.rawValue, levelIDC: $0.level.levelIDC)
        }
        source = s.source == .screen ? "screen" : nil
        layer = s.layer
    }

    func stream() throws -> RelayedStream {
        guard codec.kind == kind else { throw RelayMessageError("a \(kind.rawValue) stream in \(codec.rawValue)") }
        guard payloadType < 128, rtxPayloadType.map({ $0 < 128 }) ?? true else { throw RelayMessageError("a payload type over 127") }
        guard (rtxSSRC == nil) == (rtxPayloadType == nil) else { throw RelayMessageError("an RTX SSRC without its payload type, or the reverse") }
        guard rtxSSRC != ssrc else { throw RelayMessageError("an RTX stream on its media SSRC") }
        var profile: H264ProfileLevelID?
        if let h = h264 {
            guard codec == .h264, let p = H264ProfileLevelID.Profile(rawValue: h.profile) else { throw RelayMessageError("bad h264 profile") }
            profile = H264ProfileLevelID(profile: p, level: .init(levelIDC: h.levelIDC, constraintSet3: false, profileIDC: 0))
        }
        guard source == nil || (source == "screen" && kind == .video) else { throw RelayMessageError("source must be screen, on a video") }
        guard layer.map({ kind == .video && (0..<RelayMessage.maxLayers).contains($0) }) ?? true else {
            throw RelayMessageError("layer must be 0-\(RelayMessage.maxLayers - 1), on a video")
        }
        return RelayedStream(participant: try Check.id(participant, "participant"), name: Check.name(name), role: role, kind: kind,
                             codec: codec, ssrc: ssrc, payloadType: payloadType, rtxSSRC: rtxSSRC, rtxPayloadType: rtxPayloadType, h264: profile,
                             source: source == "screen" ? .screen : .camera, layer: layer)
    }
}

/// The home's talker order as it crosses.
struct WireRanking: Codable {
    var epoch: Int64
    var version: UInt64
    var recency: [String]
    var speaking: [String]
    var young: [String]
    var dominant: String?

    init(_ r: SharedRanking) {
        epoch = r.epoch
        version = r.version
        recency = r.recency
        speaking = r.speaking
        young = r.young
        dominant = r.dominant
    }

    func ranking() throws -> SharedRanking {
        guard epoch >= 0 else { throw RelayMessageError("negative epoch") }
        let recency = try Check.ids(recency, "recency")
        // Who speaks, who just started and the dominant speaker are among the ranked.
        let ranked = Set(recency)
        for (list, field) in [(speaking, "speaking"), (young, "young")] {
            guard try Check.ids(list, field).allSatisfy(ranked.contains) else { throw RelayMessageError("\(field) names someone not ranked") }
        }
        if let d = dominant, !ranked.contains(d) { throw RelayMessageError("the dominant speaker is not ranked") }
        return SharedRanking(epoch: epoch, version: version, recency: recency, speaking: speaking, young: young, dominant: dominant)
    }
}

/// The bounds every string and list from a peer is held to.
enum Check {
    static func id(_ s: String, _ field: String) throws -> String {
        guard !s.isEmpty, s.utf8.count <= RelayMessage.maxIDBytes else {
            throw RelayMessageError("\(field) must be 1-\(RelayMessage.maxIDBytes) bytes")
        }
        return s
    }

    static func text(_ s: String, _ field: String) throws -> String {
        guard s.utf8.count <= RelayMessage.maxIDBytes else { throw RelayMessageError("\(field) over \(RelayMessage.maxIDBytes) bytes") }
        return s
    }

    /// A display name: cut to `maxIDBytes` at a character's end rather than refused (the control API bounds
    /// names in characters, and a name never decides anything).
    static func name(_ s: String) -> String { s.clipped(toUTF8Bytes: RelayMessage.maxIDBytes) }

    static func ids(_ list: [String], _ field: String) throws -> [String] {
        guard list.count <= RelayMessage.maxListed else { throw RelayMessageError("\(field) lists \(list.count), over \(RelayMessage.maxListed)") }
        for s in list { _ = try id(s, field) }
        return list
    }

    static func moderation(_ m: ModerationState) throws {
        guard m.epoch >= 0 else { throw RelayMessageError("negative epoch") }
        for (list, field) in [(m.pinned, "pinned"), (m.raisedHands, "raised_hands"), (m.invited, "invited"), (m.members, "members"),
                              (Array(m.hardMuted.keys), "hard_muted"), (m.moderators ?? [], "moderators")] {
            _ = try ids(list, field)
        }
        if let h = m.floorHolder { _ = try id(h, "floor_holder") }
        if let b = m.by { _ = try id(b, "by") }
        if let f = m.floorCommand {
            _ = try id(f.by, "floor_command.by")
            if let t = f.target { _ = try id(t, "floor_command.target") }
        }
    }
}
