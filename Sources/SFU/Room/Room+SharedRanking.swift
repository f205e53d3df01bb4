/// One ranking for a room that spans nodes (issue 25; docs/cluster.md, Relays): the room's home elects talkers
/// from its own and the relayed levels and hands its order to the other nodes; each maps its subscribers' slots
/// from it, so every subscriber in the room sees the same talkers in the same order. What a node relays stays
/// its own election's local top K: a talker of its own must reach the home before the home can rank it.
extension Room {
    /// This room's talker order - the one its lists were last built from - participants by id, to hand to the
    /// other nodes of the room. A method, not a property: it numbers what it hands out, so `version` moves
    /// when the order or a flag changed since the last call (`epoch` is the shell's: the registry's epoch of
    /// the room's home).
    public func shareRanking() -> SharedRanking {
        let order = listedOrder ?? RoomRanking.TalkerOrder(election)
        let id = { (i: Int) in self.participants[i]?.id }
        var r = SharedRanking(epoch: 0, version: 0, recency: order.recency.compactMap(id),
                              speaking: order.recency.filter { order.speaking.contains($0) }.compactMap(id),
                              young: order.recency.filter { order.young.contains($0) }.compactMap(id), dominant: order.dominant.flatMap(id))
        if let last = lastShared, last.sameOrder(as: r) { return last }
        r.version = (lastShared?.version ?? 0) &+ 1
        lastShared = r
        return r
    }

    /// Follows the home's ranking (nil: this room ranks on its own again). A ranking older than the one
    /// followed (lower epoch, or same epoch and a version not newer) is ignored; the lists follow at once, and
    /// a new dominant speaker is reported as the home's.
    /// The relay from the room's home closed (the home's room ended, or the home died): this room ranks on
    /// its own again and takes the next home's ranking and moderation whatever their numbers (a room of the same
    /// name made again at the home numbers them from 1 again).
    public func stopFollowingHome() {
        followRanking(nil)
        appliedModeration = nil
    }

    @discardableResult
    public func followRanking(_ r: SharedRanking?) -> Bool {
        if let r, let f = followed, (r.epoch, r.version) <= (f.epoch, f.version) { return false }
        let before = (followed?.dominant, followed == nil ? election.dominant.flatMap { participants[$0]?.id } : nil)
        followed = r
        let now = r?.dominant ?? (r == nil ? election.dominant.flatMap { participants[$0]?.id } : nil)
        if (before.0 ?? before.1) != now { effects.events.append(.dominantSpeaker(participant: now)) }
        listsChanged()
        return true
    }
}

/// A room's talker order as its home hands it to the other nodes of the room: participants by id, most recent
/// first, who of them speaks, who only just started, and the dominant speaker.
public struct SharedRanking: Sendable, Equatable {
    public var epoch: Int64
    public var version: UInt64
    public var recency: [String]
    public var speaking: [String]
    public var young: [String]
    public var dominant: String?

    public init(epoch: Int64, version: UInt64, recency: [String], speaking: [String], young: [String], dominant: String?) {
        self.epoch = epoch
        self.version = version
        self.recency = recency
        self.speaking = speaking
        self.young = young
        self.dominant = dominant
    }

    func sameOrder(as o: SharedRanking) -> Bool {
        recency == o.recency && speaking == o.speaking && young == o.young && dominant == o.dominant
    }
}
