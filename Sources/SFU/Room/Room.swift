/// One conference room: the sans-IO media engine for its participants.
///
/// Inputs are calls with the caller's `now`: control calls (admit, publish, subscribe, moderation), datagrams
/// from connections (`receive`) and timer ticks (`tick`). Outputs are datagrams written into a
/// `DatagramBatch`, events drained with `drainEvents()`, and `nextDeadline`, the time by which `tick` should
/// run again. The room owns no socket, thread or clock; it is not thread-safe and lives on one worker.
public final class Room {
    public let name: String
    public internal(set) var configuration: RoomConfiguration
    public let limits: RoomLimits
    public internal(set) var counters = RoomCounters()

    var participants: [Int: Participant] = [:]
    var participantsByID: [String: Int] = [:]
    var tracks: [Int: SourceTrack] = [:]
    var connections: [ConnectionID: Connection] = [:]
    var nextParticipantIndex = 0
    var nextTrackIndex = 0

    var detector: DominantSpeakerDetector
    /// Recency order R: front = most recently elected or started speaking; joiners at the end.
    var recency: [Int] = []
    var pins: [Int] = []
    public internal(set) var locked = false
    public internal(set) var roomAudioMuted = false
    var floor = FloorState()
    var events: [RoomEvent] = []
    var listsDirty = false
    /// `nextDeadline`, until something may have scheduled earlier work.
    var deadlineCache: MonoTime?
    /// The measured per-video bitrate and when it was taken (`streamBandwidthKbps`).
    var streamRateCache: (at: MonoTime, lowest: Int, highest: Int)?

    /// The SSRC the node uses as sender of its own RTCP (PLI, RR) towards publishers.
    public let nodeSSRC: UInt32 = 0x5346_5530  // "SFU0"

    public init(name: String, configuration: RoomConfiguration = .init(), limits: RoomLimits = .init(),
                now: MonoTime) throws(RoomError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.limits = limits
        self.detector = DominantSpeakerDetector(configuration: configuration.detector, now: now)
    }

    // MARK: Events and time

    /// Events since the last call, oldest first.
    public func drainEvents() -> [RoomEvent] {
        guard !events.isEmpty else { return [] }  // no allocation on the common, empty path
        defer { events.removeAll() }
        return events
    }

    public var hasPendingEvents: Bool { !events.isEmpty }

    /// When `tick` should run next: the next talker decision, silence frame, keyframe retry or report.
    /// Cached: the worker asks after every wakeup, and the scan visits every participant, track and
    /// connection. The places that schedule earlier work clear it (silence frames for a slot that loses its
    /// speaker, a keyframe request and its retry, a new connection's receiver reports) and so does `tick`,
    /// which reschedules every timer; work that only gets later leaves it, at the cost of one early tick.
    public var nextDeadline: MonoTime {
        if let deadlineCache { return deadlineCache }
        let t = computeNextDeadline()
        deadlineCache = t
        return t
    }

    private func computeNextDeadline() -> MonoTime {
        var t = detector.nextDecision
        for p in participants.values {
            if let s = p.subscriber {
                for slot in s.audioSlots where slot.silenceFramesLeft > 0 { t = min(t, slot.nextSilenceAt) }
            }
        }
        for track in tracks.values where track.kind == .video {
            if let r = track.keyframes.nextRetry(rtt: nil) { t = min(t, r) }
        }
        for c in connections.values { t = min(t, c.nextReceiverReport) }
        t = min(t, nextPublisherFeedback())
        t = min(t, nextProbe())
        return t
    }

    /// Runs what is due at `now`: talker decisions, silence frames, keyframe retries, receiver reports.
    public func tick(now: MonoTime, into out: DatagramBatch) {
        deadlineCache = nil  // every timer below reschedules itself
        if let decision = detector.decideIfDue(now: now) { apply(decision, now: now) }
        updateVideoLiveness(now: now)
        sendDueSilence(now: now, into: out)
        retryKeyframeRequests(now: now, into: out)
        sendDueReceiverReports(now: now, into: out)
        sendDuePublisherFeedback(now: now, into: out)
        runProbes(now: now, into: out)
        if listsDirty { refreshAllSubscribers(now: now, into: out) }
    }

    // MARK: Membership

    public var participantCount: Int { participants.count }
    public func contains(participant id: String) -> Bool { participantsByID[id] != nil }
    public var participantIDs: [String] { participants.values.sorted { $0.index < $1.index }.map(\.id) }

    func participant(_ id: String) throws(RoomError) -> Participant {
        guard let i = participantsByID[id], let p = participants[i] else {
            throw RoomError(.undefinedClientIDs, .notFound, "unknown participant \(id)")
        }
        return p
    }

    /// Admits a participant. Refused while the room is locked, or when the ID is taken.
    public func admit(_ id: String, name: String? = nil, role: Role = .participant, talkerCount: Int? = nil,
                      now: MonoTime) throws(RoomError) {
        guard !id.isEmpty else { throw RoomError(.invalidSetting, .invalid, "participant id must not be empty") }
        guard participantsByID[id] == nil else {
            throw RoomError(.participantExists, .conflict, "participant \(id) is already in the room")
        }
        guard !locked else { throw RoomError(.roomLocked, .conflict, "room \(self.name) is locked") }
        guard participants.count < limits.participants else {
            throw RoomError(.limitReached, .conflict, "room \(self.name) is full (\(limits.participants) participants)", limit: "participants_per_room")
        }
        if let t = talkerCount, !RoomConfiguration.maxActiveTalkersRange.contains(t) {
            throw RoomError(.invalidSetting, .invalid, "talker_count must be 1-12, got \(t)")
        }
        let index = nextParticipantIndex
        nextParticipantIndex += 1
        let p = Participant(id: id, index: index, name: name ?? id, role: role, talkerCount: talkerCount)
        participants[index] = p
        participantsByID[id] = index
        recency.append(index)
        events.append(.participantState(participant: id, state: .joined, reason: nil))
        listsDirty = true
    }

    /// Removes a participant: its tracks stop feeding slots, its connections are forgotten (the node closes
    /// the transports), pins and floor state referring to it are cleared. `by` must be a moderator when given.
    public func remove(_ id: String, by: String? = nil, reason: String? = nil, now: MonoTime,
                       into out: DatagramBatch) throws(RoomError) {
        if let by { try requireModerator(by, .dropUnauthorized) }
        let p = try participant(id)
        unpublish(p)
        unsubscribe(p)
        for c in [p.publishConnection, p.subscribeConnection].compactMap({ $0 }) { connections.removeValue(forKey: c)?.attached = false }
        p.publishConnection = nil
        p.subscribeConnection = nil
        participants[p.index] = nil
        participantsByID[id] = nil
        recency.removeAll { $0 == p.index }
        if pins.contains(p.index) {
            pins.removeAll { $0 == p.index }
            events.append(.pins(pinnedIDs))
        }
        floor.forget(p.index)
        events.append(.participantState(participant: id, state: .left, reason: reason ?? (by.map { "dropped by \($0)" })))
        refreshAllSubscribers(now: now, into: out)
    }

    /// Ends the room: every participant leaves (reason "room destroyed"), then `roomDestroyed`. The node closes
    /// the transports (`allConnections`) and drops the room after draining these events.
    public func destroy(now: MonoTime) {
        for p in participants.values.sorted(by: { $0.index < $1.index }) {
            events.append(.participantState(participant: p.id, state: .left, reason: "room destroyed"))
        }
        participants.removeAll()
        participantsByID.removeAll()
        tracks.removeAll()
        for c in connections.values { c.attached = false }
        connections.removeAll()
        recency.removeAll()
        pins.removeAll()
        floor = FloorState()
        events.append(.roomDestroyed)
    }

    /// The connections the room routes (the node closes them when the room or participant goes).
    public func connections(of id: String) -> [ConnectionID] {
        guard let i = participantsByID[id], let p = participants[i] else { return [] }
        return Array(Set([p.publishConnection, p.subscribeConnection].compactMap { $0 }))
    }

    public var allConnections: [ConnectionID] { Array(connections.keys) }

    /// The room's side of a transport, for a caller that routes many datagrams to it (see `Connection.attached`).
    public func connection(_ id: ConnectionID) -> Connection? { connections[id] }

    // MARK: Settings

    /// Changes settings live; talker lists and slots follow at once.
    public func update(now: MonoTime, into out: DatagramBatch, _ change: (inout RoomConfiguration) -> Void) throws(RoomError) {
        var c = configuration
        change(&c)
        try c.validate()
        guard c.mode == configuration.mode || floor.holder == nil else {
            throw RoomError(.invalidSetting, .conflict, "release the floor before changing the room mode")
        }
        if pins.count > c.maxActiveTalkers - 1 {
            throw RoomError(.pinLimitReached, .conflict,
                            "\(pins.count) users are pinned; unpin some before lowering max_active_talkers to \(c.maxActiveTalkers)")
        }
        let levelChanged = c.levelSource != configuration.levelSource
        configuration = c
        detector.configuration = c.detector
        if levelChanged { for t in tracks.values where t.kind == .audio { t.meter.setSource(c.levelSource) } }
        for p in participants.values { updateCandidacy(p) }
        refreshAllSubscribers(now: now, into: out)
    }

    /// The subscriber's own talker count (at most the room's max_active_talkers).
    public func setTalkerCount(_ id: String, _ count: Int?, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let p = try participant(id)
        if let t = count, !RoomConfiguration.maxActiveTalkersRange.contains(t) {
            throw RoomError(.invalidSetting, .invalid, "talker_count must be 1-12, got \(t)")
        }
        p.talkerCount = count
        refreshSubscriber(p, now: now, into: out)
    }

    /// The client reports its camera on or off (soft mute, from signaling).
    public func setVideoMuted(_ id: String, _ muted: Bool, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let p = try participant(id)
        p.videoMuted = muted
        refreshAllSubscribers(now: now, into: out)
    }
}
