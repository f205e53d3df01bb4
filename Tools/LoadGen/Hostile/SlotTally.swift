/// The RTP header fields a receiver reads in clear from an SRTP packet.
enum ClearRTP {
    static func ssrc(_ p: UnsafeRawBufferPointer) -> UInt32? {
        guard p.count >= 12 else { return nil }
        return UInt32(p[8]) << 24 | UInt32(p[9]) << 16 | UInt32(p[10]) << 8 | UInt32(p[11])
    }

    static func sequence(_ p: UnsafeRawBufferPointer) -> UInt16? {
        guard p.count >= 12 else { return nil }
        return UInt16(p[2]) << 8 | UInt16(p[3])
    }
}

/// What a subscriber receives, by the SSRC of the slot it arrives on: packets that decrypt (their sequence
/// numbers and payload types in arrival order), packets that do not, and the ids of the header extension
/// elements in their clear headers (one-byte form, RFC 8285 section 4.2; two-byte form ids count too).
final class SlotTally {
    struct Stream {
        var sequences: [UInt16] = []
        var payloadTypes: [UInt8: Int] = [:]
        var undecryptable = 0
        var packets: Int { sequences.count }
    }
    private(set) var streams: [UInt32: Stream] = [:]
    /// Header extension ids seen, by id: how many packets carried each.
    private(set) var extensionIDs: [UInt8: Int] = [:]
    /// Packets with a header extension block of a form other than one-byte (0xBEDE) or two-byte (0x100x).
    private(set) var otherExtensionForms = 0

    /// Takes over `client.onMedia`.
    init(_ client: LoadClient) {
        client.onMedia = { [unowned self, unowned client] buffer, length, _ in
            let clear = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
            guard let ssrc = ClearRTP.ssrc(clear), let seq = ClearRTP.sequence(clear) else { return }
            for id in Self.extensionIDs(clear) { self.extensionIDs[id, default: 0] += 1 }
            if Self.extensionForm(clear).map({ $0 != 0xBEDE && $0 & 0xFFF0 != 0x1000 }) == true { self.otherExtensionForms += 1 }
            let pt = clear[1] & 0x7F
            if client.decrypt(buffer, length: length) != nil {
                self.streams[ssrc, default: Stream()].sequences.append(seq)
                self.streams[ssrc, default: Stream()].payloadTypes[pt, default: 0] += 1
            } else {
                self.streams[ssrc, default: Stream()].undecryptable += 1
            }
        }
    }

    func packets(_ ssrc: UInt32) -> Int { streams[ssrc]?.packets ?? 0 }
    func sequences(_ ssrc: UInt32) -> [UInt16] { streams[ssrc]?.sequences ?? [] }

    /// The "defined by profile" word of an RTP packet's header extension, when it has one.
    static func extensionForm(_ p: UnsafeRawBufferPointer) -> UInt16? {
        guard p.count >= 12, p[0] & 0x10 != 0 else { return nil }
        let at = 12 + 4 * Int(p[0] & 0x0F)
        guard p.count >= at + 4 else { return nil }
        return UInt16(p[at]) << 8 | UInt16(p[at + 1])
    }

    /// The ids of an RTP packet's header extension elements, as a receiver reads them: in the one-byte form
    /// id 0 is padding and id 15 ends the parse (it is reported: nothing may be sent under it).
    static func extensionIDs(_ p: UnsafeRawBufferPointer) -> [UInt8] {
        guard let form = extensionForm(p) else { return [] }
        let at = 12 + 4 * Int(p[0] & 0x0F)
        let end = min(p.count, at + 4 + 4 * (Int(p[at + 2]) << 8 | Int(p[at + 3])))
        var i = at + 4
        var ids: [UInt8] = []
        if form == 0xBEDE {
            while i < end {
                let id = p[i] >> 4
                if id == 0 { i += 1; continue }
                ids.append(id)
                if id == 15 { break }
                i += 1 + Int(p[i] & 0x0F) + 1
            }
        } else if form & 0xFFF0 == 0x1000 {
            while i + 1 < end {
                let id = p[i]
                if id == 0 { i += 1; continue }
                ids.append(id)
                i += 2 + Int(p[i + 1])
            }
        }
        return ids
    }

    /// The largest step back between consecutive sequence numbers (0 when they only go forward), read mod
    /// 2^16: a step of more than 2^15 forward is one back.
    static func largestStepBack(_ seqs: [UInt16]) -> Int {
        zip(seqs, seqs.dropFirst()).map { a, b in
            let d = Int(Int16(bitPattern: b &- a))
            return d < 0 ? -d : 0
        }.max() ?? 0
    }
}
