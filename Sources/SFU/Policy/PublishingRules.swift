/// Who may be heard and seen, from the room's mode and moderation (EnableX semantics, `shared/seeds/`):
/// moderators and, in lecture mode, the floor holder may publish (everyone may in group mode); a hard mute
/// of the participant, or a room mute for everyone but moderators, silences its audio. What these refuse is
/// dropped at ingress, before anything is forwarded.
struct PublishingRules {
    var mode: RoomConfiguration.Mode
    var floorHolder: Int?
    var roomAudioMuted: Bool

    func mayPublish(_ p: Participant) -> Bool { !p.awaited && (mode == .group || p.role == .moderator || floorHolder == p.index) }

    func audioAllowed(_ p: Participant) -> Bool {
        mayPublish(p) && !p.hardMutedAudio && !(roomAudioMuted && p.role != .moderator)
    }

    func videoAllowed(_ p: Participant) -> Bool { mayPublish(p) && !p.hardMutedVideo }

    /// Why a participant's packet of `kind` may not leave, if it may not.
    func refusal(_ p: Participant, _ kind: MediaKind) -> DropReason? {
        if p.awaited { return .awaited }
        if !mayPublish(p) { return .noFloor }
        if kind == .audio { return audioAllowed(p) ? nil : .hardMuted }
        return p.hardMutedVideo ? .hardMuted : nil
    }
}
