/// Live streaming over RTMP (EnableX "Start / Stop Live Streaming", `shared/seeds/000_*`): the room's active
/// talkers go out as plain RTP to an encoder the node runs (FFmpeg), which composes the view and pushes it to
/// the RTMP URL. The room's side is a subscriber that is nobody: its slots - one video slot that shows the first
/// talker, and audio slots for the top talkers - are planned like a browser's from the room's ranking (so hard
/// mute, the floor and pins hold), each slot one continuous stream across talker switches, which is what an
/// encoder reading a fixed SDP needs. Its connection writes into an egress of the shell's, unprotected: the
/// shell sends each slot's packets to the encoder's port for it (`WorkerCore+LiveStreams`).
///
/// Start and stop take two steps, as recording does: the request moves the room to `starting` or `stopping`
/// (a second request meanwhile is refused with the seeds' 5121 or 5123), and the node completes it.
extension Room {
    public enum StreamingPhase: String, Sendable, Equatable { case starting, streaming, stopping }

    public struct StreamingStatus: Sendable, Equatable {
        public var id: String
        public var phase: StreamingPhase
        public var startedBy: String
        public var stoppedBy: String?
        public var since: MonoTime
    }

    /// The live stream under way, if any.
    public var streaming: StreamingStatus? { liveStream?.status }

    /// Payload types and SSRCs of the live stream's slots (what the encoder's SDP names).
    public static let liveVideoPayloadType: UInt8 = 96
    public static let liveAudioPayloadType: UInt8 = 111

    /// A moderator asks to start streaming (5003 for a participant); 5121 while a start is being processed,
    /// 5122 while streaming, 5123 while a stop is being processed.
    public func requestStreamingStart(id: String, by: String, now: MonoTime) throws(RoomError) {
        try requireModerator(by, .unauthorized)
        abandonStaleStreamingStep(now: now)
        if let s = liveStream {
            switch s.status.phase {
            case .starting: throw RoomError(.streamStartInProgress, .conflict, "the start of live stream \(s.status.id) is being processed")
            case .streaming: throw RoomError(.alreadyStreaming, .conflict, "the session is being streamed (\(s.status.id))")
            case .stopping: throw RoomError(.streamStopInProgress, .conflict, "the stop of live stream \(s.status.id) is being processed")
            }
        }
        liveStream = LiveStream(status: StreamingStatus(id: id, phase: .starting, startedBy: by, since: now))
    }

    /// The node is ready to take the stream: its slots are made on `connection`, whose datagrams go into
    /// `egress`, and filled from the room's ranking. Returns the slots' descriptions (video first), or nil when
    /// `id` is not the start being processed.
    public func streamingStarted(id: String, connection cid: ConnectionID, egress: any Egress, audioSlots: Int,
                                 now: MonoTime, into out: DatagramBatch) -> [SlotDescription]? {
        guard let live = liveStream, live.status.id == id, live.status.phase == .starting, connections[cid] == nil else { return nil }
        let index = -1 - nextRelayIndex
        nextRelayIndex += 1
        let holder = Participant(id: "live:\(id)", index: index, name: "live stream", role: .participant, talkerCount: nil)
        let conn = Connection(id: cid, participant: index)
        conn.egress = egress
        // Written unprotected into the egress (`Connection.protect`); a context is there because slots send
        // only on a keyed connection.
        conn.outbound = try? SRTPSession(keys: SRTPKeyingMaterial(profile: .aesCM128HmacSHA1_80, masterKey: [UInt8](repeating: 7, count: 16),
                                                                 masterSalt: [UInt8](repeating: 7, count: 14)), direction: .outbound)
        connections[cid] = conn
        var slots = [SlotDescription(codec: .vp8, mid: "v0", ssrc: 0x4C49_5600, payloadType: Self.liveVideoPayloadType)]
        for i in 0..<max(1, audioSlots) {
            slots.append(SlotDescription(codec: .opus, mid: "a\(i)", ssrc: 0x4C49_5610 + UInt32(i), payloadType: Self.liveAudioPayloadType))
        }
        // One video: the encoder's picture is the first talker's camera, large.
        let s = Subscriber(participant: holder, connection: conn, videoCount: VideoCountPolicy(parameters: configuration.videoCount, initial: 1),
                           resendPolicy: limits.resendPolicy, effects: effects)
        conn.subscriber = s
        _ = s.bind(slots, startBitrate: 2_500_000)
        live.holder = holder
        live.connection = conn
        live.status.phase = .streaming
        live.status.since = now
        refreshLiveStream(ranking, now: now, into: out)
        return slots
    }

    /// The encoder runs: everyone is told the session is live.
    public func streamingConfirmed(id: String) {
        guard let live = liveStream, live.status.id == id, live.status.phase == .streaming, !live.announced else { return }
        live.announced = true
        effects.events.append(.streaming(on: true, id: id, by: live.status.startedBy, reason: nil))
    }

    /// The node could not start the encoder: the room is as before.
    public func streamingStartFailed(id: String) {
        guard let live = liveStream, live.status.id == id, live.status.phase == .starting else { return }
        liveStream = nil
    }

    /// A moderator asks to stop (5003 for a participant); 5124 with no stream, 5121 while a start is being
    /// processed, 5123 while a stop is. Returns the stream's id and its connection (the node's egress to close).
    public func requestStreamingStop(by: String, now: MonoTime) throws(RoomError) -> (id: String, connection: ConnectionID?) {
        try requireModerator(by, .unauthorized)
        abandonStaleStreamingStep(now: now)
        guard let live = liveStream else { throw RoomError(.notStreaming, .conflict, "the session is not being streamed") }
        switch live.status.phase {
        case .starting: throw RoomError(.streamStartInProgress, .conflict, "the start of live stream \(live.status.id) is being processed")
        case .stopping: throw RoomError(.streamStopInProgress, .conflict, "the stop of live stream \(live.status.id) is being processed")
        case .streaming: break
        }
        live.status.phase = .stopping
        live.status.stoppedBy = by
        live.status.since = now
        release(live)
        return (live.status.id, live.connection?.id)
    }

    /// The encoder stopped (asked to, or for good: `reason` says why): the room streams nothing and says so.
    /// Returns the stream's connection (the worker stops routing it), nil when `id` is not this room's stream.
    @discardableResult
    public func streamingStopped(id: String, reason: String? = nil) -> ConnectionID? {
        guard let live = liveStream, live.status.id == id else { return nil }
        release(live)
        liveStream = nil
        if live.announced { effects.events.append(.streaming(on: false, id: id, by: live.status.stoppedBy, reason: reason)) }
        return live.connection?.id
    }

    /// The encoder restarted (its exit's reason): everyone is told, the stream goes on.
    public func streamingNotice(id: String, reason: String) {
        guard let live = liveStream, live.status.id == id, live.status.phase == .streaming else { return }
        effects.events.append(.streaming(on: true, id: id, by: nil, reason: reason))
    }

    /// The encoder (re)started and cannot show a picture before a key frame: the video slot's source is asked
    /// for one (as a browser's PLI would).
    public func streamingNeedsKeyframe(id: String, now: MonoTime, into out: DatagramBatch) {
        guard let live = liveStream, live.status.id == id, let s = live.connection?.subscriber else { return }
        for slot in s.videoSlots { s.onKeyframeRequest(slotSSRC: slot.description.ssrc, now: now, into: out) }
    }

    /// The live stream's connection, if it streams (the node routes its egress).
    public var liveStreamConnection: ConnectionID? { liveStream?.connection?.id }

    func refreshLiveStream(_ ranking: RoomRanking, now: MonoTime, into out: DatagramBatch) {
        guard let live = liveStream, let s = live.connection?.subscriber else { return }
        _ = SlotAssigner.apply(ranking, to: s, participants: participants, configuration: configuration, now: now, into: out)
        // No receiver feedback moves its layers: they are chosen now, from its start estimate (the top layer of
        // a usual three-layer camera).
        _ = s.reviewLayers(configuration: configuration, now: now, into: out)
        keepLiveAudioGoing(now: now, into: out)
    }

    /// An encoder reading a fixed SDP starts only once every stream has given it something, and mixes what
    /// comes: an audio slot nobody talks on sends Opus silence every 20 ms (the room ticks for it) until a
    /// talker takes it.
    func keepLiveAudioGoing(now: MonoTime, into out: DatagramBatch) {
        guard let s = liveStream?.connection?.subscriber else { return }
        for slot in s.audioSlots {
            if slot.current == nil, slot.silenceFramesLeft == 0 {
                slot.rewriter.startSynthetic(now: now)
                slot.silenceFramesLeft = .max
                slot.nextSilenceAt = now
            }
            // Every frame that is due, each on its own 20 ms step (a late tick must not slow the encoder's
            // mix, which runs at its slowest input); at most 10 at once.
            var sent = 0
            while slot.silenceFramesLeft > 0, slot.nextSilenceAt <= now, sent < 10 {
                slot.sendDueSilence(now: slot.nextSilenceAt, into: out)
                sent += 1
            }
            if slot.silenceFramesLeft > 0, slot.nextSilenceAt > now { effects.wake(at: slot.nextSilenceAt) }
        }
    }

    private func release(_ live: LiveStream) {
        guard let conn = live.connection else { return }
        conn.subscriber?.unbind()
        connections.removeValue(forKey: conn.id)?.release()
        conn.release()
    }

    private func abandonStaleStreamingStep(now: MonoTime) {
        guard let live = liveStream, live.status.phase != .streaming, now - live.status.since > Self.recordingStepTimeout else { return }
        release(live)
        liveStream = nil
        if live.announced { effects.events.append(.streaming(on: false, id: live.status.id, by: live.status.stoppedBy, reason: "stop not confirmed")) }
    }
}

/// What a room holds of its live stream: where it is, and once it streams its slots' holder and connection.
final class LiveStream {
    var status: Room.StreamingStatus
    /// The nobody its subscriber belongs to: held here, as a relay holds its own, because a subscriber holds
    /// its participant unowned (the roster owns everyone else's).
    var holder: Participant?
    var connection: Connection?
    /// Everyone was told it is on (the encoder started): an off is told too.
    var announced = false

    init(status: Room.StreamingStatus) { self.status = status }
}
