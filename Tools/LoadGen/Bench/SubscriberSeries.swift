import Foundation
import Synchronization

/// One subscriber's downlink as the server reports it at one moment: its bandwidth estimate (bits/s) and
/// how many videos the video-count rule gives it (`GET /v1/rooms/{room}/stats`).
public struct SubscriberSample: Sendable, Equatable {
    public var estimate: Double?
    public var videos: Int?
    /// The simulcast layer each of its video slots carries (slots showing a simulcast source only).
    public var layers: [Int]

    public init(estimate: Double?, videos: Int?, layers: [Int] = []) {
        self.estimate = estimate
        self.videos = videos
        self.layers = layers
    }
}

/// The subscribers' estimates and number_of_videos over the measured window, one sample a second: the full
/// series for the JSON report, and a summary for the text one.
public struct SubscriberSeries: Codable, Sendable, Equatable {
    public struct Track: Codable, Sendable, Equatable {
        /// Bits per second, one per sample time; nil where the subscriber was absent or had no estimate.
        public var estimates: [Double?] = []
        public var videos: [Int?] = []
        /// Per sample, the simulcast layers its video slots carried (nil where it was absent).
        public var layers: [[Int]?] = []
    }

    /// Seconds since the start of the measured window, one per sample.
    public var seconds: [Double] = []
    /// By "room/participant".
    public var subscribers: [String: Track] = [:]

    public init() {}

    /// Adds one poll's samples at `t` seconds; subscribers missing from it get nil.
    public mutating func append(at t: Double, _ samples: [String: SubscriberSample]) {
        let k = seconds.count
        seconds.append(t)
        for id in samples.keys where subscribers[id] == nil {
            subscribers[id] = Track(estimates: Array(repeating: nil, count: k), videos: Array(repeating: nil, count: k),
                                    layers: Array(repeating: nil, count: k))
        }
        for id in subscribers.keys {
            let s = samples[id]
            subscribers[id]!.estimates.append(s?.estimate)
            subscribers[id]!.videos.append(s?.videos)
            subscribers[id]!.layers.append(s?.layers)
        }
    }

    public struct Summary: Codable, Sendable, Equatable {
        /// Subscribers in the last sample.
        public var subscribers = 0
        /// Across the subscribers of the last sample, bits/s.
        public var estimateMin: Double?
        public var estimateMedian: Double?
        public var estimateMax: Double?
        /// number_of_videos in the last sample -> how many subscribers had it.
        public var videosAtEnd: [Int: Int] = [:]
        /// Changes of number_of_videos between consecutive samples, per subscriber that was ever sampled.
        public var changesMean = 0.0
        public var changesMax = 0
        public var subscribersThatChanged = 0
        /// Per sample: the median estimate across subscribers (bits/s) and the mean number_of_videos.
        public var medianEstimateBySample: [Double?] = []
        public var meanVideosBySample: [Double?] = []
    }

    public var summary: Summary {
        var s = Summary()
        guard let last = seconds.indices.last else { return s }
        let tracks = subscribers.values
        let ended = tracks.filter { $0.estimates[last] != nil || $0.videos[last] != nil }
        s.subscribers = ended.count
        let estimates = ended.compactMap { $0.estimates[last] }.sorted()
        s.estimateMin = estimates.first
        s.estimateMax = estimates.last
        s.estimateMedian = Self.median(estimates)
        for v in ended.compactMap({ $0.videos[last] }) { s.videosAtEnd[v, default: 0] += 1 }
        let changes = tracks.map { t -> Int in
            let v = t.videos.compactMap { $0 }
            return zip(v, v.dropFirst()).filter { $0 != $1 }.count
        }
        s.changesMean = changes.isEmpty ? 0 : Double(changes.reduce(0, +)) / Double(changes.count)
        s.changesMax = changes.max() ?? 0
        s.subscribersThatChanged = changes.filter { $0 > 0 }.count
        for k in seconds.indices {
            s.medianEstimateBySample.append(Self.median(tracks.compactMap { $0.estimates[k] }.sorted()))
            let v = tracks.compactMap { $0.videos[k] }
            s.meanVideosBySample.append(v.isEmpty ? nil : Double(v.reduce(0, +)) / Double(v.count))
        }
        return s
    }

    /// The middle value of sorted samples (the mean of the two middle ones for an even count).
    static func median(_ sorted: [Double]) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let m = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2
    }

    /// How often each simulcast layer was shown, over every sample of every video slot of the subscribers
    /// `include` accepts (by id): layer -> slot samples.
    public func layerCounts(_ include: (String) -> Bool = { _ in true }) -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for (id, t) in subscribers where include(id) {
            for layers in t.layers.compactMap({ $0 }) { for l in layers { counts[l, default: 0] += 1 } }
        }
        return counts
    }

    /// Summary lines for the text report.
    public var text: [String] {
        let s = summary
        guard !seconds.isEmpty else { return [] }
        func mbps(_ v: Double?) -> String { v.map { String(format: "%.2f", $0 / 1e6) } ?? "-" }
        var l: [String] = []
        l.append("estimates        at the end, \(s.subscribers) subscribers: min \(mbps(s.estimateMin)), median \(mbps(s.estimateMedian)), max \(mbps(s.estimateMax)) Mbit/s")
        l.append("                 median by second (Mbit/s): " + s.medianEstimateBySample.map(mbps).joined(separator: " "))
        let dist = s.videosAtEnd.sorted { $0.key > $1.key }.map { "\($0.key) x \($0.value)" }.joined(separator: ", ")
        l.append(String(format: "number_of_videos at the end: %@; changes per subscriber: mean %.2f, max %d (%d of %d changed)",
                        dist.isEmpty ? "-" : dist, s.changesMean, s.changesMax, s.subscribersThatChanged, subscribers.count))
        l.append("                 mean by second: " + s.meanVideosBySample.map { $0.map { String(format: "%.2f", $0) } ?? "-" }.joined(separator: " "))
        return l
    }
}

/// Samples the server's per-subscriber figures once a second from a task of its own while the bench drives
/// the clients, until `stop()`. It never cancels a request in flight (swift-corelibs-foundation's URLSession
/// can deadlock on that; see `JanusSession`): it checks a flag between sleeps.
final class SubscriberSeriesRecorder: Sendable {
    let series = Mutex(SubscriberSeries())
    private let stopped = Atomic<Bool>(false)

    /// Polls `sample` at `start` + 1 s, + 2 s, ... (seconds from `clock`) before `until`, or until stopped.
    func run(start: Double, until: Double, clock: @escaping @Sendable () -> Double,
             sample: @escaping @Sendable () async -> [String: SubscriberSample]?) -> Task<Void, Never> {
        Task {
            var next = start + 1
            while !stopped.load(ordering: .relaxed), next < until {
                if clock() < next {
                    try? await Task.sleep(for: .milliseconds(min(100, max(1, Int((next - clock()) * 1000)))))
                    continue
                }
                next += 1
                guard let s = await sample() else { return }
                let t = clock() - start
                series.withLock { $0.append(at: t, s) }
            }
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
}
