/// What moderators decided for the whole room (EnableX semantics, `shared/seeds/000_*` and `002_*`): pins,
/// the lock, the room-wide audio hard mute and the lecture floor. Pure state with the rules of each command:
/// it throws the seeds' codes for a command that may not apply now, and otherwise changes and counts a new
/// `version`. The room applies what follows (events, who may publish, slots).
///
/// Kept apart from the media so that it can be carried whole: a room that spans nodes (issue 25) has one
/// moderation state, applied by every node of the room, the newest version winning.
/// Per-participant hard mutes and roles stay on `Participant`, with the participant they belong to.
struct Moderation: Equatable {
    private(set) var pins: [Int] = []
    private(set) var locked = false
    private(set) var roomAudioMuted = false
    private(set) var floor = FloorState()
    /// Moves with every change.
    private(set) var version: UInt64 = 0

    func rules(mode: RoomConfiguration.Mode) -> PublishingRules {
        PublishingRules(mode: mode, floorHolder: floor.holder, roomAudioMuted: roomAudioMuted)
    }

    /// Only a moderator in force issues moderator commands: one awaited in a knock-enabled room is none, whatever
    /// its role says (a role the home's state or a rejoin gave it while it waited must not let it approve itself).
    static func requireModerator(_ p: Participant, _ code: ResultCode) throws(RoomError) {
        guard p.role == .moderator else { throw RoomError(code, .unauthorized, "\(p.id) is not a moderator") }
        guard !p.awaited else { throw RoomError(code, .unauthorized, "\(p.id) waits to be let in: it may not moderate") }
    }

    mutating func setRoomAudioMuted(_ mute: Bool) throws(RoomError) {
        if mute && roomAudioMuted { throw RoomError(.roomAlreadyMuted, .conflict, "room is already hard-muted") }
        if !mute && !roomAudioMuted { throw RoomError(.roomAlreadyUnmuted, .conflict, "room is not hard-muted") }
        roomAudioMuted = mute
        version &+= 1
    }

    mutating func setLocked(_ lock: Bool) throws(RoomError) {
        if lock && locked { throw RoomError(.roomAlreadyLocked, .conflict, "room is already locked") }
        if !lock && !locked { throw RoomError(.roomAlreadyUnlocked, .conflict, "room is already unlocked") }
        locked = lock
        version &+= 1
    }

    /// Pins are always in every list (talkers first, then pinned non-talkers): at most K - 1 of them, so that
    /// one place is left for whoever speaks.
    mutating func pin(_ indices: [Int], maxActiveTalkers: Int) throws(RoomError) {
        var next = pins
        for i in indices where !next.contains(i) { next.append(i) }
        guard next.count <= maxActiveTalkers - 1 else {
            throw RoomError(.pinLimitReached, .conflict, "at most \(maxActiveTalkers - 1) users can be pinned (max_active_talkers - 1)")
        }
        pins = next
        version &+= 1
    }

    mutating func unpin(_ indices: Set<Int>) {
        pins.removeAll { indices.contains($0) }
        version &+= 1
    }

    /// A lower max_active_talkers must still leave room for the pins.
    func checkPins(fit maxActiveTalkers: Int) throws(RoomError) {
        guard pins.count <= maxActiveTalkers - 1 else {
            throw RoomError(.pinLimitReached, .conflict,
                            "\(pins.count) users are pinned; unpin some before lowering max_active_talkers to \(maxActiveTalkers)")
        }
    }

    /// The floor protocol (`FloorState.apply`). Returns the holders before and after: a change of holder
    /// changes who may publish.
    mutating func floor(_ action: FloorAction, caller: Participant, target: Participant?,
                        targetID: String?) throws(RoomError) -> (before: Int?, after: Int?) {
        let before = floor.holder
        try floor.apply(action, caller: caller, target: target, targetID: targetID)
        version &+= 1
        return (before, floor.holder)
    }

    /// A moderator changed a participant's hard mute or role (kept on the participant): the state the other
    /// nodes get changed all the same.
    mutating func participantChanged() { version &+= 1 }

    /// A participant left: its pin and its place on the floor go. Returns whether the pins changed.
    mutating func forget(_ index: Int) -> Bool {
        let pinned = pins.contains(index)
        pins.removeAll { $0 == index }
        floor.forget(index)
        version &+= 1
        return pinned
    }

    /// A moderator promoted to hand over the role leaves the floor protocol's participant side.
    mutating func forgetFloor(_ index: Int) {
        floor.forget(index)
        version &+= 1
    }

    /// The room ended: pins and floor go; lock and room mute, settings of the room itself, stay.
    mutating func endMembership() {
        pins.removeAll()
        floor = FloorState()
        version &+= 1
    }
}

/// A room's moderation as the nodes of a room that spans nodes exchange it (issue 25; docs/cluster.md): the
/// home's `Moderation` with participants named by id (indices are each node's own), and the per-participant
/// hard mutes, which each node enforces for its own participants at ingress. A node applies a state newer than
/// the one it has (`RoomHome.applyModeration`).
///
/// JSON (Codable, snake_case keys) is how it is saved in the registry (`sfu_room_moderation`), so a new home
/// goes on from it after a take-over.
public struct ModerationState: Sendable, Equatable, Codable {
    public struct HardMute: Sendable, Equatable, Codable {
        public var audio: Bool
        public var video: Bool
        public init(audio: Bool, video: Bool) {
            self.audio = audio
            self.video = video
        }
    }

    /// The epoch of the home that issued it (the registry's; 0 outside a cluster): a new home's states are
    /// newer than any of its predecessor's, whatever their versions.
    public var epoch: Int64
    public var version: UInt64
    public var pinned: [String]
    public var locked: Bool
    public var roomAudioMuted: Bool
    public var raisedHands: [String]
    public var floorHolder: String?
    public var invited: [String]
    /// Participants a moderator hard-muted (one kind or both), by id.
    public var hardMuted: [String: HardMute]
    /// Who was in the room (a locked room taken over by a new home lets them back in).
    public var members: [String]
    /// Which of `members` are moderators (nil: the state says nothing of roles - one saved before roles were
    /// carried). A role is the home's once a participant is in the room there: its own node takes it from here.
    public var moderators: [String]?
    /// Who issued the command that made this version, and the last floor command: what a node that applies
    /// the state tells its own clients.
    public var by: String?
    public var floorCommand: FloorCommand?

    public struct FloorCommand: Sendable, Equatable, Codable {
        public var action: FloorAction
        public var by: String
        public var target: String?
        /// The home's epoch and the version the command made: a node tells its clients of it once.
        public var epoch: Int64
        public var version: UInt64
        public init(action: FloorAction, by: String, target: String?, epoch: Int64 = 0, version: UInt64 = 0) {
            self.action = action
            self.by = by
            self.target = target
            self.epoch = epoch
            self.version = version
        }

        enum CodingKeys: String, CodingKey { case action, by, target, epoch, version }

        /// `epoch` and `version` may be absent (a state saved before they were written): 0.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            action = try c.decode(FloorAction.self, forKey: .action)
            by = try c.decode(String.self, forKey: .by)
            target = try c.decodeIfPresent(String.self, forKey: .target)
            epoch = try c.decodeIfPresent(Int64.self, forKey: .epoch) ?? 0
            version = try c.decodeIfPresent(UInt64.self, forKey: .version) ?? 0
        }

        /// Whether it came after the state a node applied before (nil: none).
        func isNewer(than state: ModerationState?) -> Bool {
            guard let state else { return true }
            return (epoch, version) > (state.epoch, state.version)
        }
    }

    enum CodingKeys: String, CodingKey {
        case epoch, version, pinned, locked, invited, moderators, by
        case roomAudioMuted = "room_audio_muted"
        case raisedHands = "raised_hands"
        case floorHolder = "floor_holder"
        case hardMuted = "hard_muted"
        case floorCommand = "floor_command"
        case members
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        epoch = try c.decodeIfPresent(Int64.self, forKey: .epoch) ?? 0
        version = try c.decode(UInt64.self, forKey: .version)
        pinned = try c.decodeIfPresent([String].self, forKey: .pinned) ?? []
        locked = try c.decodeIfPresent(Bool.self, forKey: .locked) ?? false
        roomAudioMuted = try c.decodeIfPresent(Bool.self, forKey: .roomAudioMuted) ?? false
        raisedHands = try c.decodeIfPresent([String].self, forKey: .raisedHands) ?? []
        floorHolder = try c.decodeIfPresent(String.self, forKey: .floorHolder)
        invited = try c.decodeIfPresent([String].self, forKey: .invited) ?? []
        hardMuted = try c.decodeIfPresent([String: HardMute].self, forKey: .hardMuted) ?? [:]
        members = try c.decodeIfPresent([String].self, forKey: .members) ?? []
        moderators = try c.decodeIfPresent([String].self, forKey: .moderators)
        by = try c.decodeIfPresent(String.self, forKey: .by)
        floorCommand = try c.decodeIfPresent(FloorCommand.self, forKey: .floorCommand)
    }

    public init(epoch: Int64 = 0, version: UInt64, pinned: [String] = [], locked: Bool = false, roomAudioMuted: Bool = false, raisedHands: [String] = [],
                floorHolder: String? = nil, invited: [String] = [], hardMuted: [String: HardMute] = [:], members: [String] = [],
                moderators: [String]? = nil, by: String? = nil, floorCommand: FloorCommand? = nil) {
        self.epoch = epoch
        self.version = version
        self.pinned = pinned
        self.locked = locked
        self.roomAudioMuted = roomAudioMuted
        self.raisedHands = raisedHands
        self.floorHolder = floorHolder
        self.invited = invited
        self.hardMuted = hardMuted
        self.members = members
        self.moderators = moderators
        self.by = by
        self.floorCommand = floorCommand
    }

    /// Whether it is newer than `other`: a later home's, or the same home's later version.
    public func isNewer(than other: ModerationState?) -> Bool {
        guard let other else { return true }
        return (epoch, version) > (other.epoch, other.version)
    }
}

extension Moderation {
    /// The state another node sent, in this node's indices (`index` maps an id to a participant here; one it
    /// does not know is left out: it is not in this node's room, or not yet).
    init(_ s: ModerationState, index: (String) -> Int?) {
        pins = s.pinned.compactMap(index)
        locked = s.locked
        roomAudioMuted = s.roomAudioMuted
        floor = FloorState(raised: s.raisedHands.compactMap(index), holder: s.floorHolder.flatMap(index), invited: s.invited.compactMap(index))
        version = s.version
    }
}
