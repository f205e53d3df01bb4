import Foundation

/// GCC's delay-based rate controller (draft-ietf-rmcat-gcc-02 section 5.5, libwebrtc's AIMD): on over-use
/// the rate drops to 0.85 x what the receiver measured arriving; on under-use it holds; otherwise it grows,
/// 8 % per second while far from the last congestion point, about half a packet per round trip near it.
/// Growth never runs ahead of what is actually acknowledged (1.5 x + 10 kbit/s): an application-limited
/// sender does not learn the link's capacity from its own traffic, which is why the node probes.
public struct AIMDRateControl: Sendable {
    enum State { case hold, increase, decrease }

    public var minBitrate: Double = 30_000
    public var maxBitrate: Double = 50_000_000
    public var beta = 0.85
    public private(set) var bitrate: Double
    private var state = State.increase
    private var lastUpdate: MonoTime?
    /// Mean and variance of the acknowledged rate at decreases, normalised (libwebrtc's link capacity).
    private var capacityMean: Double?
    private var capacityVariance = 0.4
    public var rtt: MonoTime.Interval = .milliseconds(100)

    public init(start: Double) { bitrate = start }

    /// Sets the rate from a probe's result (or the first measurement): the controller continues from it.
    public mutating func setEstimate(_ bps: Double, now: MonoTime) {
        bitrate = min(max(bps, minBitrate), maxBitrate)
        lastUpdate = now
    }

    public mutating func update(_ usage: BandwidthUsage, acknowledged: Double?, now: MonoTime) {
        switch usage {
        case .overusing: state = .decrease
        case .underusing: state = .hold
        case .normal: if state == .hold { state = .increase }
        }
        let dt = min(max((now - (lastUpdate ?? now)).seconds, 0), 1)
        lastUpdate = now
        switch state {
        case .hold:
            break
        case .increase:
            if let acked = acknowledged, bitrate > 1.5 * acked + 10_000 { break }  // not ahead of what arrives
            if let mean = capacityMean, bitrate > mean * (1 - 3 * capacityDeviation), bitrate < mean * (1 + 3 * capacityDeviation) {
                // Near the last congestion point: additive, about half a 1200-byte packet per round trip.
                let perSecond = max(4_000, 0.5 * 1200 * 8 / max(rtt.seconds, 0.1))
                bitrate += perSecond * dt
            } else {
                bitrate *= pow(1.08, dt)
            }
            if capacityMean.map({ bitrate > $0 * (1 + 3 * capacityDeviation) }) == true { capacityMean = nil }
        case .decrease:
            let measured = acknowledged ?? bitrate
            let target = beta * measured
            if target < bitrate { bitrate = target }
            noteCapacity(measured)
            state = .hold
        }
        bitrate = min(max(bitrate, minBitrate), maxBitrate)
    }

    private var capacityDeviation: Double { capacityMean.map { sqrt(capacityVariance * $0) / $0 } ?? 0 }

    private mutating func noteCapacity(_ bps: Double) {
        let kbps = bps / 1000
        guard let meanBps = capacityMean else { capacityMean = bps; return }
        let mean = meanBps / 1000
        let alpha = 0.05
        let m = (1 - alpha) * mean + alpha * kbps
        let norm = max(m, 1)
        capacityVariance = min(max((1 - alpha) * capacityVariance + alpha * (m - kbps) * (m - kbps) / norm, 0.4), 2.5)
        capacityMean = m * 1000
    }
}

/// GCC's loss-based controller (draft-ietf-rmcat-gcc-02 section 6): loss under 2 % lets the rate grow 8 % a
/// second, over 10 % cuts it by half the loss fraction (at most once per 300 ms), in between it holds. The
/// target the node uses is the lower of this and the delay-based rate. Loss is counted over at least
/// `minPackets` packets (and at most a second): a feedback interval of a few packets says nothing about 5 %.
public struct LossBasedControl: Sendable {
    public private(set) var bitrate: Double
    private var lastIncrease: MonoTime?
    private var lastDecrease: MonoTime?
    public private(set) var lossFraction = 0.0
    public var minPackets = 50
    private var pendingLost = 0
    private var pendingTotal = 0
    private var pendingSince: MonoTime?

    public init(start: Double) { bitrate = start }

    public mutating func reset(to bps: Double) { bitrate = bps }

    /// `lost` of `total` packets in the last feedback; `ceiling` is the delay-based rate.
    public mutating func update(lost: Int, total: Int, ceiling: Double, now: MonoTime) {
        guard total > 0 else { return }
        pendingLost += lost
        pendingTotal += total
        let since = pendingSince ?? now
        pendingSince = since
        guard pendingTotal >= minPackets || now - since >= .seconds(1) else { return }
        lossFraction = Double(pendingLost) / Double(pendingTotal)
        pendingLost = 0
        pendingTotal = 0
        pendingSince = nil
        if lossFraction < 0.02 {
            let dt = lastIncrease.map { min((now - $0).seconds, 1) } ?? 0
            if dt > 0 { bitrate = min(bitrate * pow(1.08, dt) + 1000 * dt, max(ceiling, bitrate)) }
            lastIncrease = now
        } else if lossFraction > 0.10 {
            if lastDecrease.map({ now - $0 >= .milliseconds(300) }) ?? true {
                bitrate *= 1 - 0.5 * lossFraction
                lastDecrease = now
            }
            lastIncrease = now
        } else {
            lastIncrease = now
        }
    }
}

/// The rate a probe cluster measured: the cluster's packets went out at a known rate; how fast they arrived
/// says what the path carried (libwebrtc's probe bitrate estimator). A cluster is measured once the feedback
/// has reported all of it - a packet sent `maxClusterDuration` after its first has been reported - and at
/// least `minPackets` and `minReceivedFraction` of it arrived. Measured on its first packets alone, a cluster
/// read whatever a token bucket's burst let through at line rate as the path's rate (1.8 Mbit/s through a
/// 400 kbit/s `tc tbf` cap).
public struct ProbeMeasurement: Sendable {
    struct Cluster {
        /// The first send time among its reported packets, lost ones included.
        var start: MonoTime = .never
        var firstSend: MonoTime = .never
        var lastSend: MonoTime = .zero
        var firstArrival = Int64.max
        var lastArrival = Int64.min
        var bytes = 0
        var firstSize = 0
        var lastSize = 0
        var packets = 0
        var lost = 0
    }

    public var minPackets = 5
    public var minReceivedFraction = 0.8
    /// The longest a cluster is sent for (the room ends one 90 ms after its start).
    public var maxClusterDuration: MonoTime.Interval = .milliseconds(100)
    /// The clusters being reported, by id: at most `maxClusters`, searched linearly (they are a handful).
    private var clusters: [(id: Int, cluster: Cluster)] = []
    static let maxClusters = 8

    public init() {}

    /// Adds a reported probe packet, received or lost.
    public mutating func add(_ p: PacketFeedback) {
        guard let id = p.probeCluster else { return }
        var at = clusters.firstIndex { $0.id == id }
        if at == nil {
            if clusters.count >= Self.maxClusters { clusters.removeAll(keepingCapacity: true) }  // short-lived; keep the table small
            clusters.append((id, Cluster()))
            at = clusters.count - 1
        }
        let i = at!
        var c = clusters[i].cluster
        defer { clusters[i].cluster = c }
        c.start = min(c.start, p.sendTime)
        guard let arrival = p.arrivalMicros else { c.lost += 1; return }
        if p.sendTime < c.firstSend { c.firstSend = p.sendTime; c.firstSize = p.size }
        if p.sendTime >= c.lastSend { c.lastSend = p.sendTime; c.lastSize = p.size }
        c.firstArrival = min(c.firstArrival, arrival)
        c.lastArrival = max(c.lastArrival, arrival)
        c.bytes += p.size
        c.packets += 1
    }

    /// The highest rate among the clusters the feedback has now reported in full (`newest`: the send time of
    /// the latest packet it reported), each measured once and then forgotten; nil when none gave a rate.
    public mutating func highestCompletedRate(reportedUpTo newest: MonoTime) -> Double? {
        var highest: Double?
        var i = 0
        while i < clusters.count {
            let c = clusters[i].cluster
            guard newest - c.start >= maxClusterDuration else { i += 1; continue }
            clusters.remove(at: i)
            guard c.packets >= minPackets, Double(c.packets) >= minReceivedFraction * Double(c.packets + c.lost) else { continue }
            let sendSeconds = (c.lastSend - c.firstSend).seconds
            let receiveSeconds = Double(c.lastArrival - c.firstArrival) / 1e6
            guard sendSeconds > 0.001, receiveSeconds > 0.001 else { continue }
            let sendRate = Double(c.bytes - c.lastSize) * 8 / sendSeconds
            let receiveRate = Double(c.bytes - c.firstSize) * 8 / receiveSeconds
            let rate = receiveRate < 0.9 * sendRate ? receiveRate : min(sendRate, receiveRate)
            highest = max(highest ?? rate, rate)
        }
        return highest
    }
}
