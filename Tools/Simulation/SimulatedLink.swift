import SFU
import SFUMedia

/// One direction of a network path on virtual time: a bottleneck of `capacityBps` with a drop-tail queue
/// (a packet that would wait longer than `queueLimit` is dropped, as a router's full buffer does), a fixed
/// propagation delay, and random loss. What the shaped-link tests do with `tc tbf` and iptables, without a
/// kernel. With `burstBytes`, the bottleneck is a token bucket of that depth, as `tc tbf ... burst` is: after
/// a quiet spell that many bytes pass at once, before the rate applies.
public struct SimulatedLink {
    public var capacityBps: Double
    public var propagation: MonoTime.Interval
    public var queueLimit: MonoTime.Interval
    public var lossRate: Double
    public var burstBytes = 0
    /// When everything sent so far has been paid for at `capacityBps` (when the bucket is full again).
    private var busyUntil = MonoTime.zero
    private var rng: SplitMix64
    public private(set) var dropped = 0
    public private(set) var delivered = 0

    public init(capacityBps: Double, propagation: MonoTime.Interval = .milliseconds(20),
                queueLimit: MonoTime.Interval = .milliseconds(250), lossRate: Double = 0, burstBytes: Int = 0, seed: UInt64 = 1) {
        self.capacityBps = capacityBps
        self.burstBytes = burstBytes
        self.propagation = propagation
        self.queueLimit = queueLimit
        self.lossRate = lossRate
        rng = SplitMix64(seed: seed)
    }

    /// When a packet of `size` bytes sent at `now` arrives, or nil when the link drops it.
    public mutating func transmit(size: Int, at now: MonoTime) -> MonoTime? {
        let start = max(now, busyUntil)
        guard (start - now).nanoseconds - burst.nanoseconds <= queueLimit.nanoseconds else { dropped += 1; return nil }
        let serialisation = MonoTime.Interval(nanoseconds: Int64(Double(size * 8) / capacityBps * 1e9))
        busyUntil = start + serialisation
        if lossRate > 0, Double(rng.next() % 1_000_000) / 1_000_000 < lossRate { dropped += 1; return nil }
        delivered += 1
        return max(now, busyUntil + Self.back(burst)) + propagation
    }

    /// The bucket's depth as time at `capacityBps`.
    private var burst: MonoTime.Interval { MonoTime.Interval(nanoseconds: Int64(Double(burstBytes * 8) / capacityBps * 1e9)) }
    private static func back(_ d: MonoTime.Interval) -> MonoTime.Interval { MonoTime.Interval(nanoseconds: -d.nanoseconds) }

    /// How long a packet sent now would wait in the queue.
    public func queueingDelay(at now: MonoTime) -> MonoTime.Interval { max(busyUntil + Self.back(burst), now) - now }
}

/// A sender and a transport-cc receiver joined by a `SimulatedLink`, on virtual time: the sender stamps
/// each packet in a `SendHistory`, the receiver's `TransportFeedbackRecorder` writes feedback every 100 ms,
/// which reaches the sender after the propagation delay and is resolved for its estimator. Used to test
/// estimators and probing without a network.
public struct FeedbackLoop {
    public var link: SimulatedLink
    public var history = SendHistory(firstSequence: 65_000)
    public var recorder = TransportFeedbackRecorder()
    public private(set) var now = MonoTime.seconds(100)
    private var inFlight: [(arrival: MonoTime, sequence: UInt16)] = []
    private var feedbackInFlight: [(at: MonoTime, bytes: [UInt8])] = []
    private var buffer = [UInt8](repeating: 0, count: 1500)

    public init(link: SimulatedLink) { self.link = link }

    /// Sends one packet of `size` bytes now.
    public mutating func send(size: Int, probeCluster: Int? = nil) {
        let seq = history.stamp(size: size, now: now, probeCluster: probeCluster)
        if let arrival = link.transmit(size: size, at: now) { inFlight.append((arrival, seq)) }
    }

    /// Moves time to `t`; returns the feedback that reached the sender on the way, resolved against what
    /// it sent.
    public mutating func advance(to t: MonoTime) -> [[PacketFeedback]] {
        now = t
        inFlight.sort { $0.arrival < $1.arrival }
        while let first = inFlight.first, first.arrival <= now {
            recorder.record(sequence: first.sequence, arrival: first.arrival)
            inFlight.removeFirst()
        }
        if recorder.isDue(now) {
            while let n = buffer.withUnsafeMutableBytes({ recorder.writeFeedback(sender: 1, media: 2, now: now, into: $0) }) {
                feedbackInFlight.append((now + link.propagation, Array(buffer[0..<n])))
            }
        }
        var out: [[PacketFeedback]] = []
        while let f = feedbackInFlight.first, f.at <= now {
            feedbackInFlight.removeFirst()
            f.bytes.withUnsafeBytes { p in
                _ = RTCPCompound.forEach(p) { pkt in
                    if let fb = TransportCCFeedback.parse(p, pkt) { out.append(history.resolve(fb)) }
                }
            }
        }
        return out
    }
}
