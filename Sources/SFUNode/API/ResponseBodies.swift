import Foundation
import SFU

/// The bodies of the API's answers, in the shape docs/openapi.yaml documents (a test checks every route against
/// it, and schemathesis every answer). Fields the document declares nullable are written as `null`, never left
/// out. Each is written one way, by `writeFields` (`JSONFields`). The room's state and stats answers are in
/// RoomAnswers.swift.

/// A success without fields: `{"result": 0}`.
struct Done: JSONFields {
    func writeFields(_ w: inout JSONWriter) {}
}

struct Health: JSONFields {
    var status = "ok"
    var rooms: Int
    /// serving, draining, or registry_unreachable (a cluster node fenced off: it places nobody).
    var state = "serving"
    /// The node's id in the cluster; null for a node on its own.
    var node: String?
    func writeFields(_ w: inout JSONWriter) {
        w.field("node", node)
        w.field("rooms", rooms)
        w.field("state", state)
        w.field("status", status)
    }
}

/// POST /v1/placements: the node a participant of the room should use, and why.
/// GET /v1/nodes: the nodes of the cluster as the registry has them (a node on its own: itself).
struct NodeList: JSONFields {
    struct Entry: JSONFields {
        var node: String
        var controlURL: String
        var state: String
        var alive: Bool
        func writeFields(_ w: inout JSONWriter) {
            w.field("alive", alive)
            w.field("control_url", controlURL)
            w.field("node", node)
            w.field("state", state)
        }
    }
    var nodes: [Entry]
    func writeFields(_ w: inout JSONWriter) {
        w.key("nodes")
        w.array(nodes) { w, n in w.object { n.writeFields(&$0) } }
    }
}

struct PlacementAnswer: JSONFields {
    var room: String
    var node: String
    var controlURL: String
    var reason: String
    var home: String
    var epoch: Int64
    func writeFields(_ w: inout JSONWriter) {
        w.field("control_url", controlURL)
        w.field("epoch", epoch)
        w.field("home", home)
        w.field("node", node)
        w.field("reason", reason)
        w.field("room", room)
    }
}

struct RoomName: JSONFields {
    var room: String
    func writeFields(_ w: inout JSONWriter) { w.field("room", room) }
}

struct RoomNames: JSONFields {
    var rooms: [String]
    func writeFields(_ w: inout JSONWriter) { w.field("rooms", rooms) }
    var estimatedJSONSize: Int { 32 + rooms.count * 24 }
}

struct ParticipantName: JSONFields {
    var participant: String
    func writeFields(_ w: inout JSONWriter) { w.field("participant", participant) }
}

struct ClosedConnections: JSONFields {
    var closed: Int
    func writeFields(_ w: inout JSONWriter) { w.field("closed_connections", closed) }
}

/// The answer to an offer and what it did to the participant's transport.
struct Answer: JSONFields {
    var sdp: String
    var change: String
    func writeFields(_ w: inout JSONWriter) {
        w.field("change", change)
        w.field("sdp", sdp)
    }
    var estimatedJSONSize: Int { 64 + sdp.utf8.count * 11 / 10 }  // an escaped CRLF takes 4 bytes for 2
}

struct Pinned: JSONFields {
    var pinned: [String]
    func writeFields(_ w: inout JSONWriter) { w.field("pinned", pinned) }
}

struct Hands: JSONFields {
    var raised: [String]
    var approved: [String]
    func writeFields(_ w: inout JSONWriter) {
        w.field("approved_hands", approved)
        w.field("raised_hands", raised)
    }
}

struct Approved: JSONFields {
    var approved: [String]
    func writeFields(_ w: inout JSONWriter) { w.field("approved", approved) }
}

struct Denied: JSONFields {
    var denied: [String]
    var closed: Int
    func writeFields(_ w: inout JSONWriter) {
        w.field("closed_connections", closed)
        w.field("denied", denied)
    }
}

struct Locked: JSONFields {
    var locked: Bool
    func writeFields(_ w: inout JSONWriter) { w.field("locked", locked) }
}

/// A refusal: `{"result": <code>, "msg": "..."}`.
struct Refusal: JSONFields {
    var result: Int
    var msg: String
    func writeFields(_ w: inout JSONWriter) {
        w.field("msg", msg)
        w.field("result", result)
    }
}

/// A success: the body's fields and `"result": 0` in one object.
struct Success<Body: JSONFields>: JSONFields {
    var body: Body

    func writeFields(_ w: inout JSONWriter) {
        w.mergeField("result", 0)
        body.writeFields(&w)
    }
    var estimatedJSONSize: Int { body.estimatedJSONSize + 16 }
}

/// POST /v1/rooms/:room/recording/start (and a room created with auto_recording): the recording's id and the
/// directory its files and manifest go to.
struct RecordingStarted: JSONFields {
    var recording: String
    var directory: String
    func writeFields(_ w: inout JSONWriter) {
        w.field("directory", directory)
        w.field("recording", recording)
    }
}

/// POST /v1/rooms/:room/recording/stop: the recording's files, as its manifest lists them.
struct RecordingStopped: JSONFields {
    var recording: String
    var files: [String]
    func writeFields(_ w: inout JSONWriter) {
        w.field("files", files)
        w.field("recording", recording)
    }
}

/// POST /v1/rooms/:room/streaming/start and .../stop: the live stream's id.
struct StreamingAnswer: JSONFields {
    var stream: String
    func writeFields(_ w: inout JSONWriter) { w.field("stream", stream) }
}
