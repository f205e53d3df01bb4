import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// What the client sends: audio and video frames on its streams (moving a layer to a new SSRC on request),
/// REMB, and the raw or keyed packets a hostile client makes up.
extension LoadClient {
    /// Sends one Opus frame, with the audio level extension when the profile has it (level in -dBov, 127 =
    /// silence).
    public func sendAudio(_ frame: [UInt8], level: UInt8, samples: UInt32 = 960) {
        guard !profile.audioInactive else { return }
        send(frame, marker: false, writer: &writer, level: level)
        writer.advance(samples: samples)
    }

    /// Sends one video frame's RTP payloads (the last with the marker bit) on simulcast layer `layer` (0: the
    /// lowest, or the only stream), then advances that layer's timestamp.
    public func sendVideo(_ payloads: [[UInt8]], samples: UInt32, layer: Int = 0) {
        for (i, p) in payloads.enumerated() {
            if videoSSRCFlips.contains(layer) { moveVideo(layer: layer, to: .random(in: 1...UInt32.max)) }
            if layer == 0 {
                send(p, marker: i == payloads.count - 1, writer: &videoWriter, level: nil)
            } else {
                send(p, marker: i == payloads.count - 1, writer: &layerWriters[layer - 1], level: nil)
            }
        }
        if layer == 0 { videoWriter.advance(samples: samples) } else { layerWriters[layer - 1].advance(samples: samples) }
    }

    /// The SSRC of simulcast layer `layer` (0: the lowest, or the only stream).
    public func videoSSRC(layer: Int) -> UInt32 { layer == 0 ? videoWriter.ssrc : layerWriters[layer - 1].ssrc }

    /// The next `ridTaggedPackets` packets of a simulcast layer carry its MID and RID (a new stream's first).
    func tagLayer(_ layer: Int) {
        let tags: [(id: UInt8, value: [UInt8])] = [(Self.midOfferID, Array("\(videoMid)".utf8)), (Self.ridOfferID, Array(Self.rids[layer].utf8))]
        if layer == 0 { videoWriter.tag(tags, packets: Self.ridTaggedPackets) } else { layerWriters[layer - 1].tag(tags, packets: Self.ridTaggedPackets) }
    }

    /// Moves a video layer (0: the lowest, or the only stream) to a new SSRC, as a sender resolving an SSRC
    /// collision does (RFC 3550 section 8.2): a new sequence space, and with rid-based simulcast the MID and
    /// RID on the new stream's first packets. Nothing is signalled.
    public func moveVideo(layer: Int = 0, to ssrc: UInt32) {
        if layer == 0 { videoWriter.move(to: ssrc) } else { layerWriters[layer - 1].move(to: ssrc) }
        if ridSimulcast { tagLayer(layer) }
    }

    private func send(_ payload: [UInt8], marker: Bool, writer w: inout RTPStreamHeader, level: UInt8?) {
        guard state == .connected, let tx, let node else { return }
        var n = 0
        scratch.withUnsafeMutableBytes { out in
            n = w.write(payload: payload, level: level, marker: marker, into: out)
            if case .success(let sealed) = tx.protectRTP(out, length: n) { n = sealed } else { n = 0 }
        }
        guard n > 0 else { return }
        _ = scratch.withUnsafeBytes { transmit(Array($0[0..<n])) }
        mediaPacketsSent += 1
    }

    /// A subscriber's downlink estimate (REMB, RFC draft-alvestrand-rmcat-remb).
    public func sendREMB(bitsPerSecond: UInt64) {
        guard state == .connected, let tx, let node else { return }
        var n = 0
        scratch.withUnsafeMutableBytes { out in
            guard let written = REMB(senderSSRC: rtcpSSRC, bitrate: bitsPerSecond, ssrcs: [1]).write(into: out),
                  case .success(let sealed) = tx.protectRTCP(out, length: written) else { return }
            n = sealed
        }
        guard n > 0 else { return }
        _ = scratch.withUnsafeBytes { transmit(Array($0[0..<n])) }
    }

    /// Sends raw bytes from this client's validated address: what a broken or hostile client would do.
    public func sendRaw(_ bytes: [UInt8]) {
        guard let node else { return }
        transmit(bytes)
    }

    /// Protects a plain RTCP compound with this client's SRTCP keys and sends it, whatever the state (a
    /// hostile client goes on after the node closed its transport). The first packet's sender SSRC picks the
    /// SRTCP stream. False when there are no keys yet or the compound is too large.
    @discardableResult
    public func sendRTCP(_ plain: [UInt8]) -> Bool { sendProtected(plain, rtcp: true) }

    /// Protects a plain RTP packet with this client's SRTP keys and sends it (any SSRC, any payload).
    @discardableResult
    public func sendProtectedRTP(_ plain: [UInt8]) -> Bool { sendProtected(plain, rtcp: false) }

    private func sendProtected(_ plain: [UInt8], rtcp: Bool) -> Bool {
        guard let tx, let node, plain.count + SRTPSession.maxOverhead <= rtcpScratch.count else { return false }
        var n = 0
        rtcpScratch.withUnsafeMutableBytes { out in
            plain.withUnsafeBytes { out.copyMemory(from: $0) }
            let sealed = rtcp ? tx.protectRTCP(out, length: plain.count) : tx.protectRTP(out, length: plain.count)
            if case .success(let m) = sealed { n = m }
        }
        guard n > 0 else { return false }
        return rtcpScratch.withUnsafeBytes { transmit(Array($0[0..<n])) }
    }
}
