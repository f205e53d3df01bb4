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
