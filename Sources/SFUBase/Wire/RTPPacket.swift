/// The fixed header, CSRC list, header extension and padding of an RTP packet (RFC 3550 section 5.1),
/// located in place: it records offsets into the caller's buffer and copies nothing.
public struct RTPHeader: Equatable, Sendable {
    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var csrcCount: Int
    /// The "defined by profile" field of the extension header: 0xBEDE one-byte, 0x1000-0x100F two-byte
    /// (RFC 8285 sections 4.2 and 4.3); `nil` without an extension.
    public var extensionProfile: UInt16?
    /// Byte range of the extension elements (after the 4-byte extension header).
    public var extensionRange: Range<Int>
    /// Byte range of the payload, padding excluded.
    public var payloadRange: Range<Int>
    public var paddingLength: Int

    /// Fixed header size (RFC 3550 section 5.1).
    public static let fixedSize = 12

    /// Offset of the first byte after the CSRC list: where an extension header starts, if any.
    public var csrcEnd: Int { RTPHeader.fixedSize + 4 * csrcCount }
    public var payloadOffset: Int { payloadRange.lowerBound }
    public var payloadLength: Int { payloadRange.count }

    /// Locates the parts of an RTP packet. Returns the reason instead when the packet is malformed.
    ///
    /// Checks: version 2; the CSRC list, extension length and padding count all fit the datagram
    /// (RFC 3550 section 5.1: "the last octet of the padding contains a count"; a zero count is invalid).
    /// `checkPadding: false` reads an SRTP packet's clear header: its padding count lies in the encrypted part.
    public static func parse(_ p: UnsafeRawBufferPointer, checkPadding: Bool = true) -> Result<RTPHeader, DropReason> {
        guard p.count >= fixedSize else { return .failure(.truncated) }
        let b0 = p[0]
        guard b0 >> 6 == 2 else { return .failure(.badVersion) }
        let hasPadding = b0 & 0x20 != 0
        let hasExtension = b0 & 0x10 != 0
        let cc = Int(b0 & 0x0F)
        var offset = fixedSize + 4 * cc
        guard offset <= p.count else { return .failure(.truncated) }
        var profile: UInt16? = nil
        var extRange = offset..<offset
        if hasExtension {
            guard offset + 4 <= p.count else { return .failure(.truncated) }
            profile = p.u16(offset)
            let words = Int(p.u16(offset + 2))
            let start = offset + 4
            let end = start + 4 * words
            guard end <= p.count else { return .failure(.badHeaderExtension) }
            extRange = start..<end
            offset = end
        }
        var padding = 0
        if hasPadding && checkPadding {
            padding = Int(p[p.count - 1])
            guard padding > 0, offset + padding <= p.count else { return .failure(.badPadding) }
        }
        return .success(RTPHeader(
            marker: p[1] & 0x80 != 0,
            payloadType: p[1] & 0x7F,
            sequenceNumber: p.u16(2),
            timestamp: p.u32(4),
            ssrc: p.u32(8),
            csrcCount: cc,
            extensionProfile: profile,
            extensionRange: extRange,
            payloadRange: offset..<(p.count - padding),
            paddingLength: padding
        ))
    }

    /// Reads the SSRC of a datagram without validating the rest: the SSRC is sent in clear even under
    /// SRTP (RFC 3711 section 3.1), so it picks the decryption context before anything is decrypted.
    public static func peekSSRC(_ p: UnsafeRawBufferPointer) -> UInt32? {
        p.count >= fixedSize ? p.u32(8) : nil
    }

    /// The header extension elements of this packet in `packet`.
    public func extensions(in packet: UnsafeRawBufferPointer) -> RTPHeaderExtensions {
        RTPHeaderExtensions(packet: packet, profile: extensionProfile ?? 0, range: extensionRange)
    }
}

/// RFC 5761 section 4: with rtcp-mux, a datagram whose second byte is 192-223 (RTCP packet types
/// FIR..PSFB, i.e. RTP payload types 64-95 with the marker bit) is RTCP.
public func isRTCP(_ p: UnsafeRawBufferPointer) -> Bool {
    p.count >= 2 && (192...223).contains(p[1])
}

/// Builds whole RTP packets into caller buffers (fixed header, one-byte extensions, payload) for the node's
/// clients (the load generator, tests): a header and payload through `OutgoingRTP`, the node's one writer.
public struct RTPPacketBuilder {
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var marker: Bool

    public init(payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32, marker: Bool = false) {
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.marker = marker
    }

    /// Writes the packet and returns its length, or `nil` when `out` is too small.
    /// `extensions` are written in the one-byte form (RFC 8285 section 4.2): ids 1-14, 1-16 bytes each.
    public func write(
        extensions: [(id: UInt8, value: [UInt8])] = [],
        payload: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) -> Int? {
        var h = OutgoingRTP(payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc, marker: marker)
        h.otherExtensions = extensions
        var w = ByteWriter(out)
        var unused: Int?
        guard h.write(&w, transportSequenceOffset: &unused), w.bytes(payload) else { return nil }
        return w.offset
    }
}
