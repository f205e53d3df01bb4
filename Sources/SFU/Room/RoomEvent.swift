/// What the engine reports to the control plane, as values the node serialises (issue: events API).
public enum RoomEvent: Equatable, Sendable {
    /// A subscriber's ordered active talker list and its slot map changed. Emitted when the assignment is
    /// decided, before any packet of the new mapping is forwarded.
    case activeTalkers(subscriber: String, talkers: [Talker], slots: [SlotAssignment])
    case dominantSpeaker(participant: String?)
    /// ABWD (EnableX `onRoomBandwidthAlert`): sent only when `numberOfVideos` changes.
    case bandwidthAlert(participant: String, bandwidthKbps: Int, streamBandwidthKbps: Int, numberOfVideos: Int)
    /// `path`: how the transport reaches the node, on `connected` (nil otherwise).
    case participantState(participant: String, state: ParticipantState, reason: String?, path: TransportPath? = nil)
    case roomHardMute(audio: Bool, by: String)
    case participantHardMute(participant: String, audio: Bool, video: Bool, by: String)
    case pins([String])
    case floor(action: FloorAction, by: String, target: String?, raisedHands: [String], approvedHands: [String])
    case lock(locked: Bool, by: String)
    /// A knock-enabled room's entry: `by` is the moderator who approved or denied (nil: the participant knocked).
    case knock(action: KnockAction, participant: String, name: String, by: String?)
    case role(participant: String, role: Role, by: String)
    /// Recording on or off (EnableX's startRecordingEvent / roomRecordOn and stopRecordingEvent / roomRecordOff):
    /// `by` the moderator (nil: the room's auto_recording started it, or it stopped by itself - `reason` says
    /// why: the room ended, a full disk, a cap).
    case recording(on: Bool, id: String, by: String?, reason: String?)
    /// A live stream's state (EnableX didAckStartStreaming / didAckStopStreaming and didStreamingNotification):
    /// `starting` once its encoder runs and again when the encoder restarts (`reason`: the exit), `on` once the
    /// encoder's output is open at the RTMP server, `off` when it stops, `failed` when it stops without a
    /// moderator asking (`reason`: the encoder gave up, a refused connection). `by` the moderator.
    case streaming(state: StreamingState, id: String, by: String?, reason: String?)
    /// Verify mode: what the client claims in the level extension disagrees with what the server decodes.
    case levelMismatch(participant: String, meanDifferenceDb: Double)
    /// The room is gone; every participant was disconnected (each also gets `participantState(.left)`).
    case roomDestroyed
    /// Not for the event stream: the room's lists were rebuilt while it relays to other nodes, so what it
    /// relays, its ranking or its moderation may have changed - the node's relays look now rather than at
    /// their next pass (a talker's stream described to the peer before its first packets arrive there).
    case relaysChanged

    public enum StreamingState: String, Sendable, Equatable {
        case starting, on, off, failed
    }

    public struct Talker: Equatable, Sendable {
        public var participant: String
        public var pinned: Bool
        public var speaking: Bool
        public var video: Bool

        public init(participant: String, pinned: Bool, speaking: Bool, video: Bool) {
            self.participant = participant
            self.pinned = pinned
            self.speaking = speaking
            self.video = video
        }
    }

    public struct SlotAssignment: Equatable, Sendable {
        public var mid: String
        public var kind: MediaKind
        public var participant: String?
        /// For a video slot showing a simulcast publisher: the layer it carries or is switching to (0 = the
        /// first in the publisher's offer, its lowest). Nil otherwise.
        public var layer: Int?
        /// When the slot passes only some of its source's VP8 temporal layers: the highest it passes (0 = the
        /// base frame rate). Nil: all of them.
        public var temporalLayer: Int?
        /// For a video slot with a source: its codec, and whether this subscriber can decode it.
        public var codec: SlotCodec?
        /// For a video slot: whether it shows talkers' cameras or screen shares (the subscriber's choice of
        /// slot kind). Nil for audio.
        public var source: VideoSource?

        public init(mid: String, kind: MediaKind, participant: String?, layer: Int? = nil, temporalLayer: Int? = nil,
                    codec: SlotCodec? = nil, source: VideoSource? = nil) {
            self.mid = mid
            self.kind = kind
            self.participant = participant
            self.layer = layer
            self.temporalLayer = temporalLayer
            self.source = source
            self.codec = codec
        }
    }

    /// A video slot's source codec as the subscriber sees it: `decodable` is false when none of the slot's
    /// negotiated formats takes it (another codec, or an H.264 profile or level it did not offer), and then
    /// nothing is sent on the slot.
    public struct SlotCodec: Equatable, Sendable {
        public var codec: Codec
        public var decodable: Bool

        public init(codec: Codec, decodable: Bool) {
            self.codec = codec
            self.decodable = decodable
        }
    }
}

public enum ParticipantState: String, Sendable {
    /// `awaited`: admitted to a knock-enabled room, waiting for a moderator (`joined` follows the approval).
    case joined, connected, disconnected, left, failed, awaited
}

/// A knock-enabled room's entry (EnableX "Moderate Participants' entry"): someone waits, a moderator let them in,
/// or a moderator turned them away.
public enum KnockAction: String, Sendable {
    case awaited, approved, denied
}

public enum Role: String, Sendable, Codable, CaseIterable {
    case moderator, participant
}

public enum FloorAction: String, Sendable, CaseIterable, Codable {
    case request, cancel, grant, deny, finish, release, invite, accept, reject
    case cancelInvite = "cancel_invite"
}
