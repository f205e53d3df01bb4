/// A subscriber's downlink bandwidth estimate, behind one interface so that a transport-cc (GCC) estimator
/// can replace REMB without touching the video-count rule.
public protocol DownlinkEstimator {
    /// The current estimate in bits per second, nil until the first feedback.
    var estimate: UInt64? { get }
    /// A REMB from the subscriber (draft-alvestrand-rmcat-remb). Estimators that do not use REMB ignore it.
    mutating func onREMB(bitrate: UInt64, now: MonoTime)
    /// Transport-wide feedback for packets the node sent, matched with what was sent (`SendHistory`).
    /// Estimators that do not use it ignore it.
    mutating func onPacketFeedback(_ results: [PacketFeedback], now: MonoTime)
    /// The round trip the node measured, for estimators whose control depends on it.
    mutating func setRTT(_ rtt: MonoTime.Interval)
}

extension DownlinkEstimator {
    public mutating func onPacketFeedback(_ results: [PacketFeedback], now: MonoTime) {}
    public mutating func setRTT(_ rtt: MonoTime.Interval) {}
}

/// Takes the receiver's own estimate as it arrives: browsers compute REMB with their delay-based
/// controller and send it about once a second, already smoothed.
public struct REMBEstimator: DownlinkEstimator {
    public private(set) var estimate: UInt64?
    public private(set) var lastUpdate: MonoTime?

    public init() {}

    public mutating func onREMB(bitrate: UInt64, now: MonoTime) {
        estimate = bitrate
        lastUpdate = now
    }

}
