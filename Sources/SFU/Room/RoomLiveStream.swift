/// Live streaming over RTMP (EnableX "Start / Stop Live Streaming", `shared/seeds/000_*`): the room's active
/// talkers go out as plain RTP to an encoder the node runs (FFmpeg), which composes the view and pushes it to
/// the RTMP URL. The room's side is a subscriber that is nobody: its slots - one video slot that shows the first
/// talker, and audio slots for the top talkers - are planned like a browser's from the room's ranking (so hard
/// mute, the floor and pins hold), each slot one continuous stream across talker switches, which is what an
/// encoder reading a fixed SDP needs. Its connection writes into an egress of the shell's, unprotected: the
/// shell sends each slot's packets to the encoder's port for it (`WorkerLiveStreams`).
///
/// Start and stop take two steps, as recording does: the request moves the stream to `starting` or `stopping`
/// (a second request meanwhile is refused with the seeds' 5121 or 5123), and the node completes it. A stream
/// in `streaming` is told `starting` while its encoder connects and `on` once the encoder's output is open
/// (`live`): what everyone hears is what the RTMP server has, not that a process was launched.
///
/// Owns the stream's state; the room owns membership and the connection table, which it lends through the
/// few calls below (`Room.requireModerator`, `RoomSessions.adopt`, `RoomSessions.drop`).
public final class RoomLiveStream {
    public enum Phase: String, Sendable, Equatable { case starting, streaming, stopping }

    public struct Status: Sendable, Equatable {
        public var id: String
        public var phase: Phase
        public var startedBy: String
        public var stoppedBy: String?
        public var since: MonoTime
        /// The encoder's output is open: the stream is live at the RTMP server.
        public var live = false
    }

    /// Payload types of the stream's slots (what the encoder's SDP names).
    public static let videoPayloadType: UInt8 = 96
    public static let audioPayloadType: UInt8 = 111

    unowned let room: Room
    private var status_: Status?
    /// The nobody its subscriber belongs to: held here, as a relay holds its own, because a subscriber holds
    /// its participant unowned (the roster owns everyone else's).
    private var holder: Participant?
    private var conn: Connection?
    /// Everyone was told it is starting (the encoder runs): an off is told too.
    private var announced = false

    init(room: Room) { self.room = room }

    /// The live stream under way, if any.
    public var status: Status? { status_ }

    /// The stream's connection, if it streams (the node routes its egress).
    public var connection: ConnectionID? { conn?.id }

    /// The slots the room's ranking fills, while it streams.
    var subscriber: Subscriber? { conn?.subscriber }

    /// A moderator asks to start streaming (5003 for a participant); 5121 while a start is being processed,
    /// 5122 while streaming, 5123 while a stop is being processed.
    public func requestStart(id: String, by: String, now: MonoTime) throws(RoomError) {
        try room.requireModerator(by, .unauthorized)
        abandonStaleStep(now: now)
        if let s = status_ {
            switch s.phase {
            case .starting: throw RoomError(.streamStartInProgress, .conflict, "the start of live stream \(s.id) is being processed")
            case .streaming: throw RoomError(.alreadyStreaming, .conflict, "the session is being streamed (\(s.id))")
            case .stopping: throw RoomError(.streamStopInProgress, .conflict, "the stop of live stream \(s.id) is being processed")
            }
        }
        status_ = Status(id: id, phase: .starting, startedBy: by, since: now)
    }

    /// The node is ready to take the stream: its slots are made on `connection`, whose datagrams go into
    /// `egress`, and filled from the room's ranking. Returns the slots' descriptions (video first), or nil when
    /// `id` is not the start being processed.
    public func started(id: String, connection cid: ConnectionID, egress: any Egress, audioSlots: Int,
                        now: MonoTime, into out: DatagramBatch) -> [SlotDescription]? {
        guard var s = status_, s.id == id, s.phase == .starting, room.sessions.connection(cid) == nil else { return nil }
        let holder = Participant(id: "live:\(id)", index: room.nextNobodyIndex(), name: "live stream", role: .participant, talkerCount: nil)
        let conn = Connection(id: cid, participant: holder.index)
        conn.egress = egress
        // Written unprotected into the egress (`Connection.protect`); a context is there because slots send
        // only on a keyed connection.
        conn.outbound = try? SRTPSession(keys: SRTPKeyingMaterial(profile: .aesCM128HmacSHA1_80, masterKey: [UInt8](repeating: 7, count: 16),
                                                                 masterSalt: [UInt8](repeating: 7, count: 14)), direction: .outbound)
        room.sessions.adopt(conn)
        var slots = [SlotDescription(codec: .vp8, mid: "v0", ssrc: 0x4C49_5600, payloadType: Self.videoPayloadType)]
        for i in 0..<max(1, audioSlots) {
            slots.append(SlotDescription(codec: .opus, mid: "a\(i)", ssrc: 0x4C49_5610 + UInt32(i), payloadType: Self.audioPayloadType))
        }
        // One video: the encoder's picture is the first talker's camera, large.
        let sub = Subscriber(participant: holder, connection: conn,
                             videoCount: VideoCountPolicy(parameters: room.configuration.videoCount, initial: 1),
                             resendPolicy: room.limits.resendPolicy, effects: room.effects)
        conn.subscriber = sub
        _ = sub.bind(slots, startBitrate: 2_500_000)
        self.holder = holder
        self.conn = conn
        s.phase = .streaming
        s.since = now
        status_ = s
        refresh(room.ranking, now: now, into: out)
        return slots
    }

    /// The encoder runs: everyone is told the stream is starting.
    public func launched(id: String) {
        guard let s = status_, s.id == id, s.phase == .streaming, !announced else { return }
        announced = true
        room.effects.events.append(.streaming(state: .starting, id: id, by: s.startedBy, reason: nil))
    }

    /// The encoder's output opened: everyone is told the session is live (again, after a restart). Told
    /// `starting` first if that has not reached the room yet (the node's two calls race).
    public func live(id: String) {
        guard var s = status_, s.id == id, s.phase == .streaming, !s.live else { return }
        launched(id: id)
        s.live = true
        status_ = s
        room.effects.events.append(.streaming(state: .on, id: id, by: s.startedBy, reason: nil))
    }

    /// The node could not start the encoder: the room is as before.
    public func startFailed(id: String) {
        guard let s = status_, s.id == id, s.phase == .starting else { return }
        status_ = nil
    }

    /// A moderator asks to stop (5003 for a participant); 5124 with no stream, 5121 while a start is being
    /// processed, 5123 while a stop is. Returns the stream's id and its connection (the node's egress to close).
    public func requestStop(by: String, now: MonoTime) throws(RoomError) -> (id: String, connection: ConnectionID?) {
        try room.requireModerator(by, .unauthorized)
        abandonStaleStep(now: now)
        guard var s = status_ else { throw RoomError(.notStreaming, .conflict, "the session is not being streamed") }
        switch s.phase {
        case .starting: throw RoomError(.streamStartInProgress, .conflict, "the start of live stream \(s.id) is being processed")
        case .stopping: throw RoomError(.streamStopInProgress, .conflict, "the stop of live stream \(s.id) is being processed")
        case .streaming: break
        }
        s.phase = .stopping
        s.stoppedBy = by
        s.since = now
        status_ = s
        let cid = conn?.id
        releaseConnection()
        return (s.id, cid)
    }

    /// The encoder stopped (asked to, or for good: `reason` says why, `failed` when no one asked): the room
    /// streams nothing and says so. Returns the stream's connection (the worker stops routing it), nil when
    /// `id` is not this room's stream.
    @discardableResult
    public func stopped(id: String, reason: String? = nil, failed: Bool = false) -> ConnectionID? {
        guard let s = status_, s.id == id else { return nil }
        let cid = conn?.id
        end(failed ? .failed : .off, reason: reason)
        return cid
    }

    /// The encoder restarts (its exit's reason): everyone is told the stream is starting again, until its
    /// output is open again.
    public func notice(id: String, reason: String) {
        guard var s = status_, s.id == id, s.phase == .streaming, announced else { return }
        s.live = false
        status_ = s
        room.effects.events.append(.streaming(state: .starting, id: id, by: nil, reason: reason))
    }

    /// The encoder (re)started and cannot show a picture before a key frame: the video slot's source is asked
    /// for one (as a browser's PLI would).
    public func needsKeyframe(id: String, now: MonoTime, into out: DatagramBatch) {
        guard let s = status_, s.id == id, let sub = subscriber else { return }
        for slot in sub.videoSlots { sub.onKeyframeRequest(slotSSRC: slot.description.ssrc, now: now, into: out) }
    }

    /// The room's lists changed: the stream's slots follow `ranking`.
    func refresh(_ ranking: RoomRanking, now: MonoTime, into out: DatagramBatch) {
        guard let sub = subscriber else { return }
        _ = SlotAssigner.apply(ranking, to: sub, participants: room.participants, configuration: room.configuration, now: now, into: out)
        // No receiver feedback moves its layers: they are chosen now, from its start estimate (the top layer of
        // a usual three-layer camera).
        _ = sub.reviewLayers(configuration: room.configuration, now: now, into: out)
        keepAudioGoing(now: now, into: out)
    }

    /// An encoder reading a fixed SDP starts only once every stream has given it something, and mixes what
    /// comes: an audio slot nobody talks on sends Opus silence every 20 ms (the room ticks for it) until a
    /// talker takes it.
    func keepAudioGoing(now: MonoTime, into out: DatagramBatch) {
        guard let sub = subscriber else { return }
        for slot in sub.audioSlots {
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
            if slot.silenceFramesLeft > 0, slot.nextSilenceAt > now { room.effects.wake(at: slot.nextSilenceAt) }
        }
    }

    /// The room ends (`reason`: why): the stream's slots let go, and a stream everyone was told of is told off
    /// before the room's end is.
    func destroy(reason: String) {
        conn?.subscriber?.unbind()
        conn = nil
        holder = nil
        if let s = status_, announced { room.effects.events.append(.streaming(state: .off, id: s.id, by: s.stoppedBy, reason: reason)) }
        status_ = nil
        announced = false
    }

    private func releaseConnection() {
        guard let c = conn else { return }
        c.subscriber?.unbind()
        room.sessions.drop(c)
    }

    /// The stream is over: its connection goes, and an announced stream is told `state`.
    private func end(_ state: RoomEvent.StreamingState, reason: String?) {
        guard let s = status_ else { return }
        releaseConnection()
        conn = nil
        holder = nil
        status_ = nil
        if announced { room.effects.events.append(.streaming(state: state, id: s.id, by: s.stoppedBy, reason: reason)) }
        announced = false
    }

    private func abandonStaleStep(now: MonoTime) {
        guard let s = status_, s.phase != .streaming, now - s.since > RoomRecording.stepTimeout else { return }
        end(.off, reason: "stop not confirmed")
    }
}
