/// One conference room: the sans-IO media engine for its participants.
///
/// Inputs are calls with the caller's `now`: control calls (admit, publish, subscribe, moderation), datagrams
/// from connections (`receive`) and timer ticks (`tick`). Outputs are datagrams written into a
/// `DatagramBatch`, events drained with `drainEvents()`, and `nextDeadline`, the time by which `tick` should
/// run again. The room owns no socket, thread or clock; it is not thread-safe and lives on one worker.
///
/// The room keeps membership, ticks, the packet path and when to rebuild the lists; the work
/// is its parts': each participant's `Publisher` (ingress, its `PublishedTrack`s, feedback to it) and
/// `Subscriber` (its `SlotSender`s, its estimate, layers, probes), the `TalkerElection`, and the pure
/// `SlotPolicy` that says who each subscriber's slots show. Room-wide features are types of their own, each
/// owning its state and reaching the room through a few calls: `sessions` (the connection table and the
/// session calls), `moderation` (moderator commands, knock), `relays` (other nodes of the room), `home` (the
/// ranking and moderation shared with the room's home), `recorder`, `liveStream`, `tracks` (the track table)
/// and `downlinks` (what each subscriber asks for and its estimate allows). All report into the
/// room's `RoomEffects`: counts, events, and when they next need the room to tick.
public final class Room {
    public let name: String
    public internal(set) var configuration: RoomConfiguration
    public let limits: RoomLimits
    let effects = RoomEffects()
    public var counters: RoomCounters { effects.counters }

    var participants: Roster
    /// Every published track by index, and binding a publisher's tracks into the table (`RoomTracks`).
    private(set) lazy var tracks = RoomTracks(room: self)
    /// Every transport the room routes, by id (`RoomSessions`).
    public private(set) lazy var sessions = RoomSessions(room: self)
    /// Relays to the other nodes of the room, and those nodes' participants (`RoomRelays`).
    public private(set) lazy var relays = RoomRelays(room: self)
    private var nextNobodyIndexValue = 0

    var election: TalkerElection
    /// What the room follows of its home, or shares as the home, in a room that spans nodes (`RoomHome`).
    public private(set) lazy var home = RoomHome(room: self)
    /// Moderator commands and the room's moderation state (`RoomModeration`).
    public private(set) lazy var moderation = RoomModeration(room: self)
    public var locked: Bool { moderation.state.locked }
    public var roomAudioMuted: Bool { moderation.state.roomAudioMuted }
    /// The room's recording (`RoomRecording`), and the one under way if any.
    public private(set) lazy var recorder = RoomRecording(room: self)
    public var recording: RoomRecording.Status? { recorder.status }
    /// The room's live stream (`RoomLiveStream`), and the one under way if any.
    public private(set) lazy var liveStream = RoomLiveStream(room: self)
    public var streaming: RoomLiveStream.Status? { liveStream.status }
    /// What each subscriber is sent, as it asks and as its downlink allows (`RoomDownlinks`).
    public private(set) lazy var downlinks = RoomDownlinks(room: self)

    /// The SSRC the node uses as sender of its own RTCP (PLI, RR, REMB, NACK) towards publishers.
    static let nodeSSRC: UInt32 = 0x5346_5530  // "SFU0"
    public var nodeSSRC: UInt32 { Self.nodeSSRC }

    public init(name: String, configuration: RoomConfiguration = .init(), limits: RoomLimits = .init(),
                now: MonoTime) throws(RoomError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.limits = limits
        // Other nodes' participants: as many as each node the room may relay to holds of its own.
        let (remote, overflow) = limits.participants.multipliedReportingOverflow(by: max(limits.relays, 1))
        participants = Roster(capacity: limits.participants, remoteCapacity: overflow ? .max : remote)
        election = TalkerElection(detector: configuration.detector, now: now)
    }

    /// Tracks and the slots they feed hold each other (a track's consumers, a slot's source): a room let go
    /// without `destroy` (a test's, a fuzz target's) unties them so that they are freed with it.
    deinit {
        for p in participants.all {
            p.publisher?.endAll()
            p.subscriber?.unbind()
        }
        relays.releaseAll()
        sessions.releaseAll()
    }

    var rules: PublishingRules { moderation.state.rules(mode: configuration.mode) }

    public var pinned: [String] { pinnedIDs }
    var pinnedIDs: [String] { moderation.state.pins.compactMap { participants[$0]?.id } }
    public var raisedHands: [String] { moderation.state.floor.raised.compactMap { participants[$0]?.id } }
    public var approvedHands: [String] { moderation.state.floor.holder.flatMap { participants[$0]?.id }.map { [$0] } ?? [] }
    public var moderationOutcome: ModerationOutcome { ModerationOutcome(pinned: pinned, raisedHands: raisedHands, approvedHands: approvedHands) }
    /// Who waits to be let into a knock-enabled room, in the order they knocked: (id, name).
    public var awaitedParticipants: [(id: String, name: String)] { participants.inOrder.filter(\.awaited).map { ($0.id, $0.name) } }

    @discardableResult
    func requireModerator(_ by: String, _ code: ResultCode) throws(RoomError) -> Participant {
        let p = try participant(by)
        try Moderation.requireModerator(p, code)
        return p
    }

    // MARK: Events and time

    /// Events since the last call, oldest first.
    public func drainEvents() -> [RoomEvent] {
        guard !effects.events.isEmpty else { return [] }  // no allocation on the common, empty path
        defer { effects.events.removeAll() }
        return effects.events
    }

    public var hasPendingEvents: Bool { !effects.events.isEmpty }

    /// What the worker's scheduler (NodeIO's `RoomSchedule`) keeps on the room so that it finds it without a
    /// lookup and lists it once however many datagrams reach it in a pass. The room never reads it.
    public var schedulerMarks = SchedulerMarks()

    /// When `tick` should run next: the earliest any part asked for (a silence frame, a key frame retry, a
    /// report, a NACK, a probe, a video going stale, talker lists to rebuild) and the talker detector's next
    /// check. A room whose publishers are silent or absent has none (`.never`).
    public var nextDeadline: MonoTime { min(effects.nextWakeup, election.detector.nextDecision) }

    /// Runs what is due at `now`: every part does its due work and asks again for what it still needs.
    public func tick(now: MonoTime, into out: DatagramBatch) {
        effects.resetWakeups()
        if let outcome = election.decideIfDue(sustainedSpeech: configuration.sustainedSpeech, now: now) { apply(outcome) }
        for p in participants.all {
            if let pub = p.publisher {
                if pub.updateLiveness(staleAfter: configuration.videoStaleAfter, now: now) { effects.listsDirty = true }
                pub.sendDueFeedback(audioReserveKbps: configuration.audioReserveKbps, now: now, into: out)
                for t in pub.videoTracks { t.retryKeyframeRequest(now: now, into: out, effects: effects) }
            }
            if let s = p.subscriber {
                for slot in s.audioSlots { slot.sendDueSilence(now: now, into: out) }
                s.runProbes(audioReserveKbps: configuration.audioReserveKbps, moreVideos: { downlinks.bandwidthForMoreVideos(p, s, now: now) },
                            now: now, into: out)
            }
        }
        liveStream.keepAudioGoing(now: now, into: out)
        if effects.listsDirty { refreshAllSubscribers(now: now, into: out) }
    }

    /// Talker lists are to be rebuilt: at the next tick, which comes at once.
    func listsChanged() {
        effects.listsDirty = true
        effects.wake(at: .zero)
    }

    // MARK: Membership

    /// This node's own participants: those relayed from other nodes of a cluster are theirs (the node's load,
    /// its heartbeat to the registry and `sfu_participants` would count them twice, and a node holding a room's
    /// relayed talkers would look full to placement).
    public var participantCount: Int { participants.localCount }
    public func contains(participant id: String) -> Bool { participants.contains(id) }
    public var participantIDs: [String] { participants.inOrder.map(\.id) }

    func participant(_ id: String) throws(RoomError) -> Participant { try participants.participant(id) }

    /// Admits a participant. Refused while the room is locked, or when the ID is taken (`Roster.admit`).
    public func admit(_ id: String, name: String? = nil, role: Role = .participant, talkerCount: Int? = nil,
                      now: MonoTime) throws(RoomError) {
        // One held as another node's participant moved here (its node died, or it rejoined here first): this
        // node's own from now on; its old node's later descriptions of it are skipped.
        let locked = moderation.state.locked && !home.rejoins(id, now: now)
        if let moved = participants.lookup(id), moved.origin != nil {
            // Checked first: an admission refused leaves the other node's participant where it was.
            try participants.checkLocal(talkerCount: talkerCount, locked: locked, roomName: self.name)
            leave(moved, reason: "moved to this node")
            listsChanged()
        }
        let p = try participants.admit(id, name: name, role: role, talkerCount: talkerCount, locked: locked, roomName: self.name)
        home.reapply(for: p)
        home.restoreTakenOver(for: p)
        home.unpark(p)
        election.join(p.index)
        // The role in force decides whether it waits, not the one asked for: a rejoin may have given back a
        // moderator's role (`unpark`), or taken it (a moderator the home demoted waits like any participant).
        if configuration.knock && p.role != .moderator {
            moderation.knocked(p)
        } else {
            effects.events.append(.participantState(participant: id, state: .joined, reason: nil))
        }
        listsChanged()
    }

    /// Removes a participant: its tracks stop feeding slots, its connections are forgotten (the node closes
    /// the transports), pins and floor state referring to it are cleared. `by` must be a moderator when given.
    public func remove(_ id: String, by: String? = nil, reason: String? = nil, now: MonoTime,
                       into out: DatagramBatch) throws(RoomError) {
        if let by { try requireModerator(by, .dropUnauthorized) }
        let p = try participant(id)
        leave(p, reason: reason ?? (by.map { "dropped by \($0)" }))
        refreshAllSubscribers(now: now, into: out)
    }

    /// A participant goes (removed, or its relay closed): its media stops, its connections are let go, pins and
    /// floor places referring to it are cleared, and it is reported `left`. The caller rebuilds the lists.
    func leave(_ p: Participant, reason: String?) {
        tracks.unpublish(p)
        unsubscribe(p)
        sessions.releaseAll(of: p)
        participants.remove(p)
        relays.forget(p)
        election.leave(p.index)
        if moderation.state.forget(p.index) { effects.events.append(.pins(pinnedIDs)) }
        effects.events.append(.participantState(participant: p.id, state: .left, reason: reason))
    }

    /// Ends the room: every participant leaves (reason "room destroyed"), a recording and a live stream stop
    /// (`reason`: "room destroyed", or "node stopped" when the node stops), then `roomDestroyed`. The node closes
    /// the transports (`allConnections`) and drops the room after draining these events.
    public func destroy(now: MonoTime, reason: String = "room destroyed") {
        for p in participants.inOrder {
            effects.events.append(.participantState(participant: p.id, state: .left, reason: "room destroyed"))
            p.publisher?.endAll()
            p.subscriber?.unbind()
        }
        participants.removeAll()
        tracks.removeAll()
        recorder.destroy(reason: reason)
        liveStream.destroy(reason: reason)
        relays.releaseAll()
        sessions.releaseAll()
        election = TalkerElection(detector: configuration.detector, now: now)
        moderation.state.endMembership()
        effects.events.append(.roomDestroyed)
    }

    /// The index of a holder that is nobody (a relay, the live stream): below every participant's, never in
    /// the roster or a list.
    func nextNobodyIndex() -> Int {
        defer { nextNobodyIndexValue += 1 }
        return -1 - nextNobodyIndexValue
    }

    // MARK: Settings

    /// Changes settings live; talker lists and slots follow at once.
    public func update(now: MonoTime, into out: DatagramBatch, _ change: (inout RoomConfiguration) -> Void) throws(RoomError) {
        var c = configuration
        change(&c)
        try c.validate()
        guard c.mode == configuration.mode || moderation.state.floor.holder == nil else {
            throw RoomError(.invalidSetting, .conflict, "release the floor before changing the room mode")
        }
        try moderation.state.checkPins(fit: c.maxActiveTalkers)
        let levelChanged = c.levelSource != configuration.levelSource
        configuration = c
        election.detector.configuration = c.detector
        if levelChanged { tracks.setLevelSource(c.levelSource) }
        for p in participants.all { updateCandidacy(p) }
        refreshAllSubscribers(now: now, into: out)
    }

    /// The client reports its camera on or off (soft mute, from signaling).
    public func setVideoMuted(_ id: String, _ muted: Bool, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let p = try ownParticipant(id)
        p.videoMuted = muted
        refreshAllSubscribers(now: now, into: out)
    }
}
