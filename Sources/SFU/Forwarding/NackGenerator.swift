/// Which packets of a publisher's stream went missing and when to ask for them (RFC 4585 section 6.2.1
/// generic NACK; the publisher answers with RTX, RFC 4588). A gap in the sequence numbers marks its packets
/// missing; each is asked for at once, then again every round trip (never sooner than `minRetryInterval`),
/// at most `maxRetries` times and for at most `maxAge`; one that arrives, original or repaired, is
/// forgotten. A gap wider than `maxGap` is not asked for packet by packet: the caller requests a keyframe.
/// The list is bounded (`maxMissing`): what a lying or broken publisher can make the node remember.
public struct NackGenerator: Sendable {
    public enum Gap: Equatable, Sendable { case none, nacking, tooWide }

    struct Missing {
        var sequence: Int64
        var since: MonoTime
        var lastAsked: MonoTime?
        var retries: Int
    }

    public var maxGap = 100
    public var maxMissing = 300
    public var maxRetries = 10
    public var maxAge: MonoTime.Interval = .seconds(1)
    public var minRetryInterval: MonoTime.Interval = .milliseconds(20)
    private var missing: [Missing] = []
    private var highest: Int64?
    public private(set) var nacksSent: UInt64 = 0
    public private(set) var recovered: UInt64 = 0
    /// The round trip to the publisher as repairs show it (first NACK to its RTX), smoothed; 100 ms until
    /// one is seen. It spaces the retries.
    public private(set) var rtt: MonoTime.Interval = .milliseconds(100)

    public init() {}

    public var missingCount: Int { missing.count }

    /// Notes a packet (extended sequence number) that arrived, original or repaired.
    @discardableResult
    public mutating func received(_ ext: Int64, now: MonoTime) -> Gap {
        guard let h = highest else { highest = ext; return .none }
        if ext <= h {
            if let i = missing.firstIndex(where: { $0.sequence == ext }) {
                missing.remove(at: i)
                recovered &+= 1
            }
            return .none
        }
        highest = ext
        let gap = ext - h - 1
        guard gap > 0 else { return .none }
        guard gap <= Int64(maxGap) else {
            missing.removeAll()
            return .tooWide
        }
        for s in (h + 1)..<ext { missing.append(Missing(sequence: s, since: now, lastAsked: nil, retries: 0)) }
        if missing.count > maxMissing { missing.removeFirst(missing.count - maxMissing) }
        return .nacking
    }

    /// A repair (RTX) arrived for `ext`: true when it was missing (now recovered), false for a duplicate.
    public mutating func repaired(_ ext: Int64, now: MonoTime? = nil) -> Bool {
        guard let i = missing.firstIndex(where: { $0.sequence == ext }) else { return false }
        if let now, missing[i].retries == 1, let asked = missing[i].lastAsked {
            let sample = min(max(now - asked, .milliseconds(5)), .seconds(1))
            rtt = .init(nanoseconds: (rtt.nanoseconds * 7 + sample.nanoseconds) / 8)
        }
        missing.remove(at: i)
        recovered &+= 1
        return true
    }

    /// Sequence numbers to NACK at `now` (the first time, or again after a round trip), oldest first; drops
    /// the ones asked for too often or too long.
    public mutating func due(now: MonoTime, rtt: MonoTime.Interval) -> [UInt16] {
        let interval = max(rtt, minRetryInterval)
        missing.removeAll { $0.retries >= maxRetries || now - $0.since >= maxAge }
        var out: [UInt16] = []
        for i in missing.indices {
            if let last = missing[i].lastAsked, now - last < interval { continue }
            missing[i].lastAsked = now
            missing[i].retries += 1
            out.append(UInt16(truncatingIfNeeded: missing[i].sequence))
        }
        nacksSent &+= UInt64(out.count)
        return out
    }

    /// When `due` next has something to ask, for the room's timer.
    public func nextDeadline(rtt: MonoTime.Interval) -> MonoTime {
        let interval = max(rtt, minRetryInterval)
        return missing.reduce(MonoTime.never) { m, x in min(m, x.lastAsked.map { $0 + interval } ?? x.since) }
    }
}
