/// What one room lets its clients make it hold or do: every table keyed by what a client sends is bounded
/// here, and every budget a client can spend is counted. A request over a cap is refused with
/// `ResultCode.limitReached`; a packet over a budget is a counted drop (`DropReason`).
public struct RoomLimits: Sendable, Equatable {
    /// Participants admitted at once.
    public var participants = 2000
    /// Slots (recvonly m-lines) one subscription may ask for.
    public var slotsPerSubscription = 32
    /// Audio and video m-lines one publish offer may send.
    public var tracksPerPublish = 4
    /// Distinct SSRCs libsrtp keeps a stream for on one connection (RTP tracks and RTCP senders).
    public var ssrcsPerConnection = 64
    /// RTCP items parsed from one datagram: packets, report blocks, NACK pairs, FIR entries, transport-cc
    /// statuses. libwebrtc's feedback every 50-250 ms names a few hundred at most.
    public var rtcpItemsPerPacket = 1024
    /// SRTCP datagrams one connection may have decrypted and parsed per second (and at once, after a quiet
    /// second): what one client's RTCP may cost its worker, whatever it sends. A browser sends tens a second
    /// (reports each second, transport-cc feedback every 50-100 ms, NACKs and PLIs as it loses packets); past
    /// this they are dropped before libsrtp sees them (`rtcp_rate`).
    public var rtcpPerSecond = 1000
    /// Retransmissions one subscriber may cost, at most (kbit/s), and at most this share of its estimate.
    public var resendKbps = 2000
    public var resendShareOfEstimate = 0.5
    /// Times one packet is resent, however often it is NACKed.
    public var maxResendsPerPacket = 3
    /// The least time between two resends of one packet, whatever round trip the client's reports claim.
    public var minResendInterval: MonoTime.Interval = .milliseconds(20)
    /// The least time between two moves of a MID- or RID-bound track to a new SSRC (a sender resolving an SSRC
    /// collision, RFC 3550 section 8.2): a client that changes SSRCs on every packet costs one stream a second.
    public var ssrcRebindInterval: MonoTime.Interval = .seconds(1)
    /// Other nodes one room relays to at once (a room that spans nodes).
    public var relays = 16

    public init() {}

    /// The NACK responder's bounds.
    public var resendPolicy: ResendPolicy {
        ResendPolicy(maxResendsPerPacket: maxResendsPerPacket, minInterval: minResendInterval, kbps: resendKbps,
                     shareOfEstimate: resendShareOfEstimate)
    }
}

/// A token bucket: what something may cost over time - a subscriber's retransmissions in bytes, a
/// connection's SRTCP in datagrams. It starts full.
public struct TokenBucket: Sendable {
    public init() {}
    private var tokens: Double = 0
    private var last: MonoTime?

    /// Takes `amount` when the bucket, refilled at `perSecond` and holding at most `burst`, has it.
    public mutating func take(_ amount: Int, perSecond: Double, burst: Double, now: MonoTime) -> Bool {
        let elapsed = last.map { max(0, (now - $0).seconds) } ?? burst / max(perSecond, 1)
        last = now
        tokens = min(burst, tokens + elapsed * perSecond)
        guard tokens >= Double(amount) else { return false }
        tokens -= Double(amount)
        return true
    }
}
