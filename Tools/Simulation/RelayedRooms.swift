import SFU

/// Two nodes' rooms of one room that spans nodes, joined by their relays, on one virtual clock (issue 25;
/// docs/cluster.md, Relays): what each relay sends crosses to the other room's relay connection (its end of
/// the link protects it, as the peer node would), and after each step each side binds what the other
/// describes; with `following`, node B plans its slots from node A's (the home's) ranking and applies its
/// moderation. The control channel a running node would use is these calls.
public final class RelayedRooms {
    public let a: RoomHarness
    public let b: RoomHarness
    /// The relay A sends on (the client is B's end of it), and the one B sends on.
    public let ab: SimulatedClient
    public let ba: SimulatedClient
    public var following: Bool
    /// Datagrams that crossed each way (RTP and RTCP).
    public private(set) var toB = 0
    public private(set) var toA = 0
    /// RTP packets that crossed each way.
    public private(set) var rtpToB = 0
    public private(set) var rtpToA = 0

    public init(configuration: RoomConfiguration, following: Bool = false) throws {
        a = try RoomHarness(configuration: configuration, name: "standup")
        b = try RoomHarness(configuration: configuration, name: "standup")
        ab = try a.relay(to: "node-b")
        ba = try b.relay(to: "node-a")
        self.following = following
        // What each relay sends, as it arrives at the link's far end (whether or not the harness keeps it).
        let (abID, baID) = (ab.connection, ba.connection)
        let (onA, onB) = (a.onReceive, b.onReceive)
        a.onReceive = { [unowned self] c, p in
            if c == abID { pendingToB.append(p) }
            onA?(c, p)
        }
        b.onReceive = { [unowned self] c, p in
            if c == baID { pendingToA.append(p) }
            onB?(c, p)
        }
    }

    private var pendingToB: [[UInt8]] = []
    private var pendingToA: [[UInt8]] = []

    /// 20 ms of virtual time on both nodes, then the link and the control channel.
    public func step() throws {
        a.advance(by: 20)
        b.advance(by: 20)
        let (sendB, sendA) = (pendingToB, pendingToA)
        pendingToB.removeAll(keepingCapacity: true)
        pendingToA.removeAll(keepingCapacity: true)
        for p in sendB {
            toB += 1
            if !p.withUnsafeBytes({ isRTCP($0) }) { rtpToB += 1 }
            b.send(p, from: ba)
        }
        for p in sendA {
            toA += 1
            if !p.withUnsafeBytes({ isRTCP($0) }) { rtpToA += 1 }
            a.send(p, from: ab)
        }
        // Who is in the room at each node, then what each relays (one `streams` message each way).
        b.room.relays.receiveMembers(a.room.relays.localMembers, from: "node-a")
        a.room.relays.receiveMembers(b.room.relays.localMembers, from: "node-b")
        try b.room.relays.receive(a.room.relays.carried(to: "node-b") ?? [], from: "node-a", now: b.now, into: b.batch)
        try a.room.relays.receive(b.room.relays.carried(to: "node-a") ?? [], from: "node-b", now: a.now, into: a.batch)
        if following {
            // The control channel between nodes of one data centre takes a millisecond, not a 20 ms step: B
            // applies the home's ranking and moderation at once.
            b.room.home.followRanking(a.room.home.shareRanking())
            b.room.home.applyModeration(a.room.home.moderationState, now: b.now, into: b.batch)
            b.advance(to: b.now)
        }
    }
}
