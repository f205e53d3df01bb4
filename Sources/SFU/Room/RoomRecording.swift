/// Recording a session as individual streams (EnableX "Record a Session", `shared/seeds/000_*`): a moderator
/// starts and stops it, any number of times; a room created with `auto_recording` starts at once. Each of this
/// node's participants' audio and video tracks gets a `TrackRecorder` that hands its packets to the node's
/// recording writer; the writer (off the worker) makes the files.
///
/// Start and stop take two steps, because the writer answers on its own thread: the request moves the recording
/// to `starting` or `stopping` (a second request meanwhile is refused with the seeds' "in progress" code), and
/// the writer's answer completes it. What the room does not forward is not recorded: the recorders sit behind
/// the ingress rules.
///
/// Owns the recording's state and its track recorders; reads the room's roster (`recordNewTracks`).
public final class RoomRecording {
    /// Where a recording is.
    public enum Phase: String, Sendable, Equatable { case starting, recording, stopping }

    public struct Status: Sendable, Equatable {
        public var id: String
        public var phase: Phase
        /// The moderator who started it (nil: the room's auto_recording).
        public var startedBy: String?
        public var stoppedBy: String?
        /// When it entered its phase: a start or stop whose second step never came (its API call timed out on
        /// a busy worker) is taken over after `stepTimeout`.
        public var since: MonoTime = .zero
    }

    /// How long a start or a stop may wait for the writer (or the encoder) before a new request takes over.
    public static let stepTimeout = MonoTime.Interval.seconds(30)

    unowned let room: Room
    private var status_: Status?
    private var sink: (any RecordingSink)?
    private var start = MonoTime.zero
    private var recorders: [TrackRecorder] = []

    init(room: Room) { self.room = room }

    /// The recording under way, if any.
    public var status: Status? { status_ }

    /// A moderator asks to start recording (`by` nil: the room's auto_recording). 5007 for a participant, 5033
    /// while a start is being processed, 5034 while recording, 5035 while a stop is being processed.
    public func requestStart(id: String, by: String?, now: MonoTime) throws(RoomError) {
        if let by { try room.requireModerator(by, .startRecordUnauthorized) }
        abandonStaleStep(now: now)
        if let s = status_ {
            switch s.phase {
            case .starting: throw RoomError(.recordStartInProgress, .conflict, "the start of recording \(s.id) is being processed")
            case .recording: throw RoomError(.alreadyRecording, .conflict, "the session is being recorded (\(s.id))")
            case .stopping: throw RoomError(.recordStopInProgress, .conflict, "the stop of recording \(s.id) is being processed")
            }
        }
        status_ = Status(id: id, phase: .starting, startedBy: by, since: now)
    }

    /// The writer is ready: every track of this node's participants is recorded from now on (and those
    /// published later, `recordNewTracks`). False when `id` is not the start being processed.
    @discardableResult
    public func started(id: String, sink: any RecordingSink, now: MonoTime) -> Bool {
        guard var s = status_, s.id == id, s.phase == .starting else { return false }
        s.phase = .recording
        s.since = now
        status_ = s
        self.sink = sink
        start = now
        recordNewTracks()
        room.effects.events.append(.recording(on: true, id: id, by: s.startedBy, reason: nil))
        return true
    }

    /// The writer could not start (no directory, a cap reached): the room is as before.
    public func startFailed(id: String) {
        guard let s = status_, s.id == id, s.phase == .starting else { return }
        end()
    }

    /// A moderator asks to stop: the room's recorders close their streams now (nothing more is queued), and the
    /// writer finishes the files. 5008 for a participant, 5036 with no recording, 5033 while a start is being
    /// processed, 5035 while a stop is. Returns the recording's id.
    public func requestStop(by: String, now: MonoTime) throws(RoomError) -> String {
        try room.requireModerator(by, .stopRecordUnauthorized)
        abandonStaleStep(now: now)
        guard var s = status_ else { throw RoomError(.notRecording, .conflict, "the session is not being recorded") }
        switch s.phase {
        case .starting: throw RoomError(.recordStartInProgress, .conflict, "the start of recording \(s.id) is being processed")
        case .stopping: throw RoomError(.recordStopInProgress, .conflict, "the stop of recording \(s.id) is being processed")
        case .recording: break
        }
        s.phase = .stopping
        s.stoppedBy = by
        s.since = now
        status_ = s
        closeAll()
        return s.id
    }

    /// The writer closed the files: the room records nothing, and says so (`reason`: why, when it was not a
    /// moderator - a full disk, a cap). Also what a failure the writer reports does, whatever the phase.
    public func stopped(id: String, reason: String? = nil) {
        guard let s = status_, s.id == id else { return }
        end()
        guard s.phase != .starting else { return }
        room.effects.events.append(.recording(on: false, id: id, by: s.stoppedBy, reason: reason))
    }

    /// Records the tracks of this node's own participants that are not recorded yet: each audio track, each
    /// camera and screen share - of a simulcast one, its highest layer (the recording is kept for viewing
    /// later, when the downlink no longer matters: the best picture the publisher sends).
    func recordNewTracks() {
        guard let s = status_, s.phase == .recording, let sink else { return }
        recorders.removeAll { $0.ended }
        for p in room.participants.inOrder where p.origin == nil {
            guard let publisher = p.publisher else { continue }
            var wanted: [PublishedTrack] = publisher.audio.map { [$0] } ?? []
            for source in VideoSource.allCases {
                if let top = publisher.tracks(source).max(by: { ($0.description.simulcast?.index ?? 0) < ($1.description.simulcast?.index ?? 0) }) {
                    wanted.append(top)
                }
            }
            for t in wanted where !recorders.contains(where: { $0.track === t }) {
                let info = RecordedStream(recording: s.id, room: room.name, participant: p.id, name: p.name, codec: t.description.codec,
                                          source: t.kind == .video ? t.description.source : nil, layer: t.description.simulcast?.index,
                                          recordingStart: start)
                guard let handle = sink.open(info) else {
                    room.effects.drop(.recordingQueueFull)
                    continue
                }
                let rec = TrackRecorder(track: t, handle: handle, sink: sink, effects: room.effects)
                t.attach(rec)
                recorders.append(rec)
            }
        }
    }

    /// The room ends (`reason`: why): nothing is recorded any more, and a recording everyone was told of (on,
    /// or stopping) is told off before the room's end is (docs/recording.md: reason "room destroyed"). One still
    /// starting was never told; the node finishes its files.
    func destroy(reason: String) {
        if let s = status_, s.phase != .starting {
            room.effects.events.append(.recording(on: false, id: s.id, by: s.stoppedBy, reason: reason))
        }
        end()
    }

    /// Nothing is recorded any more, and nothing is told (the caller tells).
    func end() {
        closeAll()
        status_ = nil
        sink = nil
    }

    /// A start or stop stuck half way (its second step never reached the room) is given up.
    private func abandonStaleStep(now: MonoTime) {
        guard let s = status_, s.phase != .recording, now - s.since > Self.stepTimeout else { return }
        end()
        if s.phase == .stopping {
            room.effects.events.append(.recording(on: false, id: s.id, by: s.stoppedBy, reason: "stop not confirmed by the writer"))
        }
    }

    private func closeAll() {
        for r in recorders { r.close() }
        recorders.removeAll()
    }
}
