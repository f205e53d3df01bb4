import SFU

extension String {
    /// At most `bytes` of UTF-8, cut at the end of a character.
    func clipped(toUTF8Bytes bytes: Int) -> String {
        guard utf8.count > bytes else { return self }
        var out = ""
        var used = 0
        for c in self {
            let n = c.utf8.count
            guard used + n <= bytes else { break }
            out.append(c)
            used += n
        }
        return out
    }
}

/// One member of a room at a node, as it crosses in `streams`.
struct WireMember: Codable {
    var participant: String
    var name: String
    var role: Role

    init(_ m: RelayedMember) {
        participant = m.participant
        name = Check.name(m.name)
        role = m.role
    }

    func member() throws -> RelayedMember {
        RelayedMember(participant: try Check.id(participant, "participant"), name: Check.name(name), role: role)
    }
}

/// A moderator command as it crosses: `op` and the fields that op takes, each checked on the way in.
struct WireCommand: Codable {
    var op: String
    var audio: Bool?
    var video: Bool?
    var target: String?
    var ids: [String]?
    var action: FloorAction?
    var locked: Bool?
    var role: Role?

    init(_ c: ModerationCommand) {
        switch c {
        case .roomHardMute(let audio):
            op = "room_hard_mute"
            self.audio = audio
        case .hardMute(let target, let audio, let video):
            op = "hard_mute"
            self.target = target
            self.audio = audio
            self.video = video
        case .pin(let ids):
            op = "pin"
            self.ids = ids
        case .unpin(let ids):
            op = "unpin"
            self.ids = ids
        case .floor(let action, let target):
            op = "floor"
            self.action = action
            self.target = target
        case .lock(let locked):
            op = "lock"
            self.locked = locked
        case .role(let target, let role):
            op = "role"
            self.target = target
            self.role = role
        }
    }

    func command() throws -> ModerationCommand {
        func need<T>(_ v: T?, _ field: String) throws -> T {
            guard let v else { throw RelayMessageError("\(op) needs \(field)") }
            return v
        }
        let target = try self.target.map { try Check.id($0, "target") }
        switch op {
        case "room_hard_mute": return .roomHardMute(audio: try need(audio, "audio"))
        case "hard_mute": return .hardMute(target: try need(target, "target"), audio: audio, video: video)
        case "pin": return .pin(try Check.ids(try need(ids, "ids"), "ids"))
        case "unpin": return .unpin(try Check.ids(try need(ids, "ids"), "ids"))
        case "floor": return .floor(try need(action, "action"), target: target)
        case "lock": return .lock(try need(locked, "locked"))
        case "role": return .role(target: try need(target, "target"), try need(role, "role"))
        default: throw RelayMessageError("unknown command \(op.prefix(32))")
        }
    }
}

/// A command the home refused, or could not take: the code and message its control API would have answered.
public struct RelayCommandError: Sendable, Equatable, Codable, Error {
    public enum Kind: String, Sendable, Codable {
        case unauthorized, notFound = "not_found", conflict, invalid
        /// The receiver is not the room's home (any more), or has no such room: nothing was decided.
        case unavailable
    }

    public var code: Int
    public var kind: Kind
    public var message: String

    public init(code: Int, kind: Kind, message: String) {
        self.code = code
        self.kind = kind
        self.message = message.clipped(toUTF8Bytes: RelayMessage.maxIDBytes)
    }

    init(_ e: RoomError) {
        let kind: Kind = switch e.kind {
        case .unauthorized: .unauthorized
        case .notFound: .notFound
        case .conflict: .conflict
        case .invalid: .invalid
        }
        self.init(code: e.code.rawValue, kind: kind, message: e.message)
    }

    /// A refusal of this node's API, for the node that asked.
    init(_ e: APIError) {
        let kind: Kind = switch e.status {
        case .forbidden, .unauthorized: .unauthorized
        case .notFound: .notFound
        case .conflict: .conflict
        case .badRequest: .invalid
        default: .unavailable
        }
        self.init(code: e.code, kind: kind, message: e.message)
    }

    /// What the node that forwarded the command answers its caller: the home's refusal as the home's own API
    /// would have put it, or 503 (6022) when the home could not decide.
    var apiError: APIError {
        let status: APIError.Status = switch kind {
        case .unauthorized: .forbidden
        case .notFound: .notFound
        case .conflict: .conflict
        case .invalid: .badRequest
        case .unavailable: .serviceUnavailable
        }
        return APIError(status, code: kind == .unavailable ? 6022 : code, message)
    }
}
