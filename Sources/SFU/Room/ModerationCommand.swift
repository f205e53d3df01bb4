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
