/// The last packets of one video source, plaintext, indexed by extended sequence number, so a NACKed slot
/// packet can be rebuilt and re-protected (RFC 4585 section 3.2: the sender retransmits; NACKs are never
/// forwarded upstream). One history per source, shared by every slot it feeds: memory scales with
/// publishers, not with publishers x subscribers. 512 packets (768 KB) hold 2-4 s of a 1-2 Mbit/s stream,
/// more than a NACK is worth waiting for.
public final class PacketHistory {
    public let capacity: Int
    public let slotSize: Int
    private let storage: UnsafeMutableRawBufferPointer
    private var sequences: [Int64]
    private var lengths: [Int]

    /// `capacity` is rounded up to a power of two.
    public init(capacity: Int = 512, slotSize: Int = 1500) {
        var c = 1
        while c < capacity { c <<= 1 }
        self.capacity = c
        self.slotSize = slotSize
        storage = .allocate(byteCount: c * slotSize, alignment: 16)
        sequences = [Int64](repeating: -1, count: c)
        lengths = [Int](repeating: 0, count: c)
    }

    deinit { storage.deallocate() }

    public func store(extendedSequence ext: Int64, packet: UnsafeRawBufferPointer) {
        guard packet.count <= slotSize, ext >= 0 else { return }
        let i = Int(ext) & (capacity - 1)
        sequences[i] = ext
        lengths[i] = packet.count
        UnsafeMutableRawBufferPointer(rebasing: storage[(i * slotSize)..<(i * slotSize + packet.count)])
            .copyMemory(from: packet)
    }

    /// Forgets every packet (the source moved to a new SSRC, whose extended sequence numbers start again).
    public func clear() {
        for i in sequences.indices { sequences[i] = -1 }
    }

    /// The stored packet, if still held.
    public func packet(extendedSequence ext: Int64) -> UnsafeRawBufferPointer? {
        guard ext >= 0 else { return nil }
        let i = Int(ext) & (capacity - 1)
        guard sequences[i] == ext else { return nil }
        return UnsafeRawBufferPointer(rebasing: storage[(i * slotSize)..<(i * slotSize + lengths[i])])
    }
}

/// What a slot sent under each output sequence number, so a NACK can be answered from the source's
/// `PacketHistory` with the same rewritten fields (or, for padding in place of a packet left out, with padding
/// again: `SlotSender.fillWithPadding`).
public struct SlotSendLog: Sendable {
    public struct Record: Sendable, Equatable {
        public var outSequence: UInt16
        public var source: Int
        public var sourceSequence: Int64
        public var output: SlotRewriter.Output
        public var marker: Bool
        public var sentAt: MonoTime
        public var lastResend: MonoTime?
        public var resends: Int = 0
        /// Padding alone was sent under this number: the source packet is one the slot leaves out.
        public var padding = false
    }

    private var records: [Record?]
    private let mask: Int

    public init(capacity: Int = 1024) {
        var c = 1
        while c < capacity { c <<= 1 }
        records = [Record?](repeating: nil, count: c)
        mask = c - 1
    }

    public mutating func log(_ r: Record) { records[Int(r.outSequence) & mask] = r }

    public func lookup(_ seq: UInt16) -> Record? {
        guard let r = records[Int(seq) & mask], r.outSequence == seq else { return nil }
        return r
    }

    public mutating func markResent(_ seq: UInt16, at now: MonoTime) {
        guard records[Int(seq) & mask]?.outSequence == seq else { return }
        records[Int(seq) & mask]!.lastResend = now
        records[Int(seq) & mask]!.resends += 1
    }
}
