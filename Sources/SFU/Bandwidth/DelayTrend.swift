/// Whether the path's queue is growing, steady or draining (draft-ietf-rmcat-gcc-02 section 5).
public enum BandwidthUsage: Sendable, Equatable {
    case normal, overusing, underusing
}

/// The delay-based detector of GCC, as libwebrtc runs it: packets are grouped by send time into 5 ms
/// bursts; each new group's inter-arrival minus inter-departure delta (how much longer the network took)
/// accumulates into a delay curve, smoothed, whose slope over the last 20 groups is the trend. The trend,
/// scaled, is compared with an adaptive threshold (section 5.4): above it for 10 ms and still rising is
/// over-use; below its negative is under-use.
public struct DelayTrend: Sendable {
    public struct Parameters: Sendable, Equatable {
        /// Packets sent within this of a group's first packet belong to the group.
        public var burstInterval: MonoTime.Interval = .milliseconds(5)
        public var windowSize = 20
        public var smoothing = 0.9
        public var thresholdGain = 4.0
        public var initialThreshold = 12.5
        /// Adaptation rates of the threshold (libwebrtc's; the draft gives 0.01 and 0.00018).
        public var kUp = 0.0087
        public var kDown = 0.039
        public var overuseTimeMs = 10.0
        public init() {}
    }

    struct Group {
        var firstSend: MonoTime
        var lastSend: MonoTime
        var lastArrival: Int64  // micros, receiver's clock
        var size: Int
    }

    public var parameters: Parameters
    public private(set) var usage: BandwidthUsage = .normal
    public private(set) var threshold: Double
    public private(set) var trend = 0.0
    private var current: Group?
    private var previous: Group?
    private var firstArrival: Int64?
    private var accumulated = 0.0
    private var smoothed = 0.0
    /// The last `windowSize` points of the smoothed delay curve (arrival ms, smoothed delay ms), oldest first.
    private var window = RingBuffer<(x: Double, y: Double)>(capacity: 32)
    private var deltas = 0
    private var previousTrend = 0.0
    private var overuseMs = -1.0
    private var overuseCount = 0
    private var lastThresholdUpdateMs: Double?

    public init(parameters: Parameters = .init()) {
        self.parameters = parameters
        threshold = parameters.initialThreshold
    }

    /// Feeds one received packet (in send order); returns the usage after it.
    @discardableResult
    public mutating func update(sendTime: MonoTime, arrivalMicros: Int64, size: Int) -> BandwidthUsage {
        guard var g = current else {
            current = Group(firstSend: sendTime, lastSend: sendTime, lastArrival: arrivalMicros, size: size)
            return usage
        }
        if sendTime < g.firstSend { return usage }  // reordered from an earlier group
        if sendTime - g.firstSend <= parameters.burstInterval {
            g.lastSend = max(g.lastSend, sendTime)
            g.lastArrival = max(g.lastArrival, arrivalMicros)
            g.size += size
            current = g
            return usage
        }
        // A new group starts: the one just completed is compared with the one before it.
        if let p = previous {
            let sendDeltaMs = Double((g.lastSend - p.lastSend).nanoseconds) / 1e6
            let arrivalDeltaMs = Double(g.lastArrival - p.lastArrival) / 1e3
            addDelta(arrivalDeltaMs - sendDeltaMs, sendDeltaMs: sendDeltaMs, arrivalMs: Double(g.lastArrival) / 1e3)
        }
        previous = g
        current = Group(firstSend: sendTime, lastSend: sendTime, lastArrival: arrivalMicros, size: size)
        return usage
    }

    private mutating func addDelta(_ deltaMs: Double, sendDeltaMs: Double, arrivalMs: Double) {
        deltas = min(deltas + 1, 1000)
        accumulated += deltaMs
        smoothed = parameters.smoothing * smoothed + (1 - parameters.smoothing) * accumulated
        let first = firstArrival ?? Int64(arrivalMs * 1e3)
        firstArrival = first
        window.append((arrivalMs - Double(first) / 1e3, smoothed))
        if window.count > parameters.windowSize { window.removeFirst() }
        if window.count == parameters.windowSize { trend = Self.slope(window) ?? trend }
        detect(sendDeltaMs: sendDeltaMs, nowMs: arrivalMs)
    }

    /// Least-squares slope of y over x.
    static func slope<Points: Collection>(_ points: Points) -> Double? where Points.Element == (x: Double, y: Double) {
        let n = Double(points.count)
        let mx = points.reduce(0) { $0 + $1.x } / n, my = points.reduce(0) { $0 + $1.y } / n
        var num = 0.0, den = 0.0
        for p in points {
            num += (p.x - mx) * (p.y - my)
            den += (p.x - mx) * (p.x - mx)
        }
        return den == 0 ? nil : num / den
    }

    private mutating func detect(sendDeltaMs: Double, nowMs: Double) {
        guard deltas >= 2 else { usage = .normal; return }
        let modified = Double(min(deltas, 60)) * trend * parameters.thresholdGain
        if modified > threshold {
            overuseMs = overuseMs < 0 ? sendDeltaMs / 2 : overuseMs + sendDeltaMs
            overuseCount += 1
            if overuseMs > parameters.overuseTimeMs, overuseCount > 1, trend >= previousTrend {
                overuseMs = 0
                overuseCount = 0
                usage = .overusing
            }
        } else if modified < -threshold {
            overuseMs = -1
            overuseCount = 0
            usage = .underusing
        } else {
            overuseMs = -1
            overuseCount = 0
            usage = .normal
        }
        previousTrend = trend
        adaptThreshold(modified, nowMs: nowMs)
    }

    /// gamma += dt k (|m| - gamma), with k_u when |m| is above gamma and k_d below (section 5.4); a value far
    /// above the threshold (a sudden spike) does not move it.
    private mutating func adaptThreshold(_ modified: Double, nowMs: Double) {
        let last = lastThresholdUpdateMs ?? nowMs
        lastThresholdUpdateMs = nowMs
        guard abs(modified) <= threshold + 15 else { return }
        let k = abs(modified) < threshold ? parameters.kDown : parameters.kUp
        let dt = min(max(nowMs - last, 0), 100)
        threshold = min(max(threshold + k * (abs(modified) - threshold) * dt, 6), 600)
    }
}
