/// The room's side of one client transport: its SRTP contexts, the libsrtp streams it keeps, what it sent
/// that was dropped, where its datagrams are written, and what it carries - a participant's published media
/// in (`publisher`), or its slots out (`subscriber`). The ICE and DTLS side is the worker's (`WebRTCEdge`).
public final class Connection: DepartureStamped {
    public let id: ConnectionID
    let participant: Int
    /// False once the room let go of it (participant left, transport detached, room destroyed): a holder of
    /// the reference (the worker's connection table) must not feed it any more.
    public internal(set) var attached = true
    var inbound: SRTPSession?
    var outbound: SRTPSession?
    /// What this connection sent that the room dropped (its participant's share of `RoomCounters.drops`).
    var drops = DropCounters()
    /// SSRCs libsrtp keeps an inbound stream for (each authenticated one), retired ones included: bounded by
    /// `RoomLimits.ssrcsPerConnection`.
    var inboundSSRCs = InboundStreams()
    /// SRTCP datagrams it may still have decrypted and parsed (`RoomLimits.rtcpPerSecond`).
    var rtcpBudget = TokenBucket()
    /// What the transport carries, set when an offer binds it and cleared when the room lets it go
    /// (`release`: the publisher and subscriber hold their connection too).
    var publisher: Publisher?
    var subscriber: Subscriber?
    /// A relay's connection: the remote participants' publishers whose media it carries, by SSRC (one
    /// connection carries many participants' streams; `publisher` is then nil).
    var remotePublishers: [UInt32: Publisher] = [:]
    /// Subscribing with transport-cc: what the node sent, by transport-wide sequence number.
    var sendHistory: SendHistory?
    /// On the batch's list of connections whose stamped packets await their departure time.
    public var awaitingDeparture = false
    /// Set when the shell sends this connection's datagrams from somewhere other than the room's own batch
    /// (NodeIO: a transport another worker hosts, for a room spread across cores). Nil: the room's batch.
    public var egress: (any Egress)?
    /// How the client's transport reaches the node (the pair it nominated last), set by the shell.
    public internal(set) var path: TransportPath?

    init(id: ConnectionID, participant: Int) {
        self.id = id
        self.participant = participant
    }

    public func departed(at now: MonoTime) { sendHistory?.departed(at: now) }

    /// The room lets go of it: nothing routes through it any more.
    func release() {
        attached = false
        publisher = nil
        subscriber = nil
        remotePublishers = [:]
    }

    /// The batch this connection's datagrams are written into: its egress's, or the room's own.
    @inline(__always)
    func batch(for local: DatagramBatch) -> DatagramBatch { egress?.batch ?? local }

    /// Protects an outgoing packet in place with `srtp`, this connection's outbound context; one written into
    /// an egress of the shell's is left plain, for the shell to protect as it sends (a transport another
    /// worker hosts is protected there with its own copy of the context: a hosted listener costs the room's
    /// worker only the rewrite). libsrtp refusing an index it already used is `protectRefused`: the node's
    /// own numbering went back.
    @inline(__always)
    func protect(_ srtp: SRTPSession, _ buf: UnsafeMutableRawBufferPointer, length: Int, rtcp: Bool = false) -> Result<Int, DropReason> {
        if egress != nil { return .success(length) }
        let r = rtcp ? srtp.protectRTCP(buf, length: length) : srtp.protectRTP(buf, length: length)
        if case .failure(.srtpReplay) = r { return .failure(.protectRefused) }
        return r
    }

    /// Protects the RTCP packet of `length` bytes written in `buf` (from `out`, this connection's batch) and
    /// commits it; false, counted, when SRTP refuses.
    @discardableResult
    func commitRTCP(_ buf: UnsafeMutableRawBufferPointer, length: Int, into out: DatagramBatch, effects: RoomEffects) -> Bool {
        guard let srtp = outbound else { return false }
        switch protect(srtp, buf, length: length, rtcp: true) {
        case .success(let n):
            out.commit(length: n, to: id)
            effects.counters.rtcpOut &+= 1
            return true
        case .failure(let r):
            effects.drop(r)
            return false
        }
    }
}

/// Where the shell has a connection's datagrams written instead of the room's batch (`Connection.egress`).
/// The room writes them plain into `batch`, which the holder may replace between writes (a batch handed to
/// another thread is swapped for an empty one), and the holder protects them as it sends.
public protocol Egress: AnyObject {
    var batch: DatagramBatch { get }
}
