/// Probing a subscriber's downlink (issue 13). A subscriber that receives less than it could (fewer videos
/// than slots, or nothing but audio after congestion) gives the node's GCC no evidence of spare capacity:
/// an application-limited sender's estimate never climbs past 1.5 x what it sends. So the node sends probe
/// clusters - padding-only packets on a video slot's RTX stream (RFC 4588 section 4: padding is not a
/// retransmission), about 30 ms long at the rate it wants to know about - and the feedback on them tells the
/// estimator what the path carried (libwebrtc probes the same way). It probes once at start-up (3 x the
/// estimate), then whenever the videos it could show would fit only with more bandwidth, at the rate they
/// need, backing off from 2 s to 4 s while probes fail, so capacity that comes back after a cap is found
/// within seconds.
struct ProbePlanner {
    struct Cluster {
        var id: Int
        var bitsPerSecond: Double
        var start: MonoTime
        var bytes: Int
        var sent = 0
        /// When the next part is due: clusters are sent in steps 2 ms apart.
        var nextSend: MonoTime = .zero
    }

    var cluster: Cluster?
    var nextCheck: MonoTime?
    var backoff: MonoTime.Interval = .seconds(2)
    var initialDone = false
    var judge: (target: Double, at: MonoTime)?
    /// No new cluster before this (after a failed probe, the back-off).
    var holdUntil: MonoTime = .zero
    var nextID = 1
    /// Bytes of one padding packet (RFC 3550 allows 255 bytes of padding).
    static let paddingBytes = 255
    static let clusterDuration: MonoTime.Interval = .milliseconds(30)
    static let maxRate = 10_000_000.0
}
