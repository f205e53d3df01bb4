/// One moderator command, as the control API takes it - and as a node that is not a room's home hands it to
/// the home, which alone decides (issue 25; docs/cluster.md, "Moderation room-wide"): one value, so that a
/// command runs the same wherever it was issued and crosses between nodes whole.
public enum ModerationCommand: Sendable, Equatable {
    case roomHardMute(audio: Bool)
    /// `nil` leaves that kind as it is.
    case hardMute(target: String, audio: Bool?, video: Bool?)
    case pin([String])
    case unpin([String])
    case floor(FloorAction, target: String?)
    case lock(Bool)
    case role(target: String, Role)
}

/// What the control API answers after a command: the room's pins and hands once it applied.
public struct ModerationOutcome: Sendable, Equatable {
    public var pinned: [String]
    public var raisedHands: [String]
    public var approvedHands: [String]
}

extension Room {
    /// Runs one moderator command issued by participant `by` (the seeds' rules and codes: `Room+Moderation`).
    /// The issuer and a floor command's action are noted in the moderation state the other nodes of the room
    /// get, so that each tells its own clients who did what.
    @discardableResult
    public func moderate(_ command: ModerationCommand, by: String, now: MonoTime, into out: DatagramBatch) throws(RoomError) -> ModerationOutcome {
        switch command {
        case .roomHardMute(let audio): try hardMuteRoom(by: by, audio: audio, now: now, into: out)
        case .hardMute(let target, let audio, let video): try hardMute(by: by, target: target, audio: audio, video: video, now: now, into: out)
        case .pin(let ids): try pin(by: by, ids, now: now, into: out)
        case .unpin(let ids): try unpin(by: by, ids, now: now, into: out)
        case .floor(let action, let target): try floor(by: by, action: action, target: target, now: now, into: out)
        case .lock(let locked): try lock(by: by, locked: locked)
        case .role(let target, let role): try setRole(by: by, target: target, role: role, now: now, into: out)
        }
        home.lastModerator = by
        if case .floor(let action, let target) = command {
            home.lastFloorCommand = .init(action: action, by: by, target: target, epoch: home.epoch, version: moderation.version)
        }
        return moderationOutcome
    }

    public var moderationOutcome: ModerationOutcome {
        ModerationOutcome(pinned: pinned, raisedHands: raisedHands, approvedHands: approvedHands)
    }
}
