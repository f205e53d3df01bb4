/// The header of an RTP packet the node sends: the fixed header (RFC 3550 section 5.1), then, in the
/// one-byte form (RFC 8285 section 4.2), the header extensions the receiver negotiated: audio level
/// (RFC 6464), abs-send-time and the transport-wide sequence number, and any others a client of the node
/// sends (`otherExtensions`: the load generator's and the tests' publishers). The one RTP writer: forwarded
/// packets, retransmissions, probe padding, silence frames and `RTPPacketBuilder` all go through it, into the
/// caller's buffer, without allocating when `otherExtensions` is empty.
public struct OutgoingRTP {
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var marker = false
    /// Padding bytes after the payload (RFC 3550 section 5.1: the last one holds the count), 0-255.
    public var padding = 0
    public var audioLevel: (id: UInt8, level: UInt8)?
    public var absSendTime: (id: UInt8, value: UInt32)?
    /// The transport-wide sequence number's id: its two bytes are left for `stamp`.
    public var transportSequenceID: UInt8?
    /// More one-byte elements (ids 1-14, 1-16 bytes), written after the ones above in this order.
    public var otherExtensions: [(id: UInt8, value: [UInt8])] = []

    /// The ids the one-byte form can carry (RFC 8285 section 4.2: 0 is padding, 15 stops the parse).
    public static let oneByteIDs: ClosedRange<UInt8> = 1...14

    public init(payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32, marker: Bool = false) {
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.marker = marker
    }

    /// Writes the header; returns false when `w` has no room. `transportSequenceOffset` is where the
    /// transport-wide sequence number goes, once the packet's size is known.
    public func write(_ w: inout ByteWriter, transportSequenceOffset: inout Int?) -> Bool {
        // Every id was negotiated in an answer that offers only one-byte ids (`OfferAnswer.oneByteID`): one
        // outside 1-14 here is a bug that would send the element under another id, or as the stop marker.
        precondition(audioLevel.map { Self.oneByteIDs.contains($0.id) } ?? true
                     && absSendTime.map { Self.oneByteIDs.contains($0.id) } ?? true
                     && transportSequenceID.map { Self.oneByteIDs.contains($0) } ?? true, "one-byte extension ids are 1-14")
        var body = (audioLevel == nil ? 0 : 2) + (absSendTime == nil ? 0 : 4) + (transportSequenceID == nil ? 0 : 3)
        for e in otherExtensions {
            precondition(Self.oneByteIDs.contains(e.id) && (1...16).contains(e.value.count), "one-byte extension limits")
            body += 1 + e.value.count
        }
        w.u8(0x80 | (body > 0 ? 0x10 : 0) | (padding > 0 ? 0x20 : 0))
        w.u8((marker ? 0x80 : 0) | (payloadType & 0x7F))
        w.u16(sequenceNumber)
        w.u32(timestamp)
        guard w.u32(ssrc) else { return false }
        transportSequenceOffset = nil
        guard body > 0 else { return true }
        let words = (body + 3) / 4
        w.u16(0xBEDE)
        w.u16(UInt16(words))
        if let a = audioLevel { w.u8(a.id << 4); w.u8(a.level & 0x7F) }
        if let s = absSendTime { w.u8(s.id << 4 | 2); w.u24(s.value & 0xFF_FFFF) }
        if let id = transportSequenceID {
            w.u8(id << 4 | 1)
            transportSequenceOffset = w.offset
            w.u16(0)
        }
        for e in otherExtensions {
            w.u8(e.id << 4 | UInt8(e.value.count - 1))
            for b in e.value { w.u8(b) }
        }
        return w.zeros(words * 4 - body)
    }

    /// Appends the padding (RFC 3550: zeros, then the count) after the payload written so far.
    public func writePadding(_ w: inout ByteWriter) -> Bool {
        guard padding > 0 else { return true }
        return w.zeros(padding - 1) && w.u8(UInt8(padding))
    }
}
