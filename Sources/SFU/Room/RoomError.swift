/// Result codes of refused requests. Where the platforms the node imitates define a code (EnableX, see
/// `shared/seeds`), the same number is used; codes in the 6000 range are the node's own.
public enum ResultCode: Int, Sendable {
    case roomMuteUnauthorized = 5001
    case roomUnmuteUnauthorized = 5002
    case unauthorized = 5003  // pins, and floor calls made by the wrong role
    case grantFloorUnauthorized = 5004
    case denyFloorUnauthorized = 5005
    case releaseFloorUnauthorized = 5006
    case startRecordUnauthorized = 5007
    case stopRecordUnauthorized = 5008
    case hardMuteAudioUnauthorized = 5009
    case hardUnmuteAudioUnauthorized = 5010
    case hardMuteVideoUnauthorized = 5011
    case hardUnmuteVideoUnauthorized = 5012
    case recordStartInProgress = 5033
    case alreadyRecording = 5034
    case recordStopInProgress = 5035
    case notRecording = 5036
    case roomAlreadyMuted = 5038
    case roomAlreadyUnmuted = 5039
    case floorRequestPending = 5042
    case floorAlreadyGranted = 5044
    case invalidClientID = 5045
    case floorHeldByAnother = 5046
    case floorAlreadyGrantedUseRelease = 5048
    case floorNotHeld = 5050
    case notInLectureMode = 5067
    case switchRoleUnauthorized = 5085
    case lockUnauthorized = 5115
    case dropUnauthorized = 5116
    case roomAlreadyLocked = 5117
    case roomAlreadyUnlocked = 5118
    case streamStartInProgress = 5121
    case alreadyStreaming = 5122
    case streamStopInProgress = 5123
    case notStreaming = 5124
    case invalidStreamingConfiguration = 5125
    case undefinedClientIDs = 5126
    // The node's own.
    case pinLimitReached = 6001
    case roomLocked = 6002
    case participantExists = 6003
    case invalidSetting = 6004
    case invalidMediaDescription = 6005
    /// A cap of `RoomLimits` or of the node's limits (rooms, participants, slots, tracks, handshakes).
    case limitReached = 6006
}

/// A refused request: the code, what kind of refusal it is (the control API maps it to an HTTP status), and
/// a message for humans.
public struct RoomError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case unauthorized  // 403
        case notFound  // 404
        case conflict  // 409
        case invalid  // 400
    }

    public var code: ResultCode
    public var kind: Kind
    public var message: String
    /// For `limitReached`: which limit (its configuration key without the section), for metrics.
    public var limit: String?

    public init(_ code: ResultCode, _ kind: Kind, _ message: String, limit: String? = nil) {
        self.code = code
        self.kind = kind
        self.message = message
        self.limit = limit
    }

    public var description: String { "\(code.rawValue) \(message)" }
}
