import Foundation
import SFU

/// The bodies of the API's answers, `Encodable`, in the shape docs/openapi.yaml documents (a test checks
/// every route against it). Fields the document declares nullable are written as `null`, never left out.

/// A success without fields: `{"result": 0}`.
struct Done: Encodable {
    func encode(to encoder: any Encoder) throws {}
}

struct Health: Encodable {
    var status = "ok"
    var rooms: Int
}

struct RoomName: Encodable { var room: String }
struct RoomNames: Encodable { var rooms: [String] }
struct ParticipantName: Encodable { var participant: String }

struct ClosedConnections: Encodable {
    var closed: Int
    enum CodingKeys: String, CodingKey { case closed = "closed_connections" }
}

/// The answer to an offer and what it did to the participant's transport.
struct Answer: Encodable {
    var sdp: String
    var change: String
}

struct Pinned: Encodable { var pinned: [String] }

struct Hands: Encodable {
    var raised: [String]
    var approved: [String]
    enum CodingKeys: String, CodingKey { case raised = "raised_hands", approved = "approved_hands" }
}

struct Locked: Encodable { var locked: Bool }

/// GET /v1/rooms/:room
struct RoomState: Encodable {
    var snapshot: RoomSnapshot

    enum CodingKeys: String, CodingKey {
        case room, mode, maxActiveTalkers = "max_active_talkers", streamBandwidth = "stream_bandwidth", levelSource = "level_source"
        case hardMuted = "hard_muted", locked, pinned, dominantSpeaker = "dominant_speaker", activeTalkers = "active_talkers"
        case floor, participants
    }

    func encode(to encoder: any Encoder) throws {
        let s = snapshot
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(s.name, forKey: .room)
        try c.encode(s.configuration.mode.rawValue, forKey: .mode)
        try c.encode(s.configuration.maxActiveTalkers, forKey: .maxActiveTalkers)
        try c.encode(s.configuration.streamBandwidthKbps, forKey: .streamBandwidth)
        try c.encode(s.configuration.levelSource.rawValue, forKey: .levelSource)
        try c.encode(s.roomAudioMuted, forKey: .hardMuted)
        try c.encode(s.locked, forKey: .locked)
        try c.encode(s.pinned, forKey: .pinned)
        try c.encode(s.dominantSpeaker, forKey: .dominantSpeaker)  // null when nobody is
        try c.encode(s.activeTalkers, forKey: .activeTalkers)
        try c.encode(Hands(raised: s.raisedHands, approved: s.approvedHands), forKey: .floor)
        try c.encode(s.participants.map(Member.init), forKey: .participants)
    }

    struct Member: Encodable {
        var participant: String
        var name: String
        var role: String
        var connected: Bool
        var hardMuted: AudioVideo
        var publishes: AudioVideo
        var slots: Int

        init(_ p: RoomSnapshot.Participant) {
            participant = p.id
            name = p.name
            role = p.role.rawValue
            connected = p.connected
            hardMuted = AudioVideo(audio: p.hardMutedAudio, video: p.hardMutedVideo)
            publishes = AudioVideo(audio: p.publishesAudio, video: p.publishesVideo)
            slots = p.subscribedSlots
        }

        enum CodingKeys: String, CodingKey { case participant, name, role, connected, hardMuted = "hard_muted", publishes, slots }
    }

    struct AudioVideo: Encodable {
        var audio: Bool
        var video: Bool
    }
}

/// GET /v1/rooms/:room/stats
struct RoomStats: Encodable {
    var participants: [Participant]
    var packetsReceived: UInt64
    var packetsForwarded: UInt64
    var drops: [String: UInt64]

    init(_ stats: [ParticipantStats], _ counters: RoomCounters) {
        participants = stats.map(Participant.init)
        packetsReceived = counters.packetsIn
        packetsForwarded = counters.packetsOut
        drops = Dictionary(uniqueKeysWithValues: counters.drops.nonZero.map { ($0.0.description, UInt64($0.1)) })
    }

    enum CodingKeys: String, CodingKey {
        case participants, packetsReceived = "packets_received", packetsForwarded = "packets_forwarded", drops
    }

    struct Participant: Encodable {
        var stats: ParticipantStats

        enum CodingKeys: String, CodingKey {
            case participant, packetsReceived = "packets_received", bytesReceived = "bytes_received"
            case bandwidthEstimate = "bandwidth_estimate", numberOfVideos = "number_of_videos", drops, slots
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(stats.participant, forKey: .participant)
            try c.encode(stats.packetsReceived, forKey: .packetsReceived)
            try c.encode(stats.bytesReceived, forKey: .bytesReceived)
            try c.encode(stats.bandwidthEstimateBps, forKey: .bandwidthEstimate)  // null before any estimate
            try c.encode(stats.numberOfVideos, forKey: .numberOfVideos)
            try c.encode(Dictionary(uniqueKeysWithValues: stats.drops.map { ($0.key.description, $0.value) }), forKey: .drops)
            try c.encode(stats.slots.map(Slot.init), forKey: .slots)
        }
    }

    struct Slot: Encodable {
        var slot: ParticipantStats.SlotStats

        enum CodingKeys: String, CodingKey {
            case mid, kind, participant, packets, bytes, retransmissions, fractionLost = "fraction_lost", rtt = "rtt_ms"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(slot.mid, forKey: .mid)
            try c.encode(slot.kind.rawValue, forKey: .kind)
            try c.encode(slot.participant, forKey: .participant)  // null for an empty slot
            try c.encode(slot.packetsSent, forKey: .packets)
            try c.encode(slot.bytesSent, forKey: .bytes)
            try c.encode(slot.retransmissions, forKey: .retransmissions)
            try c.encode(Int(slot.fractionLost), forKey: .fractionLost)
            try c.encode(slot.rttMilliseconds, forKey: .rtt)
        }
    }
}

/// A refusal: `{"result": <code>, "msg": "..."}`.
struct Refusal: Encodable {
    var result: Int
    var msg: String
}

/// A success: the body's fields and `"result": 0` in one object.
struct Success<Body: Encodable>: Encodable {
    var body: Body

    enum CodingKeys: String, CodingKey { case result }

    func encode(to encoder: any Encoder) throws {
        try body.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(0, forKey: .result)
    }
}
