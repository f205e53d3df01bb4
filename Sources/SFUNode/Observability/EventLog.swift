import Foundation
import Logging
import NodeIO
import SFU

/// What the node logs about room events: lifecycle changes (joins, connections, leaves, failures, room
/// destruction, moderation) at info, the high-rate ones (talker lists, dominant speaker) at debug. The
/// metadata are the event's own scalar fields, as the event stream writes them (one definition: EventPayload).
enum EventLog {
    static func log(_ e: StampedEvent, to logger: Logger) {
        let level: Logger.Level = switch e.event {
        case .activeTalkers, .dominantSpeaker: .debug
        case .participantState(_, let state, _, _) where state == .failed: .warning
        case .levelMismatch: .notice
        default: .info
        }
        guard logger.logLevel <= level else { return }  // talker lists are frequent: no encoding unless logged
        var metadata: Logger.Metadata = ["room": "\(e.room)"]
        let payload = EventPayload.room(e.event)
        metadata["event"] = "\(payload.type)"
        for (k, v) in scalarFields(payload) { metadata[k] = "\(v)" }
        logger.log(level: level, "room event", metadata: metadata)
    }

    /// The payload's fields that are neither lists, objects nor null.
    static func scalarFields(_ payload: EventPayload) -> [(String, String)] {
        guard let data = try? JSONEncoder().encode(payload),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [] }
        return object.compactMap { k, v in
            if v is [Any] || v is [String: Any] || v is NSNull { return nil }
            if let n = v as? NSNumber, String(cString: n.objCType) == "c" { return (k, n.boolValue ? "true" : "false") }
            return (k, "\(v)")
        }
    }
}
