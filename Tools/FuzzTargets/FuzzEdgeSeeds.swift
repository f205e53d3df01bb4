import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// The edge target's seed programs, written in `FuzzEdge.step`'s format.
extension FuzzEdge {
    /// Seeds: media both ways and RTCP feedback on the slots; roaming; a replay; DTLS records; garbage; time.
    static var seeds: [[UInt8]] {
        var audio = RTPStreamWriter(ssrc: 0, payloadType: 111, audioLevelExtensionID: 1)
        var video = RTPStreamWriter(ssrc: 0, payloadType: 96)
        let opus = audio.packet([0x78, 0x80, 0x11, 0x22, 0x33, 0x44], level: 20)
        // B's audio is bound by the MID extension (id 4, mid "0"), with its level (id 1).
        var opusMID = [UInt8](repeating: 0, count: 64)
        let payload: [UInt8] = [0x78, 0x80, 0x55, 0x66, 0x77, 0x88]
        let n = payload.withUnsafeBytes { p in
            opusMID.withUnsafeMutableBytes {
                RTPPacketBuilder(payloadType: 111, sequenceNumber: 0, timestamp: 0, ssrc: 0)
                    .write(extensions: [(1, [AudioLevelExtension(voiceActivity: true, level: 25).byte]), (4, Array("0".utf8))], payload: p, into: $0)
            }
        }
        opusMID = Array(opusMID[0..<n!])
        let keyframe = video.packet([0x90, 0xC0, 0x80, 0x01, 0x00, 0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x40, 0x01, 0xF0, 0x00], marker: true)
        func op(_ client: UInt8, _ kind: UInt8) -> UInt8 { kind << 2 | client }
        // RTCP from a subscriber (sender 0x5F5F5F04, a stranger SSRC): RR on slot 5, PLI, NACK, REMB on slot 6.
        let rr: [UInt8] = [0x81, 0xC9, 0, 7, 0x5F, 0x5F, 0x5F, 4, 0x5F, 0x5F, 0x5F, 5, 0x10, 0, 0, 3, 0, 0, 0x10, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0]
        let pli: [UInt8] = [0x81, 0xCE, 0, 2, 0x5F, 0x5F, 0x5F, 4, 0x5F, 0x5F, 0x5F, 6]
        let nack: [UInt8] = [0x81, 0xCD, 0, 3, 0x5F, 0x5F, 0x5F, 4, 0x5F, 0x5F, 0x5F, 5, 0x03, 0xE9, 0x00, 0x05]
        let remb: [UInt8] = [0x8F, 0xCE, 0, 5, 0x5F, 0x5F, 0x5F, 4, 0, 0, 0, 0, 0x52, 0x45, 0x4D, 0x42, 1, 0x0B, 0xC8, 0xE8, 0x5F, 0x5F, 0x5F, 6]
        let sr: [UInt8] = [0x80, 0xC8, 0, 6, 0x5F, 0x5F, 0x5F, 0, 0xE8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xC3, 0x50, 0, 0, 0, 10, 0, 0, 1, 0]
        var w = FuzzWriter()
        for i in 0..<6 {
            w.u8(op(0, 2)); w.u8(0); w.u8(1); w.u16(96); w.chunk(opus)
            w.u8(op(1, 2)); w.u8(3); w.u8(1); w.u16(96); w.chunk(opusMID)
            if i % 3 == 0 { w.u8(op(0, 2)); w.u8(1); w.u8(1); w.u16(300); w.chunk(keyframe) }
            w.u8(op(0, 7)); w.u8(2); w.u8(0)
        }
        w.u8(op(3, 3)); w.chunk(nack)
        w.u8(op(3, 3)); w.chunk(pli)
        w.u8(op(2, 3)); w.chunk(rr)
        w.u8(op(3, 3)); w.chunk(remb)
        w.u8(op(0, 3)); w.chunk(sr)
        w.u8(op(0, 7)); w.u8(4); w.u8(0)
        let media = w.bytes
        var roam = FuzzWriter()
        roam.u8(op(2, 0)); roam.u8(0x03)  // nominate from the neighbouring port
        roam.u8(op(0, 2)); roam.u8(0); roam.u8(1); roam.u16(96); roam.chunk(opus)
        roam.u8(op(2, 1))  // replay A's subscriber check from the attacker
        roam.u8(op(1, 0)); roam.u8(0x09)  // pooled transaction ID...
        roam.u8(op(3, 0)); roam.u8(0x0D)  // ...the same ID from another client, from another network
        roam.u8(op(0, 7)); roam.u8(6); roam.u8(0)
        var dtls = FuzzWriter()
        dtls.u8(op(1, 4)); dtls.u8(0); dtls.u8(3); dtls.u16(1); dtls.raw([0, 0, 0, 0, 0, 9]); dtls.chunk([1, 2, 3, 4, 5, 6, 7, 8])
        dtls.u8(op(2, 4)); dtls.u8(1); dtls.chunk([0x16, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1])
        dtls.u8(op(3, 4)); dtls.u8(2)
        dtls.u8(op(0, 5)); dtls.chunk([0x80, 0xC8, 0, 1, 1, 2, 3, 4])
        dtls.u8(op(1, 6)); dtls.u8(1); dtls.chunk([0, 1, 0, 0, 0x21, 0x12, 0xA4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
        dtls.u8(op(0, 7)); dtls.u8(0x87); dtls.u8(0)  // 31 s without consent checks from A's publisher: it expires
        return [media, roam.bytes, dtls.bytes]
    }
}
