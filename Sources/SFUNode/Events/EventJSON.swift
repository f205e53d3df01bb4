import Foundation
import SFU

/// The wire form of room events on `GET /v1/events`: one JSON object per event, with `type`, `room`, `seq`
/// and `time` (Unix milliseconds) beside the event's own fields. Field names follow the seeds' payloads
/// (`number_of_videos`, `stream_bandwidth`, `raised_hands`, ...). Documented in `docs/openapi.yaml`.
enum EventJSON {
    /// The event's `type` and its own fields.
    static func fields(_ event: RoomEvent) -> (type: String, fields: [String: Any]) {
        switch event {
        case .activeTalkers(let subscriber, let talkers, let slots):
            return ("active_talkers", [
                "participant": subscriber,
                "talkers": talkers.map {
                    ["participant": $0.participant, "pinned": $0.pinned, "speaking": $0.speaking, "video": $0.video] as [String: Any]
                },
                "slots": slots.map { ["mid": $0.mid, "kind": $0.kind.rawValue, "participant": $0.participant ?? NSNull()] as [String: Any] },
            ])
        case .dominantSpeaker(let participant):
            return ("dominant_speaker", ["participant": participant ?? NSNull()])
        case .bandwidthAlert(let participant, let bandwidth, let stream, let videos):
            return ("bandwidth_alert", [
                "participant": participant, "bandwidth": bandwidth, "stream_bandwidth": stream, "number_of_videos": videos,
            ])
        case .participantState(let participant, let state, let reason):
            return ("participant_state", ["participant": participant, "state": state.rawValue, "reason": reason ?? NSNull()])
        case .roomHardMute(let audio, let by):
            return ("hard_mute", ["scope": "room", "audio": audio, "by": by])
        case .participantHardMute(let participant, let audio, let video, let by):
            return ("hard_mute", ["scope": "participant", "participant": participant, "audio": audio, "video": video, "by": by])
        case .pins(let pinned):
            return ("pins", ["pinned": pinned])
        case .floor(let action, let by, let target, let raised, let approved):
            return ("floor", [
                "action": action.rawValue, "by": by, "target": target ?? NSNull(), "raised_hands": raised, "approved_hands": approved,
            ])
        case .lock(let locked, let by):
            return ("lock", ["locked": locked, "by": by])
        case .role(let participant, let role, let by):
            return ("role", ["participant": participant, "role": role.rawValue, "by": by])
        case .levelMismatch(let participant, let difference):
            return ("level_mismatch", ["participant": participant, "mean_difference_db": (difference * 10).rounded() / 10])
        case .roomDestroyed:
            return ("room_destroyed", [:])
        }
    }

    /// One complete event object as text.
    static func encode(type: String, room: String?, seq: UInt64?, time: Int64, fields: [String: Any]) -> String {
        var object = fields
        object["type"] = type
        object["room"] = room ?? NSNull()
        if let seq { object["seq"] = seq }
        object["time"] = time
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
