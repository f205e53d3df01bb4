import Foundation
import Logging
import NodeIO
import SFU

/// What the node logs about room events: lifecycle changes (joins, connections, leaves, failures, room
/// destruction, moderation) at info, the high-rate ones (talker lists, dominant speaker) at debug.
enum EventLog {
    static func log(_ e: StampedEvent, to logger: Logger) {
        var metadata: Logger.Metadata = ["room": "\(e.room)"]
        let (type, fields) = EventJSON.fields(e.event)
        metadata["event"] = "\(type)"
        for (k, v) in fields where k != "talkers" && k != "slots" && !(v is NSNull) { metadata[k] = "\(v)" }
        switch e.event {
        case .activeTalkers, .dominantSpeaker:
            logger.debug("room event", metadata: metadata)
        case .participantState(_, let state, _) where state == .failed:
            logger.warning("room event", metadata: metadata)
        case .levelMismatch:
            logger.notice("room event", metadata: metadata)
        default:
            logger.info("room event", metadata: metadata)
        }
    }
}
