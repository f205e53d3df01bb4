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
    var sendTimeBase: Int64 = 0
    private var nextUpdate: MonoTime = .zero
    public private(set) var estimate: UInt64?

    /// The furthest the unwrapped send time may go from 0, in 2^-18 s units (2^36: about 73 hours).
    static let sendTimeLimit: Int64 = 1 << 36

    public init(startBitrate: Double = 300_000) { control = AIMDRateControl(start: startBitrate) }

    /// One packet's abs-send-time (24 bits, 6.18 fixed-point seconds, wrapping every 64 s), arrival and size.
    public mutating func packet(absSendTime: UInt32, arrival now: MonoTime, size: Int) {
        let v = absSendTime & 0xFF_FFFF
        if let last = lastSendTime {
            let forward = (v &- last) & 0xFF_FFFF
            if forward < 0x80_0000 { sendTimeBase += Int64(forward) } else { sendTimeBase -= Int64(0x100_0000 - forward) }
        }
        lastSendTime = v
        // Each packet may step the base half a wrap (32 s) either way: one that a publisher walks past 2^36
        // (about 73 hours of send time) starts again from 0 with a new trend, so that a publisher stepping it on
        // purpose cannot overflow the conversion below (issue 23) and an honest one re-anchors every 73 hours.
        if abs(sendTimeBase) > Self.sendTimeLimit {
            sendTimeBase = 0
            trend = DelayTrend()
        }
        // 2^-18 s units to nanoseconds, exactly: 10^9 / 2^18 = 1,953,125 / 2^9.
        let sent = MonoTime(nanoseconds: sendTimeBase * 1_953_125 >> 9)
        trend.update(sendTime: sent, arrivalMicros: now.nanoseconds / 1000, size: size)
        incoming.add(bytes: size, now: now)
        guard now >= nextUpdate else { return }
        nextUpdate = now + .milliseconds(100)
        guard let rate = incoming.bitsPerSecond(now: now) else { return }
        control.update(trend.usage, acknowledged: rate, now: now)
        estimate = UInt64(control.bitrate)
    }
}
