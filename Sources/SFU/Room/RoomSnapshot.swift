/// A room's state as the control API reports it (`GET /v1/rooms/{room}`).
public struct RoomSnapshot: Sendable, Equatable {
    public struct Participant: Sendable, Equatable {
        public var id: String
        public var name: String
        public var role: Role
        public var connected: Bool
        public var hardMutedAudio: Bool
        public var hardMutedVideo: Bool
        public var publishesAudio: Bool
        public var publishesVideo: Bool
        public var subscribedSlots: Int
        /// It publishes a screen share (a second video source).
        public var publishesScreen = false
        /// The node of the cluster it is connected to, when another (a participant relayed from there).
        public var origin: String? = nil
        /// Waiting for a moderator to let it into a knock-enabled room.
        public var awaited = false
    }

    public var name: String
    public var configuration: RoomConfiguration
    public var roomAudioMuted: Bool
    public var locked: Bool
    public var pinned: [String]
    public var dominantSpeaker: String?
    public var activeTalkers: [String]
    public var raisedHands: [String]
    public var approvedHands: [String]
    public var participants: [Participant]
    /// The recording under way (starting, recording or stopping); nil when the room is not recorded.
    public var recording: RoomRecording.Status? = nil
    /// The live stream under way; nil when the room is not streamed.
    public var streaming: RoomLiveStream.Status? = nil
    /// Who waits to be let into a knock-enabled room, in the order they knocked: (id, name).
    public var awaited: [(id: String, name: String)] { participants.filter(\.awaited).map { ($0.id, $0.name) } }
}

/// Per-participant counters (`GET /v1/rooms/{room}/stats`).
public struct ParticipantStats: Sendable, Equatable {
    public struct SlotStats: Sendable, Equatable {
        public var mid: String
        public var kind: MediaKind
        public var participant: String?
        public var packetsSent: UInt64
        public var bytesSent: UInt64
        public var retransmissions: UInt64
        public var fractionLost: UInt8
        public var rttMilliseconds: Int64?
        /// Video: camera or screen slot, the simulcast layer it carries and the highest temporal layer it
        /// passes when it drops some (as the slot map says).
        public var source: VideoSource? = nil
        public var layer: Int? = nil
        public var temporalLayer: Int? = nil
    }

    public var participant: String
    public var packetsReceived: UInt64
    public var bytesReceived: UInt64
    public var bandwidthEstimateBps: UInt64?
    public var numberOfVideos: Int?
    public var slots: [SlotStats]
    /// What the room dropped of this participant's input, by reason (`hard_muted`, `no_floor`, ...).
    public var drops: [DropReason: UInt64] = [:]
    /// How its publish and subscribe transports reach the node (nil before ICE nominated a pair, or without
    /// that transport), and the subscribe transport's round-trip time from its receiver reports (the mean
    /// over its slots that have one).
    public var publishPath: TransportPath? = nil
    public var subscribePath: TransportPath? = nil
    public var rttMilliseconds: Int64? = nil
}

extension Room {
    public func snapshot() -> RoomSnapshot { RoomSnapshot(self) }

    public func stats() -> [ParticipantStats] { participants.inOrder.map(ParticipantStats.init) }
}

extension RoomSnapshot {
    init(_ room: Room) {
        let ids = { (i: Int) in room.participants[i]?.id }
        self.init(
            name: room.name, configuration: room.configuration, roomAudioMuted: room.roomAudioMuted, locked: room.locked, pinned: room.pinnedIDs,
            // A room that follows its home's ranking (it spans nodes) shows the home's talkers, as its lists do.
            dominantSpeaker: room.home.followed.map(\.dominant) ?? room.election.dominant.flatMap(ids),
            activeTalkers: room.home.followed?.speaking ?? room.election.recency.filter { room.election.isSpeaking($0) }.compactMap(ids),
            raisedHands: room.raisedHands, approvedHands: room.approvedHands,
            participants: room.participants.inOrder.map { p in
                RoomSnapshot.Participant(
                    id: p.id, name: p.name, role: p.role,
                    connected: [p.publisher?.connection, p.subscriber?.connection].contains { $0?.inbound != nil },
                    hardMutedAudio: p.hardMutedAudio || (room.roomAudioMuted && p.role != .moderator), hardMutedVideo: p.hardMutedVideo,
                    publishesAudio: p.audioTrack != nil, publishesVideo: !p.tracks(.camera).isEmpty,
                    subscribedSlots: p.subscriber?.slots.count ?? 0, publishesScreen: !p.tracks(.screen).isEmpty, origin: p.origin, awaited: p.awaited)
            })
        recording = room.recording
        streaming = room.streaming
    }
}

extension ParticipantStats {
    init(_ p: Participant) {
        let published = p.publisher?.allTracks ?? []
        let s = p.subscriber
        self.init(
            participant: p.id, packetsReceived: published.reduce(0) { $0 + $1.reception.packets },
            bytesReceived: published.reduce(0) { $0 + $1.reception.bytes }, bandwidthEstimateBps: s?.estimator.estimate,
            numberOfVideos: s?.videoCount.numberOfVideos,
            slots: (s?.slots ?? []).map {
                SlotStats(mid: $0.description.mid, kind: $0.description.codec.kind, participant: $0.assignee?.id, packetsSent: $0.packetsSent,
                          bytesSent: $0.bytesSent, retransmissions: $0.retransmissions, fractionLost: $0.fractionLost,
                          rttMilliseconds: $0.rtt?.milliseconds, source: $0.description.codec.kind == .video ? $0.description.source : nil,
                          layer: $0.layerShown, temporalLayer: $0.layers.temporal.map(Int.init))
            },
            drops: [p.publisher?.connection, p.subscriber?.connection].compactMap { $0 }
                .reduce(into: Dictionary(uniqueKeysWithValues: p.retiredDrops.nonZero)) { acc, c in
                    for (r, n) in c.drops.nonZero { acc[r, default: 0] += n }
                })
        publishPath = p.publisher?.connection.path
        subscribePath = s?.connection.path
        let rtts = (s?.slots ?? []).compactMap { $0.rtt?.milliseconds }
        rttMilliseconds = rtts.isEmpty ? nil : rtts.reduce(0, +) / Int64(rtts.count)
    }
}
