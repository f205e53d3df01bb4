import Foundation
import SFU

/// The bodies of the API's requests, `Decodable` under the API's strict rules (`FieldReader`): a JSON object,
/// only the fields listed, no nulls, each of the right type and range, every refusal a 400 (6010) naming the
/// field. The routes get typed values; nothing reaches a worker unchecked.
protocol RequestBody: Decodable, Sendable {}

/// POST /v1/rooms. `auto_recording`: the room is recorded from its start (EnableX `settings.auto_recording`).
struct CreateRoomRequest: RequestBody {
    var room: String
    var settings: RoomSettings
    var autoRecording: Bool

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["room", "mode", "max_active_talkers", "stream_bandwidth", "level_source", "screen_share",
                                                   "video_degradation", "knock", "auto_recording"])
        room = try f.identifier("room")
        settings = try RoomSettings(f)
        autoRecording = try f.bool("auto_recording") ?? false
    }
}

/// POST /v1/placements
struct PlacementRequest: RequestBody {
    var room: String
    var participant: String?

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["room", "participant"])
        room = try f.identifier("room")
        participant = try f.identifier("participant", required: false)
    }
}

/// PATCH /v1/rooms/:room
struct UpdateRoomRequest: RequestBody {
    var settings: RoomSettings

    init(from decoder: any Decoder) throws {
        settings = try RoomSettings(FieldReader(decoder, allowed: ["mode", "max_active_talkers", "stream_bandwidth", "level_source", "screen_share", "video_degradation", "knock"]))
    }
}

/// Room settings from a create or update body, checked before they reach the worker.
struct RoomSettings: Sendable {
    var mode: RoomConfiguration.Mode?
    var maxActiveTalkers: Int?
    var streamBandwidth: Int?
    var levelSource: LevelSource?
    var screenShare: ScreenShareRule?
    var videoDegradation: VideoDegradation?
    var knock: Bool?

    init(_ f: FieldReader) throws {
        mode = try f.oneOf("mode", RoomConfiguration.Mode.self, "group or lecture")
        maxActiveTalkers = try f.int("max_active_talkers", 1...12)
        streamBandwidth = try f.int("stream_bandwidth", 1...100_000)
        levelSource = try f.oneOf("level_source", LevelSource.self, "extension, decode or verify")
        screenShare = try f.oneOf("screen_share", ScreenShareRule.self, "always or with_talker")
        videoDegradation = try f.oneOf("video_degradation", VideoDegradation.self, "layers_first or videos_first")
        knock = try f.bool("knock")
    }

    func apply(to c: inout RoomConfiguration) {
        if let mode { c.mode = mode }
        if let maxActiveTalkers { c.maxActiveTalkers = maxActiveTalkers }
        if let streamBandwidth { c.streamBandwidthKbps = streamBandwidth }
        if let levelSource { c.levelSource = levelSource }
        if let screenShare { c.screenShare = screenShare }
        if let videoDegradation { c.videoDegradation = videoDegradation }
        if let knock { c.knock = knock }
    }
}

/// POST /v1/rooms/:room/participants
struct AdmitRequest: RequestBody {
    var participant: String
    var name: String?
    var role: Role
    var talkerCount: Int?

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["participant", "name", "role", "talker_count"])
        participant = try f.identifier("participant")
        name = try f.displayName("name")
        role = try f.oneOf("role", Role.self, "moderator or participant") ?? .participant
        talkerCount = try f.int("talker_count", 1...12)
    }
}

/// PATCH /v1/rooms/:room/participants/:p. `talker_count` given (a number) sets the subscriber's own count.
struct UpdateParticipantRequest: RequestBody {
    var talkerCount: Int?
    var changesTalkerCount: Bool
    var videoMuted: Bool?

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["talker_count", "video_muted"])
        talkerCount = try f.int("talker_count", 1...12)
        changesTalkerCount = f.contains("talker_count")
        videoMuted = try f.bool("video_muted")
    }
}

/// DELETE /v1/rooms/:room/participants/:p (optional body: the moderator who drops).
struct RemoveParticipantRequest: RequestBody {
    var by: String?

    init(from decoder: any Decoder) throws {
        by = try FieldReader(decoder, allowed: ["by"]).identifier("by", required: false)
    }
}

/// POST .../publish and .../subscribe: the client's SDP offer, and which of its video m-lines (by mid) are
/// screen shares (publish) or screen slots (subscribe).
struct OfferRequest: RequestBody {
    var sdp: String
    var screenShareMids: Set<String>

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["sdp", "screen_share_mids"])
        sdp = try f.requiredString("sdp")
        let mids = try f.strings("screen_share_mids") ?? []
        // Bounded: a mid is an RFC 5888 token, and browsers number them; no offer has more screen m-lines.
        guard mids.count <= 16, mids.allSatisfy({ !$0.isEmpty && $0.count <= 32 }) else {
            throw APIError(.badRequest, code: 6010, "screen_share_mids must be at most 16 mids of 1-32 characters")
        }
        screenShareMids = Set(mids)
    }
}

/// POST /v1/rooms/:room/hard-mute
struct RoomHardMuteRequest: RequestBody {
    var by: String
    var audio: Bool

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["by", "audio"])
        by = try f.identifier("by")
        audio = try f.required(f.bool("audio"), "audio")
    }
}

/// POST /v1/rooms/:room/participants/:p/hard-mute
struct ParticipantHardMuteRequest: RequestBody {
    var by: String
    var audio: Bool?
    var video: Bool?

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["by", "audio", "video"])
        by = try f.identifier("by")
        audio = try f.bool("audio")
        video = try f.bool("video")
    }
}

/// POST /v1/rooms/:room/pins: exactly one of `add` and `remove`.
struct PinsRequest: RequestBody {
    enum Change: Sendable { case add([String]), remove([String]) }
    var by: String
    var change: Change

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["by", "add", "remove"])
        by = try f.identifier("by")
        switch (try f.identifiers("add"), try f.identifiers("remove")) {
        case (let add?, nil): change = .add(add)
        case (nil, let remove?): change = .remove(remove)
        default: throw APIError(.badRequest, code: 6010, "give exactly one of 'add' or 'remove'")
        }
    }
}

/// POST /v1/rooms/:room/floor
struct FloorRequest: RequestBody {
    var by: String
    var action: FloorAction
    var target: String?

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["by", "action", "target"])
        by = try f.identifier("by")
        action = try f.required(f.oneOf("action", FloorAction.self, FloorAction.allCases.map(\.rawValue).joined(separator: ", ")), "action")
        target = try f.identifier("target", required: false)
    }
}

/// POST /v1/rooms/:room/lock
struct LockRequest: RequestBody {
    var by: String
    var locked: Bool

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["by", "locked"])
        by = try f.identifier("by")
        locked = try f.required(f.bool("locked"), "locked")
    }
}

/// POST /v1/rooms/:room/participants/:p/role
/// PUT .../participants/:p/slots/:mid: how large the subscriber renders that video slot, at most (both
/// absent or null: no limit).
struct RenderSizeRequest: RequestBody {
    var limit: RenderLimit?

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["max_width", "max_height"])
        let w = try f.int("max_width", 1...16_384), h = try f.int("max_height", 1...16_384)
        limit = w == nil && h == nil ? nil : RenderLimit(maxWidth: w, maxHeight: h)
    }
}

struct RoleRequest: RequestBody {
    var by: String
    var role: Role

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["by", "role"])
        by = try f.identifier("by")
        role = try f.required(f.oneOf("role", Role.self, "moderator or participant"), "role")
    }
}

/// POST /v1/rooms/:room/awaited/approve and .../deny: `participants` (at most 64), or everyone who waits when
/// absent.
struct AwaitedRequest: RequestBody {
    var by: String
    var participants: [String]?

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["by", "participants"])
        by = try f.identifier("by")
        participants = try f.identifiers("participants")
    }
}

/// POST /v1/rooms/:room/recording/start and .../stop: the moderator who asks.
struct RecordingRequest: RequestBody {
    var by: String

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["by"])
        by = try f.identifier("by")
    }
}

/// POST /v1/rooms/:room/streaming/start: the moderator, and the seeds' rtmpDetails (`rtmp_url`, its stream key
/// in it; `view_url` optional).
struct StreamingRequest: RequestBody {
    var by: String
    var rtmpURL: String
    var viewURL: String?

    init(from decoder: any Decoder) throws {
        let f = try FieldReader(decoder, allowed: ["by", "rtmp_url", "view_url"])
        by = try f.identifier("by")
        rtmpURL = try f.required(f.string("rtmp_url"), "rtmp_url")
        viewURL = try f.string("view_url")
    }
}
