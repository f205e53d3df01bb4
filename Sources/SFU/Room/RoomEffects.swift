/// What a room's parts produce besides datagrams, kept by reference so that each part - a publisher, a
/// published track, a slot, a subscriber - reports into it directly: counts (every drop by reason), events
/// for the control plane, when the room next has work to do, and that subscribers' talker lists need
/// rebuilding. The room drains the events and reads the rest; it never has to ask each part.
///
/// Wake-ups: each part that sets itself a time (a slot's silence frames, a track's key frame retry or NACK,
/// a publisher's reports, a probe, the talker detector) asks for a wake-up at it; `nextDeadline` is the
/// earliest asked for. At each tick the room starts over (`resetWakeups`) and every part asks again for what
/// it still needs, so a time that only got later is forgotten there, and nothing invalidates a cache by hand.
final class RoomEffects {
    var counters = RoomCounters()
    var events: [RoomEvent] = []
    /// Talker lists and slot maps are to be rebuilt at the next tick (something they depend on changed).
    var listsDirty = false
    private(set) var nextWakeup: MonoTime = .never

    /// A drop that is no participant's doing (egress full, a layer not sent).
    @inline(__always) func drop(_ reason: DropReason) { counters.drops.count(reason) }

    /// A drop of something `conn` sent: counted for the room and for the connection's participant.
    @inline(__always) func drop(_ reason: DropReason, _ conn: Connection) {
        counters.drops.count(reason)
        conn.drops.count(reason)
    }

    /// Work at `t` (or sooner).
    @inline(__always) func wake(at t: MonoTime) {
        if t < nextWakeup { nextWakeup = t }
    }

    func resetWakeups() { nextWakeup = .never }
}

/// Counters the room keeps for stats and metrics.
public struct RoomCounters: Sendable, Equatable {
    public var packetsIn: UInt64 = 0
    public var bytesIn: UInt64 = 0
    public var packetsOut: UInt64 = 0
    public var bytesOut: UInt64 = 0
    public var rtcpIn: UInt64 = 0
    public var rtcpOut: UInt64 = 0
    public var keyframeRequestsSent: UInt64 = 0
    public var retransmissions: UInt64 = 0
    /// Padding-only packets sent under the number of a late packet a slot leaves out (`SlotSender.fillWithPadding`),
    /// first or again when NACKed.
    public var gapsFilled: UInt64 = 0
    /// Repairs (RTX) publishers sent for packets the node NACKed, and padding-only packets (their probes).
    public var repairsIn: UInt64 = 0
    public var paddingIn: UInt64 = 0
    /// NACK packets the node sent publishers, and padding bytes it sent subscribers to probe their downlink.
    public var nacksSent: UInt64 = 0
    public var probeBytesSent: UInt64 = 0
    public var dominantSpeakerChanges: UInt64 = 0
    /// MID- or RID-bound tracks that followed their sender to a new SSRC.
    public var ssrcRebinds: UInt64 = 0
    /// Slots of any subscriber that took a new participant (a talker switch as the subscriber sees it).
    public var slotSwitches: UInt64 = 0
    /// Audio slots that took a talker over as it started speaking and sent its utterance from the onset
    /// (`SlotSender.replayOnset`), the packets they sent so, and those skipped for want of room in the batch.
    public var onsetReplays: UInt64 = 0
    public var onsetReplayedPackets: UInt64 = 0
    public var onsetReplaysSkipped: UInt64 = 0
    public var drops = DropCounters()
    public init() {}

    /// Adds another room's counters: the node keeps destroyed rooms' totals so its metrics never go back.
    public mutating func add(_ o: RoomCounters) {
        packetsIn &+= o.packetsIn
        bytesIn &+= o.bytesIn
        packetsOut &+= o.packetsOut
        bytesOut &+= o.bytesOut
        rtcpIn &+= o.rtcpIn
        rtcpOut &+= o.rtcpOut
        keyframeRequestsSent &+= o.keyframeRequestsSent
        onsetReplays &+= o.onsetReplays
        onsetReplayedPackets &+= o.onsetReplayedPackets
        onsetReplaysSkipped &+= o.onsetReplaysSkipped
        retransmissions &+= o.retransmissions
        gapsFilled &+= o.gapsFilled
        repairsIn &+= o.repairsIn
        paddingIn &+= o.paddingIn
        nacksSent &+= o.nacksSent
        probeBytesSent &+= o.probeBytesSent
        dominantSpeakerChanges &+= o.dominantSpeakerChanges
        ssrcRebinds &+= o.ssrcRebinds
        slotSwitches &+= o.slotSwitches
        for r in DropReason.allCases { drops[r] &+= o.drops[r] }
    }
}
