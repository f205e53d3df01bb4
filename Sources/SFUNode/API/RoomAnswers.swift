import Foundation
import SFU

/// The two big answers, which grow with the room and which a signaling server may poll: the room's state and
/// its stats (about 60 KB for a room of 64), written by `writeFields` (see `JSONFields`).

/// GET /v1/rooms/:room
struct RoomState: JSONFields {
    var snapshot: RoomSnapshot

    func writeFields(_ w: inout JSONWriter) {
        let s = snapshot
        w.field("active_talkers", s.activeTalkers)
        w.key("awaited_participants")
        w.array(s.awaited) { w, a in w.object { Awaited(participant: a.id, name: a.name).writeFields(&$0) } }
        w.field("dominant_speaker", s.dominantSpeaker)
        w.field("floor", Hands(raised: s.raisedHands, approved: s.approvedHands))
        w.field("hard_muted", s.roomAudioMuted)
        w.field("knock", s.configuration.knock)
        w.field("level_source", s.configuration.levelSource.rawValue)
        w.field("locked", s.locked)
        w.field("max_active_talkers", s.configuration.maxActiveTalkers)
        w.field("mode", s.configuration.mode.rawValue)
        w.key("participants")
        w.array(s.participants) { w, p in w.object { Member(p).writeFields(&$0) } }
        w.field("pinned", s.pinned)
        w.key("recording")
        if let r = s.recording { w.object { Recording(r).writeFields(&$0) } } else { w.null() }
        w.field("room", s.name)
        w.field("screen_share", s.configuration.screenShare.rawValue)
        w.field("stream_bandwidth", s.configuration.streamBandwidthKbps)
        w.key("streaming")
        if let l = s.streaming { w.object { Recording(l).writeFields(&$0) } } else { w.null() }
        w.field("video_degradation", s.configuration.videoDegradation.rawValue)
    }

    var estimatedJSONSize: Int { 512 + snapshot.participants.count * 192 }

    /// The recording under way: its id, its phase (starting, recording, stopping) and who started it (null:
    /// auto_recording).
    struct Recording: JSONFields {
        var id: String
        var state: String
        var startedBy: String?
        /// A live stream's only: its encoder's output is open (the stream is live at the RTMP server).
        var live: Bool?
        init(_ r: RoomRecording.Status) {
            id = r.id
            state = r.phase.rawValue
            startedBy = r.startedBy
        }
        /// A live stream's state has the same shape (`state`: starting, streaming, stopping), and `live`.
        init(_ l: RoomLiveStream.Status) {
            id = l.id
            state = l.phase.rawValue
            startedBy = l.startedBy
            live = l.live
        }
        func writeFields(_ w: inout JSONWriter) {
            w.field("id", id)
            if let live { w.field("live", live) }
            w.field("started_by", startedBy)
            w.field("state", state)
        }
    }

    /// One who waits to be let into a knock-enabled room (EnableX `awaitedParticipants`: `clientId`, `name`).
    struct Awaited: JSONFields {
        var participant: String
        var name: String
        func writeFields(_ w: inout JSONWriter) {
            w.field("name", name)
            w.field("participant", participant)
        }
    }

    struct Member: JSONFields {
        var participant: String
        var name: String
        var role: String
        var connected: Bool
        var hardMuted: AudioVideo
        var publishes: Publishes
        var slots: Int
        var origin: String?
        var awaited: Bool

        init(_ p: RoomSnapshot.Participant) {
            participant = p.id
            name = p.name
            role = p.role.rawValue
            connected = p.connected
            hardMuted = AudioVideo(audio: p.hardMutedAudio, video: p.hardMutedVideo)
            publishes = Publishes(audio: p.publishesAudio, video: p.publishesVideo, screen: p.publishesScreen)
            slots = p.subscribedSlots
            origin = p.origin
            awaited = p.awaited
        }

        /// `origin` is null when absent, as `writeFields` writes it.

        func writeFields(_ w: inout JSONWriter) {
            w.field("awaited", awaited)
            w.field("connected", connected)
            w.field("hard_muted", hardMuted)
            w.field("name", name)
            w.field("origin", origin)
            w.field("participant", participant)
            w.field("publishes", publishes)
            w.field("role", role)
            w.field("slots", slots)
        }
    }

    struct AudioVideo: JSONFields {
        var audio: Bool
        var video: Bool

        func writeFields(_ w: inout JSONWriter) {
            w.field("audio", audio)
            w.field("video", video)
        }
    }

    /// What a participant publishes: `video` is its camera, `screen` its screen share.
    struct Publishes: JSONFields {
        var audio: Bool
        var video: Bool
        var screen: Bool

        func writeFields(_ w: inout JSONWriter) {
            w.field("audio", audio)
            w.field("screen", screen)
            w.field("video", video)
        }
    }
}

/// GET /v1/rooms/:room/stats
struct RoomStats: JSONFields {
    var participants: [ParticipantStats]
    var counters: RoomCounters

    init(_ stats: [ParticipantStats], _ counters: RoomCounters) {
        participants = stats
        self.counters = counters
    }

    func writeFields(_ w: inout JSONWriter) {
        let drops = counters.drops
        w.key("drops")
        w.drops { drops[$0] > 0 ? drops[$0] : nil }
        w.field("packets_forwarded", counters.packetsOut)
        w.field("packets_received", counters.packetsIn)
        w.key("participants")
        w.array(participants) { w, p in w.object { Participant(stats: p).writeFields(&$0) } }
    }

    var estimatedJSONSize: Int { participants.reduce(256) { $0 + 256 + $1.slots.count * 160 } }

    struct Participant: JSONFields {
        var stats: ParticipantStats

        func writeFields(_ w: inout JSONWriter) {
            w.field("bandwidth_estimate", stats.bandwidthEstimateBps)
            w.field("bytes_received", stats.bytesReceived)
            let drops = stats.drops
            w.key("drops")
            w.drops { drops.isEmpty ? nil : drops[$0] }
            w.field("number_of_videos", stats.numberOfVideos)
            w.field("packets_received", stats.packetsReceived)
            w.field("participant", stats.participant)
            Self.path(&w, "publish_transport", stats.publishPath)
            w.field("rtt_ms", stats.rttMilliseconds)
            w.key("slots")
            w.array(stats.slots) { w, s in w.object { Slot(slot: s).writeFields(&$0) } }
            Self.path(&w, "subscribe_transport", stats.subscribePath)
        }

        /// `{"family", "protocol", "relayed"}` or null, as `PathJSON` encodes it (keys sorted).
        static func path(_ w: inout JSONWriter, _ key: StaticString, _ path: TransportPath?) {
            w.key(key)
            guard let path else { return w.null() }
            w.object {
                $0.field("family", path.family.rawValue)
                $0.field("protocol", path.carrier.rawValue)
                $0.field("relayed", path.relayed)
            }
        }
    }

    struct Slot: JSONFields {
        var slot: ParticipantStats.SlotStats

        func writeFields(_ w: inout JSONWriter) {
            w.field("bytes", slot.bytesSent)
            w.field("fraction_lost", slot.fractionLost)
            w.field("kind", slot.kind.rawValue)
            w.field("layer", slot.layer)
            w.field("mid", slot.mid)
            w.field("packets", slot.packetsSent)
            w.field("participant", slot.participant)
            w.field("retransmissions", slot.retransmissions)
            w.field("rtt_ms", slot.rttMilliseconds)
            w.field("source", slot.source?.rawValue)
            w.field("temporal_layer", slot.temporalLayer)
        }
    }
}

extension DropReason {
    /// Every reason in the UTF-8 byte order of its name: the order `.sortedKeys` gives the `drops` keys.
    static let inKeyOrder = allCases.sorted { $0.description.utf8.lexicographicallyPrecedes($1.description.utf8) }
}

extension JSONWriter {
    /// A `drops` object: `reason: count` for each reason `count` gives a number for, keys in sorted order.
    mutating func drops(_ count: (DropReason) -> UInt64?) {
        object { w in
            for reason in DropReason.inKeyOrder {
                guard let n = count(reason) else { continue }
                w.key(string: reason.description)
                w.integer(n)
            }
        }
    }
}
