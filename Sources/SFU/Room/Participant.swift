/// One participant of a room: who it is, what moderation says of it, and its two transports' media - what it
/// publishes (`publisher`) and what it receives (`subscriber`), each absent until an offer binds it.
final class Participant {
    let id: String
    let index: Int
    var name: String
    var role: Role
    var talkerCount: Int?
    var hardMutedAudio = false
    var hardMutedVideo = false
    /// Admitted to a knock-enabled room and not let in yet: it sends nothing onward and receives nothing.
    var awaited = false
    /// The client says its camera is off (signaling); stale video also counts as off.
    var videoMuted = false
    var publisher: Publisher?
    var subscriber: Subscriber?
    /// Drops counted on connections this participant no longer has (replaced or closed transports).
    var retiredDrops = DropCounters()
    /// The node a remote participant publishes on (its media comes over the relay from there); nil for a
    /// participant of this node. A remote participant is never relayed onwards. Fixed at admission: the
    /// roster counts this node's own and other nodes' participants apart.
    let origin: String?

    init(id: String, index: Int, name: String, role: Role, talkerCount: Int?, origin: String? = nil) {
        self.id = id
        self.origin = origin
        self.index = index
        self.name = name
        self.role = role
        self.talkerCount = talkerCount
    }

    /// Its audio track, camera and screen layers (empty when it publishes none).
    var audioTrack: PublishedTrack? { publisher?.audio }
    func tracks(_ source: VideoSource) -> [PublishedTrack] { publisher?.tracks(source) ?? [] }
    var videoTracks: [PublishedTrack] { publisher?.videoTracks ?? [] }
}
