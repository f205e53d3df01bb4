/// What a recording holds, written beside its files as `manifest.json` (when it starts, as streams come and go,
/// and when it ends): who, which files, and where each starts on the recording's one clock, so that `sfu compose`
/// (or any post-session service) lines them up.
public struct RecordingManifest: Codable, Sendable, Equatable {
    public struct Stream: Codable, Sendable, Equatable {
        public var participant: String
        public var name: String
        /// audio, camera or screen.
        public var kind: String
        public var codec: String
        /// A simulcast camera's recorded layer (0 = the lowest the publisher offered).
        public var layer: Int?
        public var file: String
        /// Where the file's time 0 is, in milliseconds since the recording started (nil: nothing written yet).
        public var startOffsetMs: Int64?
        public var durationMs: Int64
        public var frames: Int
        /// Audio: 20 ms frames written as concealment where packets were missing (loss, mute, silence).
        public var concealedFrames: Int
        /// Video: frames given up (incomplete) and not written, until the next key frame.
        public var framesLost: Int
        /// Packets not written: malformed, late or repeated, or of a layer not recorded (VP9's upper layers).
        public var packetsIgnored: Int
        public var bytes: Int64
        /// Why the file ended early (a full disk, a cap), if it did.
        public var error: String?
        public var closed: Bool

        enum CodingKeys: String, CodingKey {
            case participant, name, kind, codec, layer, file, frames, bytes, error, closed
            case startOffsetMs = "start_offset_ms", durationMs = "duration_ms", concealedFrames = "concealed_frames"
            case framesLost = "frames_lost", packetsIgnored = "packets_ignored"
        }
    }

    public var room: String
    public var recording: String
    /// Wall-clock time the recording started and stopped (ISO 8601, UTC).
    public var startedAt: String
    public var stoppedAt: String?
    /// Why it stopped: a moderator, the room's end, the node's stop, a full disk or a cap.
    public var stopReason: String?
    public var streams: [Stream]

    enum CodingKeys: String, CodingKey {
        case room, recording, streams
        case startedAt = "started_at", stoppedAt = "stopped_at", stopReason = "stop_reason"
    }
}
