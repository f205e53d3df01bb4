/// What the node sent on one connection, by transport-wide sequence number (draft-holmer-rmcat-transport-
/// wide-cc-extensions-01): when, how many bytes, and for which probe cluster, so the receiver's feedback can
/// be matched to departures. A fixed ring of `capacity` packets (2-4 s of a busy subscriber): stamping
/// allocates nothing on the send path.
public struct SendHistory: Sendable {
    public static let capacity = 4096

    public struct Sent: Equatable, Sendable {
        public var sequence: Int64
        public var sendTime: MonoTime
        public var size: Int
        /// The probe cluster the packet belonged to, if it was sent to probe.
        public var probeCluster: Int?
    }

    private var next: Int64
    private var sequences = [Int64](repeating: -1, count: capacity)
    private var times = [Int64](repeating: 0, count: capacity)
    private var sizes = [Int32](repeating: 0, count: capacity)
    private var clusters = [Int32](repeating: -1, count: capacity)
    /// Bytes stamped since the history began: what the node sent on the connection.
    public private(set) var bytesSent: UInt64 = 0
    /// The last feedback, matched with what was sent: one buffer per connection, refilled by each feedback,
    /// so that handling feedback on the media worker allocates nothing once it has held the largest one.
    public private(set) var resolved: [PacketFeedback] = []
    /// The most packets `resolved` keeps room for between feedbacks.
    public static let keptResolvedCapacity = 256
    /// The latest feedback's reference time, unwrapped (64 ms units; see `unwrapReference`).
    var lastReference: Int64?

    /// The first sequence number whose send time is still the time it was written, not the time it left.
    private var departedThrough: Int64

    public init(firstSequence: UInt16 = .random(in: 0...UInt16.max)) {
        next = Int64(firstSequence)
        departedThrough = next
    }

    /// The packets stamped since the last call left the node at `now` (the shell calls it once their batch
    /// went to the kernel). A packet is stamped when it is written, before the rest of its batch is built and
    /// before the syscall: on a worker that waits for a CPU the gap is milliseconds, which the receiver's
    /// feedback would show as queueing on the downlink. libwebrtc likewise takes a packet's send time when
    /// the socket took it (its OnSentPacket).
    public mutating func departed(at now: MonoTime) {
        let first = max(departedThrough, next - Int64(Self.capacity))
        for ext in first..<next { times[Int(ext) & (Self.capacity - 1)] = now.nanoseconds }
        departedThrough = next
    }

    /// Assigns the next transport-wide sequence number to a packet of `size` bytes sent at `now`.
    public mutating func stamp(size: Int, now: MonoTime, probeCluster: Int? = nil) -> UInt16 {
        let i = Int(next) & (Self.capacity - 1)
        sequences[i] = next
        times[i] = now.nanoseconds
        sizes[i] = Int32(clamping: size)
        clusters[i] = Int32(probeCluster ?? -1)
        bytesSent &+= UInt64(size)
        defer { next += 1 }
        return UInt16(truncatingIfNeeded: next)
    }

    /// The packet sent with 16-bit sequence number `seq`, if it is still held: the most recent extended
    /// sequence number that matches.
    public func lookup(_ seq: UInt16) -> Sent? {
        let distance = Int64(UInt16(truncatingIfNeeded: next) &- seq)  // 1...65536 back from `next`
        let ext = next - (distance == 0 ? 65536 : distance)
        guard ext >= 0 else { return nil }
        let i = Int(ext) & (Self.capacity - 1)
        guard sequences[i] == ext else { return nil }
        return Sent(sequence: ext, sendTime: MonoTime(nanoseconds: times[i]), size: Int(sizes[i]),
                    probeCluster: clusters[i] < 0 ? nil : Int(clusters[i]))
    }
}

/// One packet's fate as the receiver reported it: sent at `sendTime` (the node's clock), arrived at
/// `arrival` (the receiver's clock, microseconds; only differences matter) or lost.
public struct PacketFeedback: Equatable, Sendable {
    public var sequence: Int64
    public var sendTime: MonoTime
    public var arrivalMicros: Int64?
    public var size: Int
    public var probeCluster: Int?

    public init(sequence: Int64, sendTime: MonoTime, arrivalMicros: Int64?, size: Int, probeCluster: Int? = nil) {
        self.sequence = sequence
        self.sendTime = sendTime
        self.arrivalMicros = arrivalMicros
        self.size = size
        self.probeCluster = probeCluster
    }
}

extension SendHistory {
    /// The reference time field is 24 bits in 64 ms units (draft-holmer-rmcat-transport-wide-cc-extensions-01
    /// section 3.1): it wraps every 2^24 x 64 ms, about 12.4 days, and read as signed it jumps from
    /// +2^23 - 1 to -2^23 half-way, 6.2 days after the receiver's clock origin (libwebrtc's is the monotonic
    /// clock: a browser on a machine up for a week). Taken as is, every arrival would then jump back 12.4
    /// days and the delay trend would read the jump as the queue draining. A feedback's reference time is
    /// taken as the one nearest the previous feedback's (feedback is ~100 ms apart, reordered by far less
    /// than 6 days); the first is taken as signed.
    public static let referenceTimeWrap: Int64 = 1 << 24

    /// The furthest an unwrapped reference time may be from 0 (in 64 ms units: 2^40 is about 2,230 years).
    /// Each feedback may step half a wrap from the last, so a subscriber that sends millions of them, each
    /// stepping forward, would otherwise walk it until `reference * 64_000` overflowed (issue 23).
    public static let referenceLimit: Int64 = 1 << 40

    /// `raw` (the 24-bit field, sign-extended) unwrapped against the previous feedback's, in 64 ms units.
    public func unwrapReference(_ raw: Int32) -> Int64 {
        guard let last = lastReference else { return Int64(raw) }
        let wrap = Self.referenceTimeWrap
        var step = (Int64(raw) - last) % wrap
        if step < 0 { step += wrap }  // 0 ..< 2^24 forward
        if step >= wrap / 2 { step -= wrap }  // nearest: -2^23 ..< 2^23
        return last + step
    }

    /// Matches a transport-cc feedback, read in place (`TransportCCFeedback.forEachPacket`), with what was
    /// sent, into `resolved` (in sequence order; packets the history no longer holds are left out). Returns
    /// the feedback's fixed fields, or nil when it is malformed or names more than `maxPackets` packets
    /// (`resolved` is then empty). Allocates nothing once `resolved` has held the largest feedback.
    @discardableResult
    public mutating func resolve(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket, maxPackets: Int = 4096) -> TransportCCFeedback.Header? {
        // A feedback may name up to `RoomLimits.rtcpItemsPerPacket` packets (1,024, ~56 KiB resolved): a buffer
        // that size is not kept on every connection a client can open; browsers report ~10-200 at a time.
        if resolved.capacity > Self.keptResolvedCapacity { resolved = [] } else { resolved.removeAll(keepingCapacity: true) }
        guard let h = TransportCCFeedback.Header.parse(p, pkt), h.statusCount <= maxPackets else { return nil }
        let reference = unwrapReference(h.referenceTime)
        guard abs(reference) < Self.referenceLimit else { return nil }
        let micros = reference * 64_000
        var out = resolved
        resolved = []  // `out` holds the only reference: appending to it does not copy
        let read = TransportCCFeedback.forEachPacket(p, pkt, maxPackets: maxPackets) { seq, offset in
            guard let s = lookup(seq) else { return }
            out.append(PacketFeedback(sequence: s.sequence, sendTime: s.sendTime, arrivalMicros: offset.map { $0 + micros },
                                      size: s.size, probeCluster: s.probeCluster))
        }
        resolved = out
        guard read != nil else { resolved.removeAll(keepingCapacity: true); return nil }
        lastReference = reference
        return h
    }

    /// Pairs a parsed transport-cc feedback with what was sent, in sequence order; packets the history no
    /// longer holds are left out. Unwraps the reference time as `resolve(_:_:maxPackets:)` does.
    public mutating func resolve(_ fb: TransportCCFeedback) -> [PacketFeedback] {
        let reference = unwrapReference(fb.referenceTime)
        guard abs(reference) < Self.referenceLimit else { return [] }
        lastReference = reference
        let micros = reference * 64_000
        return fb.packets.compactMap { p in
            guard let s = lookup(p.sequenceNumber) else { return nil }
            return PacketFeedback(sequence: s.sequence, sendTime: s.sendTime, arrivalMicros: p.arrivalOffsetMicros.map { $0 + micros },
                                  size: s.size, probeCluster: s.probeCluster)
        }
    }
}
