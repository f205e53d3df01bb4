import Foundation
import SFU

/// What one message on `GET /v1/events` says: a room event, or one of the stream's own notices.
enum EventPayload: Encodable, Sendable {
    case room(RoomEvent)
    /// Events a consumer (or a worker's queue) lost: how many, and which `seq` when known.
    case eventsLost(count: Int, firstSeq: UInt64?, lastSeq: UInt64?, reason: String)
    /// A resume point the node could not honour (see `EventHub.Reset`): what the consumer gave, and the
    /// `seq` of the next event, the first it will get.
    case eventsReset(reason: String, since: UInt64, nextSeq: UInt64)
    /// A refused events request (the API's error shape, as a message before the close).
    case error(result: Int, msg: String)
    /// Cluster: `node` is gone from the room: it hosted `participants` of the message's room, whom the signaling
    /// server should have rejoin through a new placement. `home`: it was the room's home (the next placement gives
    /// the room a new one). A node that died (`heartbeat_timeout`) is reported by the one live node that found
    /// it; a node that stops on purpose (`node_stopped`) says it of itself, before its event stream ends.
    case nodeLost(node: String, participants: Int, home: Bool, reason: NodeLossReason)

    /// Why a `node_lost` was sent.
    enum NodeLossReason: String, Sendable {
        /// Its last heartbeat is older than `cluster.heartbeat_timeout_seconds`: it died, or lost the registry.
        case heartbeatTimeout = "heartbeat_timeout"
        /// It was told to stop (SIGTERM) and left the cluster: its rooms there end now.
        case nodeStopped = "node_stopped"
    }

    var type: String {
        switch self {
        case .eventsLost: return "events_lost"
        case .eventsReset: return "events_reset"
        case .error: return "error"
        case .nodeLost: return "node_lost"
        case .room(let e):
            switch e {
            case .activeTalkers: return "active_talkers"
            case .dominantSpeaker: return "dominant_speaker"
            case .bandwidthAlert: return "bandwidth_alert"
            case .participantState: return "participant_state"
            case .roomHardMute, .participantHardMute: return "hard_mute"
            case .pins: return "pins"
            case .floor: return "floor"
            case .lock: return "lock"
            case .role: return "role"
            case .knock: return "knock"
            case .recording: return "recording"
            case .streaming: return "streaming"
            case .levelMismatch: return "level_mismatch"
            case .roomDestroyed: return "room_destroyed"
            case .relaysChanged: return "relays_changed"  // never published (Node.pumpEvents)
            }
        }
    }

    /// Field names follow the seeds' payloads (`number_of_videos`, `stream_bandwidth`, `raised_hands`, ...);
    /// documented in docs/openapi.yaml. Optional fields the document declares nullable are written as null.
    enum Key: String, CodingKey {
        case participant, talkers, slots, bandwidth, streamBandwidth = "stream_bandwidth", numberOfVideos = "number_of_videos"
        case state, reason, scope, audio, video, by, pinned, action, target, raisedHands = "raised_hands"
        case approvedHands = "approved_hands", locked, role, meanDifferenceDb = "mean_difference_db"
        case count, firstSeq = "first_seq", lastSeq = "last_seq", result, msg, since, nextSeq = "next_seq"
        case node, participants, home, name, recording, stream, transport
    }

    /// A transport's path (`TransportPath`): `{"protocol": "udp"|"tcp", "family": "ipv4"|"ipv6", "relayed": bool}`.
    struct PathJSON: Encodable {
        var path: TransportPath
        init(_ path: TransportPath) { self.path = path }
        enum CodingKeys: String, CodingKey { case proto = "protocol", family, relayed }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(path.carrier.rawValue, forKey: .proto)
            try c.encode(path.family.rawValue, forKey: .family)
            try c.encode(path.relayed, forKey: .relayed)
        }
    }

    /// Something a moderator turns on or off (a recording, a live stream): `state`, its id, who, why, and the
    /// seeds' message ("... On" / "... Off").
    static func encodeSwitch(_ c: inout KeyedEncodingContainer<Key>, on: Bool, id: String, idKey: Key, by: String?,
                             reason: String?, msg: String) throws {
        try c.encode(on ? "on" : "off", forKey: .state)
        try c.encode(id, forKey: idKey)
        try c.encode(by, forKey: .by)
        try c.encode(reason, forKey: .reason)
        try c.encode(msg + (on ? " On" : " Off"), forKey: .msg)
    }

    struct Talker: Encodable {
        var participant: String
        var pinned: Bool
        var speaking: Bool
        var video: Bool
    }

    struct Slot: Encodable {
        var slot: RoomEvent.SlotAssignment
        enum CodingKeys: String, CodingKey {
            case mid, kind, participant, layer, temporalLayer = "temporal_layer", source
            case codec, decodable
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(slot.mid, forKey: .mid)
            try c.encode(slot.kind.rawValue, forKey: .kind)
            try c.encode(slot.participant, forKey: .participant)  // null for an empty slot
            try c.encodeIfPresent(slot.layer, forKey: .layer)  // only for a simulcast publisher's layer
            try c.encodeIfPresent(slot.temporalLayer, forKey: .temporalLayer)  // only when some are dropped
            try c.encodeIfPresent(slot.source?.rawValue, forKey: .source)  // video slots: camera or screen
            // Only for a video slot with a source: its codec, and false when this subscriber cannot decode it.
            try c.encodeIfPresent(slot.codec?.codec.rawValue, forKey: .codec)
            try c.encodeIfPresent(slot.codec?.decodable, forKey: .decodable)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .eventsLost(let count, let first, let last, let reason):
            try c.encode(count, forKey: .count)
            try c.encodeIfPresent(first, forKey: .firstSeq)
            try c.encodeIfPresent(last, forKey: .lastSeq)
            try c.encode(reason, forKey: .reason)
        case .eventsReset(let reason, let since, let nextSeq):
            try c.encode(reason, forKey: .reason)
            try c.encode(since, forKey: .since)
            try c.encode(nextSeq, forKey: .nextSeq)
        case .error(let result, let msg):
            try c.encode(result, forKey: .result)
            try c.encode(msg, forKey: .msg)
        case .nodeLost(let node, let participants, let home, let reason):
            try c.encode(node, forKey: .node)
            try c.encode(participants, forKey: .participants)
            try c.encode(home, forKey: .home)
            try c.encode(reason.rawValue, forKey: .reason)
        case .room(let event):
            switch event {
            case .activeTalkers(let subscriber, let talkers, let slots):
                try c.encode(subscriber, forKey: .participant)
                try c.encode(talkers.map { Talker(participant: $0.participant, pinned: $0.pinned, speaking: $0.speaking, video: $0.video) },
                             forKey: .talkers)
                try c.encode(slots.map(Slot.init), forKey: .slots)
            case .dominantSpeaker(let participant):
                try c.encode(participant, forKey: .participant)  // null when nobody is
            case .bandwidthAlert(let participant, let bandwidth, let stream, let videos):
                try c.encode(participant, forKey: .participant)
                try c.encode(bandwidth, forKey: .bandwidth)
                try c.encode(stream, forKey: .streamBandwidth)
                try c.encode(videos, forKey: .numberOfVideos)
            case .participantState(let participant, let state, let reason, let path):
                try c.encode(participant, forKey: .participant)
                try c.encode(state.rawValue, forKey: .state)
                try c.encode(reason, forKey: .reason)
                if let path { try c.encode(PathJSON(path), forKey: .transport) }
            case .roomHardMute(let audio, let by):
                try c.encode("room", forKey: .scope)
                try c.encode(audio, forKey: .audio)
                try c.encode(by, forKey: .by)
            case .participantHardMute(let participant, let audio, let video, let by):
                try c.encode("participant", forKey: .scope)
                try c.encode(participant, forKey: .participant)
                try c.encode(audio, forKey: .audio)
                try c.encode(video, forKey: .video)
                try c.encode(by, forKey: .by)
            case .pins(let pinned):
                try c.encode(pinned, forKey: .pinned)
            case .floor(let action, let by, let target, let raised, let approved):
                try c.encode(action.rawValue, forKey: .action)
                try c.encode(by, forKey: .by)
                try c.encode(target, forKey: .target)
                try c.encode(raised, forKey: .raisedHands)
                try c.encode(approved, forKey: .approvedHands)
            case .lock(let locked, let by):
                try c.encode(locked, forKey: .locked)
                try c.encode(by, forKey: .by)
            case .role(let participant, let role, let by):
                try c.encode(participant, forKey: .participant)
                try c.encode(role.rawValue, forKey: .role)
                try c.encode(by, forKey: .by)
            case .knock(let action, let participant, let name, let by):
                try c.encode(action.rawValue, forKey: .action)
                try c.encode(participant, forKey: .participant)
                try c.encode(name, forKey: .name)
                try c.encode(by, forKey: .by)  // null when the participant knocked
            case .recording(let on, let id, let by, let reason):
                // The seeds' roomRecordOn / roomRecordOff message, and who or what turned it on or off.
                try Self.encodeSwitch(&c, on: on, id: id, idKey: .recording, by: by, reason: reason, msg: "Room Recording")
            case .streaming(let state, let id, let by, let reason):
                // The seeds' didAckStartStreaming / didAckStopStreaming and didStreamingNotification.
                try c.encode(state.rawValue, forKey: .state)
                try c.encode(id, forKey: .stream)
                try c.encode(by, forKey: .by)
                try c.encode(reason, forKey: .reason)
                try c.encode("Streaming " + state.rawValue.prefix(1).uppercased() + state.rawValue.dropFirst(), forKey: .msg)
            case .levelMismatch(let participant, let difference):
                try c.encode(participant, forKey: .participant)
                try c.encode((difference * 10).rounded() / 10, forKey: .meanDifferenceDb)
            case .roomDestroyed, .relaysChanged:
                break
            }
        }
    }
}

/// The wire form of one message on `GET /v1/events`: the payload's fields beside `type`, `room` (null for the
/// stream's own notices), `seq` (events only), `stream` (the hub's, on everything it sends; not on a refused
/// query's `error`) and `time` (Unix milliseconds).
enum EventJSON {
    private struct Message: Encodable {
        var payload: EventPayload
        var room: String?
        var seq: UInt64?
        var stream: String?
        var time: Int64
        enum CodingKeys: String, CodingKey { case type, room, seq, stream, time }
        func encode(to encoder: any Encoder) throws {
            try payload.encode(to: encoder)
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(payload.type, forKey: .type)
            try c.encode(room, forKey: .room)
            try c.encodeIfPresent(seq, forKey: .seq)
            try c.encodeIfPresent(stream, forKey: .stream)
            try c.encode(time, forKey: .time)
        }
    }

    static func encode(_ payload: EventPayload, room: String?, seq: UInt64?, stream: String?, time: Int64) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(Message(payload: payload, room: room, seq: seq, stream: stream, time: time))) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
