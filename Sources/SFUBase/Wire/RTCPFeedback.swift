/// The common part of RTPFB/PSFB messages: sender SSRC and media source SSRC (RFC 4585 section 6.1).
public struct FeedbackHeader: Equatable, Sendable {
    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32

    public static func parse(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket) -> FeedbackHeader? {
        guard pkt.body.count >= 8 else { return nil }
        return FeedbackHeader(senderSSRC: p.u32(pkt.body.lowerBound), mediaSSRC: p.u32(pkt.body.lowerBound + 4))
    }

    static func write(_ w: inout ByteWriter, type: RTCPPacketType, format: UInt8, words: Int,
                      sender: UInt32, media: UInt32) -> Bool {
        w.u8(0x80 | format); w.u8(type.rawValue); w.u16(UInt16(words - 1))
        w.u32(sender)
        return w.u32(media)
    }
}

/// Generic NACK (RFC 4585 section 6.2.1): pairs of packet ID and bitmask of the following 16 losses.
public enum GenericNACK {
    /// Calls `lost` for each sequence number the receiver reports lost. Returns nil when malformed.
    public static func forEachLost(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket, _ lost: (UInt16) -> Void) -> FeedbackHeader? {
        guard let h = FeedbackHeader.parse(p, pkt), (pkt.body.count - 8) % 4 == 0 else { return nil }
        var o = pkt.body.lowerBound + 8
        while o + 4 <= pkt.range.upperBound {
            let pid = p.u16(o)
            let blp = p.u16(o + 2)
            lost(pid)
            for bit in 0..<16 where blp & (1 << bit) != 0 { lost(pid &+ UInt16(bit + 1)) }
            o += 4
        }
        return h
    }

    /// Writes a NACK for `sequences` (sorted or not; packed into PID/BLP pairs).
    public static func write(sender: UInt32, media: UInt32, sequences: [UInt16], into out: UnsafeMutableRawBufferPointer) -> Int? {
        var pairs: [(UInt16, UInt16)] = []
        for seq in sequences.sorted(by: { Int16(bitPattern: $0 &- $1) < 0 }) {
            if let last = pairs.last {
                let d = seq &- last.0
                if d == 0 { continue }
                if d <= 16 { pairs[pairs.count - 1].1 |= 1 << (d - 1); continue }
            }
            pairs.append((seq, 0))
        }
        var w = ByteWriter(out)
        guard FeedbackHeader.write(&w, type: .transportFeedback, format: FeedbackFormat.nack, words: 3 + pairs.count,
                                   sender: sender, media: media) else { return nil }
        for (pid, blp) in pairs { w.u16(pid); guard w.u16(blp) else { return nil } }
        return w.offset
    }
}

/// Picture loss indication (RFC 4585 section 6.3.1): no FCI.
public enum PictureLossIndication {
    public static let size = 12
    public static func write(sender: UInt32, media: UInt32, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = ByteWriter(out)
        return FeedbackHeader.write(&w, type: .payloadFeedback, format: FeedbackFormat.pli, words: 3,
                                    sender: sender, media: media) ? w.offset : nil
    }
}

/// Full intra request (RFC 5104 section 4.3.1): FCI entries of SSRC, sequence number, 3 reserved bytes.
/// The media SSRC field of the common header is unused (zero).
public enum FullIntraRequest {
    public struct Entry: Equatable, Sendable {
        public var ssrc: UInt32
        public var sequenceNumber: UInt8
    }

    public static func parse(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket) -> (FeedbackHeader, [Entry])? {
        guard let h = FeedbackHeader.parse(p, pkt), (pkt.body.count - 8) % 8 == 0 else { return nil }
        var entries: [Entry] = []
        var o = pkt.body.lowerBound + 8
        while o + 8 <= pkt.range.upperBound {
            entries.append(Entry(ssrc: p.u32(o), sequenceNumber: p[o + 4]))
            o += 8
        }
        return (h, entries)
    }

    public static func write(sender: UInt32, target: UInt32, sequenceNumber: UInt8, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = ByteWriter(out)
        guard FeedbackHeader.write(&w, type: .payloadFeedback, format: FeedbackFormat.fir, words: 5,
                                   sender: sender, media: 0) else { return nil }
        w.u32(target); w.u8(sequenceNumber)
        return w.zeros(3) ? w.offset : nil
    }
}

/// Receiver estimated maximum bitrate (draft-alvestrand-rmcat-remb-03 section 2.2): PSFB FMT 15 with the
/// "REMB" identifier, a 6-bit exponent and 18-bit mantissa (bps = mantissa * 2^exp), and the SSRCs it
/// applies to.
public struct REMB: Equatable, Sendable {
    public var senderSSRC: UInt32
    public var bitrate: UInt64
    public var ssrcs: [UInt32]

    public init(senderSSRC: UInt32, bitrate: UInt64, ssrcs: [UInt32]) {
        self.senderSSRC = senderSSRC
        self.bitrate = bitrate
        self.ssrcs = ssrcs
    }

    /// Returns nil when the application-layer feedback is not a well-formed REMB.
    public static func parse(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket) -> REMB? {
        guard let h = FeedbackHeader.parse(p, pkt), pkt.body.count >= 16 else { return nil }
        let o = pkt.body.lowerBound + 8
        guard p[o] == 0x52, p[o + 1] == 0x45, p[o + 2] == 0x4D, p[o + 3] == 0x42 else { return nil }  // "REMB"
        let n = Int(p[o + 4])
        guard pkt.body.count >= 16 + 4 * n else { return nil }
        let exp = UInt64(p[o + 5] >> 2)
        let mantissa = UInt64(p.u24(o + 5) & 0x3FFFF)
        guard exp < 46 else { return nil }  // 2^46 * 2^18 overflows nothing real; larger is garbage
        return REMB(senderSSRC: h.senderSSRC, bitrate: mantissa << exp,
                    ssrcs: (0..<n).map { p.u32(o + 8 + 4 * $0) })
    }

    public func write(into out: UnsafeMutableRawBufferPointer) -> Int? {
        var exp: UInt64 = 0
        var mantissa = bitrate
        while mantissa > 0x3FFFF { mantissa >>= 1; exp += 1 }
        var w = ByteWriter(out)
        guard FeedbackHeader.write(&w, type: .payloadFeedback, format: FeedbackFormat.applicationLayer,
                                   words: 5 + ssrcs.count, sender: senderSSRC, media: 0) else { return nil }
        w.u8(0x52); w.u8(0x45); w.u8(0x4D); w.u8(0x42)
        w.u8(UInt8(ssrcs.count))
        w.u24(UInt32(exp) << 18 | UInt32(mantissa))
        for s in ssrcs { guard w.u32(s) else { return nil } }
        return w.offset
    }
}

/// Transport-wide congestion control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01 section 3.1):
/// parsed into per-packet arrival deltas for a send-side estimator.
public struct TransportCCFeedback: Equatable, Sendable {
    public struct PacketResult: Equatable, Sendable {
        public var sequenceNumber: UInt16
        /// Arrival time relative to the reference time, in microseconds; nil when not received.
        public var arrivalOffsetMicros: Int64?
    }

    /// The fixed fields of a feedback (section 3.1), read in place.
    public struct Header: Equatable, Sendable {
        public var senderSSRC: UInt32
        public var mediaSSRC: UInt32
        public var baseSequence: UInt16
        public var statusCount: Int
        /// Reference time in multiples of 64 ms (24-bit signed, as sent: it wraps; see `SendHistory`).
        public var referenceTime: Int32
        public var feedbackCount: UInt8

        /// Nil when the packet is too short for the fixed fields.
        public static func parse(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket) -> Header? {
            guard let h = FeedbackHeader.parse(p, pkt), pkt.body.count >= 16 else { return nil }
            let o = pkt.body.lowerBound + 8
            return Header(senderSSRC: h.senderSSRC, mediaSSRC: h.mediaSSRC, baseSequence: p.u16(o),
                          statusCount: Int(p.u16(o + 2)), referenceTime: Int32(bitPattern: p.u24(o + 4) << 8) >> 8,
                          feedbackCount: p[o + 7])
        }
    }

    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    public var baseSequence: UInt16
    /// Reference time in multiples of 64 ms (24-bit signed).
    public var referenceTime: Int32
    public var feedbackCount: UInt8
    public var packets: [PacketResult]

    /// The packet status count a feedback claims (what `parse` would build), read without parsing.
    public static func statusCount(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket) -> Int? {
        Header.parse(p, pkt)?.statusCount
    }

    /// Parses a feedback naming at most `maxPackets` packets into arrays; nil when malformed or larger. The
    /// status count is two bytes and one run-length chunk names 8,191 packets, so a 36-byte packet could
    /// otherwise become 65,535 entries. The media worker reads feedback with `forEachPacket` instead.
    public static func parse(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket, maxPackets: Int = 4096) -> TransportCCFeedback? {
        guard let count = statusCount(p, pkt), count <= maxPackets else { return nil }
        var results: [PacketResult] = []
        results.reserveCapacity(count)
        guard let h = forEachPacket(p, pkt, maxPackets: maxPackets, { seq, offset in
            results.append(PacketResult(sequenceNumber: seq, arrivalOffsetMicros: offset))
        }) else { return nil }
        return TransportCCFeedback(senderSSRC: h.senderSSRC, mediaSSRC: h.mediaSSRC, baseSequence: h.baseSequence,
                                   referenceTime: h.referenceTime, feedbackCount: h.feedbackCount, packets: results)
    }

    /// Reads a feedback in place, without allocating: calls `packet` with each reported sequence number, in
    /// order, and its arrival time relative to the reference time in microseconds (nil: not received).
    /// Returns the fixed fields, or nil - before any call - when the feedback is malformed (chunks or
    /// deltas past its end, a zero run, the reserved symbol 3) or names more than `maxPackets` packets.
    ///
    /// Status chunks (section 3.1.3): run-length (bit 15 = 0: a 2-bit symbol, a 13-bit run) or status
    /// vector (bit 15 = 1; bit 14 = 0: fourteen 1-bit symbols, 1: seven 2-bit ones). Symbol 1 has a 1-byte
    /// receive delta, symbol 2 a 2-byte signed one, both in 250 us units (section 3.1.5), after all chunks:
    /// so a first pass walks the chunks to check them and find the deltas, a second reports.
    @discardableResult
    public static func forEachPacket(_ p: UnsafeRawBufferPointer, _ pkt: RTCPPacket, maxPackets: Int = 4096,
                                     _ packet: (_ sequence: UInt16, _ arrivalOffsetMicros: Int64?) -> Void) -> Header? {
        guard let h = Header.parse(p, pkt), h.statusCount <= maxPackets else { return nil }
        let chunksAt = pkt.body.lowerBound + 16
        let end = pkt.range.upperBound
        // Pass 1: the chunks cover the status count, name no reserved symbol, and their deltas fit.
        var o = chunksAt, n = 0, deltaBytes = 0
        while n < h.statusCount {
            guard o + 2 <= end else { return nil }
            let chunk = p.u16(o)
            o += 2
            let take = min(symbolCount(chunk), h.statusCount - n)
            guard take > 0 else { return nil }  // a run of zero
            if chunk & 0x8000 == 0 {
                let s = symbol(chunk, 0)
                guard s != 3 else { return nil }
                deltaBytes += take * Int(s)  // symbol 1: one byte each, 2: two, 0: none
            } else {
                for k in 0..<take {
                    let s = symbol(chunk, k)
                    guard s != 3 else { return nil }
                    deltaBytes += Int(s)
                }
            }
            n += take
        }
        guard o + deltaBytes <= end else { return nil }
        // Pass 2: report, reading the deltas from where the chunks end.
        var d = o, t: Int64 = 0
        o = chunksAt
        n = 0
        while n < h.statusCount {
            let chunk = p.u16(o)
            o += 2
            let take = min(symbolCount(chunk), h.statusCount - n)
            for k in 0..<take {
                let seq = h.baseSequence &+ UInt16(truncatingIfNeeded: n + k)
                switch symbol(chunk, k) {
                case 1:
                    t += Int64(p[d]) * 250
                    d += 1
                    packet(seq, t)
                case 2:
                    t += Int64(Int16(bitPattern: p.u16(d))) * 250
                    d += 2
                    packet(seq, t)
                default:
                    packet(seq, nil)
                }
            }
            n += take
        }
        return h
    }

    /// How many symbols a status chunk holds.
    @inline(__always)
    private static func symbolCount(_ chunk: UInt16) -> Int {
        if chunk & 0x8000 == 0 { return Int(chunk & 0x1FFF) }
        return chunk & 0x4000 == 0 ? 14 : 7
    }

    /// The `k`-th symbol of a status chunk.
    @inline(__always)
    private static func symbol(_ chunk: UInt16, _ k: Int) -> UInt8 {
        if chunk & 0x8000 == 0 { return UInt8((chunk >> 13) & 0x3) }
        if chunk & 0x4000 == 0 { return UInt8((chunk >> (13 - UInt16(k))) & 0x1) }
        return UInt8((chunk >> (12 - 2 * UInt16(k))) & 0x3)
    }
}
