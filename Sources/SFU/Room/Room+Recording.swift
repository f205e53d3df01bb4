/// Recording a session as individual streams (EnableX "Record a Session", `shared/seeds/000_*`): a moderator
/// starts and stops it, any number of times; a room created with `auto_recording` starts at once. Each of this
/// node's participants' audio and video tracks gets a `TrackRecorder` that hands its packets to the node's
/// recording writer; the writer (off the worker) makes the files.
///
/// Start and stop take two steps, because the writer answers on its own thread: the request moves the room to
/// `starting` or `stopping` (a second request meanwhile is refused with the seeds' "in progress" code), and the
/// writer's answer completes it. What the room does not forward is not recorded: the recorders sit behind the
/// ingress rules.
extension Room {
    /// Where a recording is.
    public enum RecordingPhase: String, Sendable, Equatable { case starting, recording, stopping }

    public struct RecordingStatus: Sendable, Equatable {
        public var id: String
        public var phase: RecordingPhase
        /// The moderator who started it (nil: the room's auto_recording).
        public var startedBy: String?
        public var stoppedBy: String?
        /// When it entered its phase: a start or stop whose second step never came (its API call timed out on
        /// a busy worker) is taken over after `staleAfter`.
        public var since: MonoTime = .zero
    }

    /// How long a start or a stop may wait for the writer before a new request takes over.
    public static let recordingStepTimeout = MonoTime.Interval.seconds(30)

    /// The recording under way, if any.
    public var recording: RecordingStatus? { recorder?.status }

    /// A moderator asks to start recording (`by` nil: the room's auto_recording). 5007 for a participant, 5033
    /// while a start is being processed, 5034 while recording, 5035 while a stop is being processed.
    public func requestRecordingStart(id: String, by: String?, now: MonoTime) throws(RoomError) {
        if let by { try requireModerator(by, .startRecordUnauthorized) }
        abandonStaleRecordingStep(now: now)
        if let r = recorder {
            switch r.status.phase {
            case .starting: throw RoomError(.recordStartInProgress, .conflict, "the start of recording \(r.status.id) is being processed")
            case .recording: throw RoomError(.alreadyRecording, .conflict, "the session is being recorded (\(r.status.id))")
            case .stopping: throw RoomError(.recordStopInProgress, .conflict, "the stop of recording \(r.status.id) is being processed")
            }
        }
        recorder = RoomRecorder(status: RecordingStatus(id: id, phase: .starting, startedBy: by, since: now))
    }

    /// A start or stop stuck half way (its second step never reached the room) is given up.
    private func abandonStaleRecordingStep(now: MonoTime) {
        guard let r = recorder, r.status.phase != .recording, now - r.status.since > Self.recordingStepTimeout else { return }
        r.closeAll()
        recorder = nil
        if r.status.phase == .stopping {
            effects.events.append(.recording(on: false, id: r.status.id, by: r.status.stoppedBy, reason: "stop not confirmed by the writer"))
        }
    }

    /// The writer is ready: every track of this node's participants is recorded from now on (and those
    /// published later, `recordNewTracks`). False when `id` is not the start being processed.
    @discardableResult
    public func recordingStarted(id: String, sink: any RecordingSink, now: MonoTime) -> Bool {
        guard let r = recorder, r.status.id == id, r.status.phase == .starting else { return false }
        r.status.phase = .recording
        r.status.since = now
        r.sink = sink
        r.start = now
        recordNewTracks()
        effects.events.append(.recording(on: true, id: id, by: r.status.startedBy, reason: nil))
        return true
    }

    /// The writer could not start (no directory, a cap reached): the room is as before.
    public func recordingStartFailed(id: String) {
        guard let r = recorder, r.status.id == id, r.status.phase == .starting else { return }
        recorder = nil
    }

    /// A moderator asks to stop: the room's recorders close their streams now (nothing more is queued), and the
    /// writer finishes the files. 5008 for a participant, 5036 with no recording, 5033 while a start is being
    /// processed, 5035 while a stop is. Returns the recording's id.
    public func requestRecordingStop(by: String, now: MonoTime) throws(RoomError) -> String {
        try requireModerator(by, .stopRecordUnauthorized)
        abandonStaleRecordingStep(now: now)
        guard let r = recorder else { throw RoomError(.notRecording, .conflict, "the session is not being recorded") }
        switch r.status.phase {
        case .starting: throw RoomError(.recordStartInProgress, .conflict, "the start of recording \(r.status.id) is being processed")
        case .stopping: throw RoomError(.recordStopInProgress, .conflict, "the stop of recording \(r.status.id) is being processed")
        case .recording: break
        }
        r.status.phase = .stopping
        r.status.stoppedBy = by
        r.status.since = now
        r.closeAll()
        return r.status.id
    }

    /// The writer closed the files: the room records nothing, and says so (`reason`: why, when it was not a
    /// moderator - a full disk, a cap). Also what a failure the writer reports does, whatever the phase.
    public func recordingStopped(id: String, reason: String? = nil) {
        guard let r = recorder, r.status.id == id else { return }
        r.closeAll()
        recorder = nil
        guard r.status.phase != .starting else { return }
        effects.events.append(.recording(on: false, id: id, by: r.status.stoppedBy, reason: reason))
    }

    /// Records the tracks of this node's own participants that are not recorded yet: each audio track, each
    /// camera and screen share - of a simulcast one, its highest layer (the recording is kept for viewing
    /// later, when the downlink no longer matters: the best picture the publisher sends).
    func recordNewTracks() {
        guard let r = recorder, r.status.phase == .recording, let sink = r.sink else { return }
        r.recorders.removeAll { $0.ended }
        for p in participants.inOrder where p.origin == nil {
            guard let publisher = p.publisher else { continue }
            var wanted: [PublishedTrack] = publisher.audio.map { [$0] } ?? []
            for source in VideoSource.allCases {
                if let top = publisher.tracks(source).max(by: { ($0.description.simulcast?.index ?? 0) < ($1.description.simulcast?.index ?? 0) }) {
                    wanted.append(top)
                }
            }
            for t in wanted where !r.recorders.contains(where: { $0.track === t }) {
                let info = RecordedStream(recording: r.status.id, room: name, participant: p.id, name: p.name, codec: t.description.codec,
                                          source: t.kind == .video ? t.description.source : nil, layer: t.description.simulcast?.index,
                                          recordingStart: r.start)
                guard let handle = sink.open(info) else {
                    effects.drop(.recordingQueueFull)
                    continue
                }
                let rec = TrackRecorder(track: t, handle: handle, sink: sink, effects: effects)
                t.attach(rec)
                r.recorders.append(rec)
            }
        }
    }
}

/// What a room holds of its recording: where it is, where packets go, and a recorder per recorded track.
final class RoomRecorder {
    var status: Room.RecordingStatus
    var sink: (any RecordingSink)?
    var start = MonoTime.zero
    var recorders: [TrackRecorder] = []

    init(status: Room.RecordingStatus) { self.status = status }

    func closeAll() {
        for r in recorders { r.close() }
        recorders.removeAll()
    }
}
