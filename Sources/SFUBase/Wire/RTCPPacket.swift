/// RTCP packet types (RFC 3550 section 12.1, RFC 4585 section 6.1).
public enum RTCPPacketType: UInt8, Sendable {
    case senderReport = 200
    case receiverReport = 201
    case sourceDescription = 202
    case goodbye = 203
    case application = 204
    case transportFeedback = 205  // RTPFB
    case payloadFeedback = 206  // PSFB
}

/// Feedback message types: RTPFB FMT 1 generic NACK (RFC 4585 section 6.2.1), FMT 15 transport-wide CC
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 section 3.1); PSFB FMT 1 PLI (RFC 4585 section 6.3.1),
/// FMT 4 FIR (RFC 5104 section 4.3.1), FMT 15 application layer feedback, used by REMB.
public enum FeedbackFormat {
    public static let nack: UInt8 = 1
    public static let transportCC: UInt8 = 15
    public static let pli: UInt8 = 1
    public static let fir: UInt8 = 4
    public static let applicationLayer: UInt8 = 15
}

/// One packet of an RTCP compound datagram, located in place.
public struct RTCPPacket: Sendable, Equatable {
    /// The raw packet type byte (200-206 known; others are skipped by callers).
    public var packetType: UInt8
    /// The 5-bit count / FMT field.
    public var countOrFormat: UInt8
    /// Whole packet, header included, padding excluded.
    public var range: Range<Int>
    public var type: RTCPPacketType? { RTCPPacketType(rawValue: packetType) }
    /// The packet body after the 4-byte common header.
    public var body: Range<Int> { (range.lowerBound + 4)..<range.upperBound }

    @inlinable public init(packetType: UInt8, countOrFormat: UInt8, range: Range<Int>) {
        self.packetType = packetType
        self.countOrFormat = countOrFormat
        self.range = range
    }
}

/// Splits an RTCP compound packet into its packets (RFC 3550 section 6.1).
///
/// Every packet must be version 2 and its length field must fit the datagram; padding is only allowed on
/// the last packet. Reduced-size RTCP (RFC 5506) is accepted: the first packet need not be SR/RR.
public enum RTCPCompound {
    /// Calls `body` for each packet; returns the reason when the compound is malformed (packets already
    /// visited stay visited: callers that need all-or-nothing call `validate` first).
    /// Inlinable: its callers' closures capture what they count as they go, which a call across the module
    /// boundary would box on the heap for every datagram.
    @inlinable
    public static func forEach(_ p: UnsafeRawBufferPointer, _ body: (RTCPPacket) -> Void) -> DropReason? {
        var offset = 0
        guard p.count >= 4 else { return .truncated }
        while offset < p.count {
            guard offset + 4 <= p.count else { return .truncated }
            let b0 = p[offset]
            guard b0 >> 6 == 2 else { return .badVersion }
            let length = (Int(p.u16(offset + 2)) + 1) * 4
            guard offset + length <= p.count else { return .badLength }
            var end = offset + length
            if b0 & 0x20 != 0 {
                // Padding only on the last packet; the count is in its last octet.
                guard end == p.count else { return .badPadding }
                let pad = Int(p[end - 1])
                guard pad > 0, pad <= length - 4 else { return .badPadding }
                end -= pad
            }
            body(RTCPPacket(packetType: p[offset + 1], countOrFormat: b0 & 0x1F, range: offset..<end))
            offset += length
        }
        return nil
    }

    /// Checks a whole compound without acting on it.
    public static func validate(_ p: UnsafeRawBufferPointer) -> DropReason? {
        forEach(p) { _ in }
    }
}

/// A reception report block (RFC 3550 section 6.4.1).
public struct ReportBlock: Equatable, Sendable {
    public var ssrc: UInt32
    public var fractionLost: UInt8
    /// Cumulative number of packets lost: a signed 24-bit value.
    public var cumulativeLost: Int32
    public var extendedHighestSequence: UInt32
    public var jitter: UInt32
    public var lastSenderReport: UInt32
    public var delaySinceLastSenderReport: UInt32

    public static let size = 24

    public init(ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, extendedHighestSequence: UInt32,
                jitter: UInt32, lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequence = extendedHighestSequence
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    static func read(_ p: UnsafeRawBufferPointer, at o: Int) -> ReportBlock {
        let raw = p.u24(o + 5)
        let lost = Int32(bitPattern: raw << 8) >> 8  // sign-extend 24 bits
        return ReportBlock(ssrc: p.u32(o), fractionLost: p[o + 4], cumulativeLost: lost,
                           extendedHighestSequence: p.u32(o + 8), jitter: p.u32(o + 12),
                           lastSenderReport: p.u32(o + 16), delaySinceLastSenderReport: p.u32(o + 20))
    }

    func write(_ w: inout ByteWriter) {
        w.u32(ssrc)
        w.u8(fractionLost)
        w.u24(UInt32(bitPattern: cumulativeLost) & 0xFF_FFFF)
        w.u32(extendedHighestSequence)
        w.u32(jitter)
        w.u32(lastSenderReport)
        w.u32(delaySinceLastSenderReport)
    }
}

/// Sender report (RFC 3550 section 6.4.1).
public struct SenderReport: Equatable, Sendable {
    public var ssrc: UInt32
    public var ntpTimestamp: UInt64
    public var rtpTimestamp: UInt32
    public var packetCount: UInt32
    public var octetCount: UInt32
    public var reports: [ReportBlock]

    public init(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
                reports: [ReportBlock] = []) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reports = reports
    }

    /// Offset of the RTP timestamp within an SR packet: rewritten in place when an SR is forwarded for a slot.
    public static let rtpTimestampOffset = 16

    public static func parse(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket) -> Result<SenderReport, DropReason> {
        let b = pkt.body
        let count = Int(pkt.countOrFormat)
        guard b.count >= 24 + count * ReportBlock.size else { return .failure(.badRTCP) }
        let o = b.lowerBound
        var blocks: [ReportBlock] = []
        blocks.reserveCapacity(count)
        for i in 0..<count { blocks.append(.read(p, at: o + 24 + i * ReportBlock.size)) }
        return .success(SenderReport(ssrc: p.u32(o), ntpTimestamp: UInt64(p.u32(o + 4)) << 32 | UInt64(p.u32(o + 8)),
                                     rtpTimestamp: p.u32(o + 12), packetCount: p.u32(o + 16),
                                     octetCount: p.u32(o + 20), reports: blocks))
    }

    public func write(into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = ByteWriter(out)
        let length = (4 + 24 + reports.count * ReportBlock.size) / 4 - 1
        w.u8(0x80 | UInt8(reports.count & 0x1F)); w.u8(RTCPPacketType.senderReport.rawValue); w.u16(UInt16(length))
        w.u32(ssrc); w.u32(UInt32(ntpTimestamp >> 32)); w.u32(UInt32(truncatingIfNeeded: ntpTimestamp))
        w.u32(rtpTimestamp); w.u32(packetCount)
        guard w.u32(octetCount), w.remaining >= reports.count * ReportBlock.size else { return nil }
        for r in reports { r.write(&w) }
        return w.offset
    }
}

/// Receiver report (RFC 3550 section 6.4.2).
public struct ReceiverReport: Equatable, Sendable {
    public var ssrc: UInt32
    public var reports: [ReportBlock]

    public init(ssrc: UInt32, reports: [ReportBlock]) {
        self.ssrc = ssrc
        self.reports = reports
    }

    public static func parse(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket) -> Result<ReceiverReport, DropReason> {
        let b = pkt.body
        let count = Int(pkt.countOrFormat)
        guard b.count >= 4 + count * ReportBlock.size else { return .failure(.badRTCP) }
        var blocks: [ReportBlock] = []
        blocks.reserveCapacity(count)
        for i in 0..<count { blocks.append(.read(p, at: b.lowerBound + 4 + i * ReportBlock.size)) }
        return .success(ReceiverReport(ssrc: p.u32(b.lowerBound), reports: blocks))
    }

    public func write(into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = ByteWriter(out)
        let length = (8 + reports.count * ReportBlock.size) / 4 - 1
        w.u8(0x80 | UInt8(reports.count & 0x1F)); w.u8(RTCPPacketType.receiverReport.rawValue); w.u16(UInt16(length))
        guard w.u32(ssrc), w.remaining >= reports.count * ReportBlock.size else { return nil }
        for r in reports { r.write(&w) }
        return w.offset
    }
}

/// Source description (RFC 3550 section 6.5): validated for structure; the node reads only CNAMEs.
public enum SourceDescription {
    public struct Item: Equatable, Sendable {
        public var ssrc: UInt32
        public var type: UInt8
        public var value: [UInt8]
    }

    public static func parse(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket) -> Result<[Item], DropReason> {
        var items: [Item] = []
        var o = pkt.body.lowerBound
        let end = pkt.range.upperBound
        for _ in 0..<Int(pkt.countOrFormat) {
            guard o + 4 <= end else { return .failure(.badRTCP) }
            let ssrc = p.u32(o)
            o += 4
            while true {
                guard o < end else { return .failure(.badRTCP) }
                let type = p[o]
                if type == 0 {
                    o += 1
                    o = (o + 3) & ~3  // chunk ends with null items up to a 32-bit boundary
                    break
                }
                guard o + 2 <= end else { return .failure(.badRTCP) }
                let len = Int(p[o + 1])
                guard o + 2 + len <= end else { return .failure(.badRTCP) }
                items.append(Item(ssrc: ssrc, type: type, value: Array(p[(o + 2)..<(o + 2 + len)])))
                o += 2 + len
            }
        }
        return .success(items)
    }
}

/// Goodbye (RFC 3550 section 6.6).
public enum Goodbye {
    public static func parse(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket) -> Result<[UInt32], DropReason> {
        let b = pkt.body
        let count = Int(pkt.countOrFormat)
        guard b.count >= 4 * count else { return .failure(.badRTCP) }
        return .success((0..<count).map { p.u32(b.lowerBound + 4 * $0) })
    }

    public static func write(ssrcs: [UInt32], into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = ByteWriter(out)
        w.u8(0x80 | UInt8(ssrcs.count & 0x1F)); w.u8(RTCPPacketType.goodbye.rawValue); w.u16(UInt16(ssrcs.count))
        for s in ssrcs { guard w.u32(s) else { return nil } }
        return w.offset
    }
}
