import SFU

/// Plain RTCP a hostile client sends (before its SRTCP protection).
enum RTCPBuilder {
    static func build(_ writers: [(UnsafeMutableRawBufferPointer) -> Int?]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 1500)
        var n = 0
        out.withUnsafeMutableBytes { buf in
            for w in writers {
                guard let written = w(UnsafeMutableRawBufferPointer(rebasing: buf[n...])) else { continue }
                n += written
            }
        }
        return Array(out[0..<n])
    }

    static func receiverReport(_ sender: UInt32, naming ssrcs: [UInt32]) -> (UnsafeMutableRawBufferPointer) -> Int? {
        let blocks = ssrcs.prefix(31).map {
            ReportBlock(ssrc: $0, fractionLost: 128, cumulativeLost: 1000, extendedHighestSequence: 0xFFFF_FFFF,
                        jitter: 0xFFFF, lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 0x10)
        }
        return { ReceiverReport(ssrc: sender, reports: Array(blocks)).write(into: $0) }
    }

    static func senderReport(_ ssrc: UInt32, ntp: UInt64) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { SenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: 0x4000_0000, packetCount: 1, octetCount: 100).write(into: $0) }
    }

    static func nack(_ sender: UInt32, media: UInt32, _ sequences: [UInt16]) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { GenericNACK.write(sender: sender, media: media, sequences: sequences, into: $0) }
    }

    /// A generic NACK with these PID/BLP pairs as given (not packed): one datagram may name thousands.
    static func nackPairs(_ sender: UInt32, media: UInt32, _ pairs: [(UInt16, UInt16)]) -> [UInt8] {
        let words = 2 + pairs.count
        var b: [UInt8] = [0x81, 205, UInt8(words >> 8), UInt8(words & 0xFF)]
        for v in [sender, media] { b += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        for (pid, blp) in pairs { b += [UInt8(pid >> 8), UInt8(pid & 0xFF), UInt8(blp >> 8), UInt8(blp & 0xFF)] }
        return b
    }

    static func pli(_ sender: UInt32, media: UInt32) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { PictureLossIndication.write(sender: sender, media: media, into: $0) }
    }

    static func fir(_ sender: UInt32, target: UInt32, seq: UInt8) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { FullIntraRequest.write(sender: sender, target: target, sequenceNumber: seq, into: $0) }
    }

    static func remb(_ sender: UInt32, bps: UInt64, ssrcs: [UInt32]) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { REMB(senderSSRC: sender, bitrate: bps, ssrcs: ssrcs).write(into: $0) }
    }

    /// A transport-cc feedback (RTPFB FMT 15) in 36 bytes that claims `statusCount` packets: eight
    /// run-length chunks of 8,191 "received, small delta" and no deltas.
    static func transportCC(_ sender: UInt32, media: UInt32, statusCount: UInt16) -> [UInt8] {
        var b: [UInt8] = [0x8F, 205, 0x00, 0x08]
        for v in [sender, media] { b += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        b += [0x00, 0x00, UInt8(statusCount >> 8), UInt8(statusCount & 0xFF), 0x00, 0x00, 0x01, 0x00]
        for _ in 0..<8 { b += [0x3F, 0xFF] }
        return b
    }
}
