/// A publisher's uplink as the node sees it arrive, for publishers that take REMB but not transport-cc
/// (aiortc, older clients): abs-send-time stamps each packet's departure on the sender's clock, the node
/// stamps its arrival, and the same delay trend and AIMD control as the sender-side GCC turn them into a
/// rate (libwebrtc's receive-side "remote bitrate estimator"; draft-ietf-rmcat-gcc-02 section 5 describes
/// both placements). The node sends the publisher this, capped by what its subscribers take, as REMB.
public struct ReceiveSideEstimator: Sendable {
    private var trend = DelayTrend()
    private var control: AIMDRateControl
    private var incoming = RateMeter()
    private var lastSendTime: UInt32?
    private var sendTimeBase: Int64 = 0
    private var nextUpdate: MonoTime = .zero
    public private(set) var estimate: UInt64?

    public init(startBitrate: Double = 300_000) { control = AIMDRateControl(start: startBitrate) }

    /// One packet's abs-send-time (24 bits, 6.18 fixed-point seconds, wrapping every 64 s), arrival and size.
    public mutating func packet(absSendTime: UInt32, arrival now: MonoTime, size: Int) {
        let v = absSendTime & 0xFF_FFFF
        if let last = lastSendTime {
            let forward = (v &- last) & 0xFF_FFFF
            if forward < 0x80_0000 { sendTimeBase += Int64(forward) } else { sendTimeBase -= Int64(0x100_0000 - forward) }
        }
        lastSendTime = v
        // 2^-18 s units to nanoseconds.
        let sent = MonoTime(nanoseconds: sendTimeBase * 1_000_000_000 >> 18)
        trend.update(sendTime: sent, arrivalMicros: now.nanoseconds / 1000, size: size)
        incoming.add(bytes: size, now: now)
        guard now >= nextUpdate else { return }
        nextUpdate = now + .milliseconds(100)
        guard let rate = incoming.bitsPerSecond(now: now) else { return }
        control.update(trend.usage, acknowledged: rate, now: now)
        estimate = UInt64(control.bitrate)
    }
}
