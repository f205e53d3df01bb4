/// The one-byte H.264 NAL unit header (RFC 6184 section 1.3, semantics in section 5.3). The first byte of
/// every RTP payload has this form too, its type then naming the packet (section 5.2, table 1).
///
///     |F|NRI|  Type   |
public struct H264NALHeader: Equatable, Sendable {
    public var byte: UInt8

    public init(_ byte: UInt8) { self.byte = byte }

    /// forbidden_zero_bit: 1 is a syntax violation (section 5.3), so the node refuses the packet.
    public var forbidden: Bool { byte & 0x80 != 0 }
    /// nal_ref_idc: 0 when no reference picture depends on the unit (it can be dropped harmlessly).
    public var nri: UInt8 { (byte >> 5) & 0x03 }
    public var type: UInt8 { byte & 0x1F }

    /// NAL unit types the SFU cares about (H.264 table 7-1) and RFC 6184's packet types (section 5.2).
    public static let idrSlice: UInt8 = 5
    public static let sps: UInt8 = 7
    public static let pps: UInt8 = 8
    public static let stapA: UInt8 = 24
    public static let fuA: UInt8 = 28

    /// Types 1-23 are H.264 NAL units; 0 and 24-31 are reserved or RFC 6184 packet types, never a unit that
    /// can be aggregated or fragmented (aggregation and fragmentation units do not nest, sections 5.7 and 5.8).
    static func isNALUnitType(_ t: UInt8) -> Bool { t >= 1 && t <= 23 }
}

/// An H.264 RTP payload in packetization-mode 1, "non-interleaved" (RFC 6184 sections 5.4 and 6.3): a single
/// NAL unit, a STAP-A or a FU-A, located in place. What a forwarder needs without reassembling frames: where
/// a key frame starts, and whether parameter sets ride along.
///
/// Refused (`.badCodecPayload`): an empty payload; the F bit set on the packet or on an aggregated unit;
/// types 0 and 30-31 (reserved, "ignore" in table 3 of section 5.4) and STAP-B, MTAP16, MTAP24 and FU-B
/// (25-27, 29), which only the interleaved mode allows; a STAP-A with no unit, a truncated size or unit, or a
/// unit of size 0 (section 5.7.1); a FU-A shorter than its two header bytes, with both S and E set (section 5.8:
/// a NAL unit that fits in one FU must not be fragmented), or fragmenting something that is not a NAL unit.
public struct H264Payload: Equatable, Sendable {
    public enum Packet: Equatable, Sendable {
        /// Section 5.6: the payload is one whole NAL unit, its header the payload's first byte.
        case single
        /// Section 5.7.1: `units` NAL units (at least one), each after its 16-bit size.
        case stapA(units: Int)
        /// Section 5.8: a fragment of one NAL unit; `start` and `end` are the FU header's S and E bits.
        case fuA(start: Bool, end: Bool)
    }

    public var packet: Packet
    /// The payload's first byte: the NAL unit header of a single NAL unit packet, the STAP-A header or the
    /// FU indicator (whose NRI is the fragmented unit's, section 5.8).
    public var header: H264NALHeader
    /// The NAL unit type the packet is about: a single unit's, a FU-A's fragmented unit's (from the FU header),
    /// a STAP-A's first unit's.
    public var nalType: UInt8
    /// Bit n set when a NAL unit of type n begins in this packet: every unit of a STAP-A, the single unit, a
    /// FU-A's unit only in its first fragment (S = 1). A bit set, so that parsing allocates nothing.
    public var startedNALTypes: UInt32

    /// The packet begins a key frame, where a receiver can start decoding: an IDR slice (type 5) or an SPS
    /// (type 7, which precedes the IDR slice of a key frame) begins in it - as a single NAL unit, inside a
    /// STAP-A, or as the first fragment (S = 1) of a FU-A.
    public var isKeyframeStart: Bool { starts(H264NALHeader.idrSlice) || starts(H264NALHeader.sps) }
    /// A sequence parameter set begins in this packet.
    public var carriesSPS: Bool { starts(H264NALHeader.sps) }
    /// A picture parameter set begins in this packet.
    public var carriesPPS: Bool { starts(H264NALHeader.pps) }

    /// Whether a NAL unit of `type` begins in this packet.
    public func starts(_ type: UInt8) -> Bool { type < 32 && startedNALTypes & (1 << UInt32(type)) != 0 }

    public static func parse(_ p: UnsafeRawBufferPointer) -> Result<H264Payload, DropReason> {
        guard let first = p.first else { return .failure(.badCodecPayload) }
        let h = H264NALHeader(first)
        guard !h.forbidden else { return .failure(.badCodecPayload) }
        switch h.type {
        case 1...23:
            return .success(H264Payload(packet: .single, header: h, nalType: h.type, startedNALTypes: 1 << UInt32(h.type)))
        case H264NALHeader.stapA:
            var units = 0
            var firstType: UInt8 = 0
            var started: UInt32 = 0
            if let reason = walkSTAPA(p, { unit, _ in
                if units == 0 { firstType = unit.type }
                units += 1
                started |= 1 << UInt32(unit.type)
            }) {
                return .failure(reason)
            }
            guard units > 0 else { return .failure(.badCodecPayload) }
            return .success(H264Payload(packet: .stapA(units: units), header: h, nalType: firstType, startedNALTypes: started))
        case H264NALHeader.fuA:
            // FU indicator, then the FU header |S|E|R|Type|. R "MUST be ignored by the receiver" (section 5.8).
            guard p.count >= 2 else { return .failure(.badCodecPayload) }
            let fu = p[1]
            let start = fu & 0x80 != 0, end = fu & 0x40 != 0
            let type = fu & 0x1F
            guard !(start && end), H264NALHeader.isNALUnitType(type) else { return .failure(.badCodecPayload) }
            return .success(H264Payload(packet: .fuA(start: start, end: end), header: h, nalType: type,
                                        startedNALTypes: start ? 1 << UInt32(type) : 0))
        default:
            // 0 and 30-31 reserved; 25-27 and 29 belong to the interleaved mode (section 5.4, table 3).
            return .failure(.badCodecPayload)
        }
    }

    /// Calls `body` with the header and the range (header included) of each whole NAL unit in `p`, the payload
    /// this was parsed from: the single unit, or each unit of a STAP-A; nothing for a FU-A fragment.
    public func forEachNALUnit(in p: UnsafeRawBufferPointer, _ body: (H264NALHeader, Range<Int>) -> Void) {
        switch packet {
        case .single: if let first = p.first { body(H264NALHeader(first), 0..<p.count) }
        case .stapA: _ = Self.walkSTAPA(p, body)
        case .fuA: break
        }
    }

    /// Walks a STAP-A's aggregation units (section 5.7.1, figure 7): after the one-byte STAP-A header, each
    /// unit is a 16-bit size then that many bytes of NAL unit. Stops at the first malformed unit, whose reason
    /// it returns; `body` has then seen only the units before it.
    static func walkSTAPA(_ p: UnsafeRawBufferPointer, _ body: (H264NALHeader, Range<Int>) -> Void) -> DropReason? {
        var o = 1
        while o < p.count {
            guard p.count - o >= 2 else { return .badCodecPayload }
            let size = Int(p.u16(o))
            o += 2
            guard size > 0, size <= p.count - o else { return .badCodecPayload }
            let unit = H264NALHeader(p[o])
            guard !unit.forbidden, H264NALHeader.isNALUnitType(unit.type) else { return .badCodecPayload }
            body(unit, o..<(o + size))
            o += size
        }
        return nil
    }
}
