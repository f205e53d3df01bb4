/// The SSRCs libsrtp keeps an inbound stream for on one connection, and which of them no track uses any more.
///
/// libsrtp keeps a stream per SSRC that authenticated, with its rollover counter (RFC 3711 section 3.3.1):
/// a stream freed while the client still sends on that SSRC starts again at ROC 0, and once the client's
/// sequence numbers have wrapped every packet fails authentication (issue 23). So a track that ends - left
/// out of a renegotiation, set inactive, moved to another SSRC - keeps its stream, *retired*: a track the
/// client adds again on the same SSRC (a transceiver back from inactive) goes on where it was. Retired
/// streams are freed oldest first, only when a new SSRC needs room under `RoomLimits.ssrcsPerConnection`,
/// which bounds what a client rotating SSRCs can make libsrtp hold.
struct InboundStreams {
    private(set) var ssrcs: Set<UInt32> = []
    /// Streams no track or RTCP sender uses now, oldest first.
    private(set) var retired: [UInt32] = []
    /// Retired streams freed to make room (a client that later sends on one of them starts at ROC 0).
    private(set) var evictions = 0

    var count: Int { ssrcs.count }
    func contains(_ ssrc: UInt32) -> Bool { ssrcs.contains(ssrc) }

    /// `ssrc` is in use (a track routes it, or it authenticated): kept, and no longer retired.
    mutating func use(_ ssrc: UInt32) {
        ssrcs.insert(ssrc)
        if let i = retired.firstIndex(of: ssrc) { retired.remove(at: i) }
    }

    /// Nothing routes `ssrc` any more; its stream stays until room is needed.
    mutating func retire(_ ssrc: UInt32) {
        guard ssrcs.contains(ssrc), !retired.contains(ssrc) else { return }
        retired.append(ssrc)
    }

    /// Whether libsrtp may take a stream for `ssrc` within `limit`: it has one, there is room, or the oldest
    /// retired stream is freed (from `srtp`) to make room.
    mutating func reserve(_ ssrc: UInt32, limit: Int, srtp: SRTPSession?) -> Bool {
        if ssrcs.contains(ssrc) || ssrcs.count < limit { return true }
        guard !retired.isEmpty else { return false }
        let oldest = retired.removeFirst()
        ssrcs.remove(oldest)
        srtp?.removeStream(ssrc: oldest)
        evictions += 1
        return true
    }
}
