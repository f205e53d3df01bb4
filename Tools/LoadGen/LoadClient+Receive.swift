import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// What arrives: polling the socket, answering checks and DTLS, counting media, reading the node's keyframe
/// requests, and the transport-cc feedback a subscriber sends about what it received.
extension LoadClient {
    /// The client goes away without a word: no more checks, answers, DTLS or media. `poll` only counts
    /// what still arrives (`datagramsReceived`), which after consent expiry must be nothing.
    public func vanish() { vanished = true }

    /// Receives what is waiting, answers it, retransmits, and keeps consent fresh.
    public func poll(now: MonoTime) {
        if vanished {
            while let n = receiveWaiting(), n > 0 {
                datagramsReceived += n
                if n < rxBatch.capacity { break }
            }
            return
        }
        guard let node, state != .closed else { return }
        while let n = receiveWaiting(), n > 0 {
            datagramsReceived += n
            for i in 0..<n { handle(rxBatch, i, now: now, node: node) }
            if n < rxBatch.capacity { break }
        }
        if now >= nextCheckAt, state == .checking || state == .connected || state == .handshaking { sendCheck(now: now) }
        if transportCCExtensionID != nil, state == .connected, feedbackRecorder.isDue(now) { sendTransportFeedback(now: now) }
        if state == .handshaking, !stallDTLS, let dtls {
            for d in dtls.tick(now: now) { transmit(d) }
            if case .failed(let reason) = dtls.state { state = .failed("DTLS: \(reason)") }
        }
    }

    private func handle(_ batch: ReceiveBatch, _ i: Int, now: MonoTime, node: TransportAddress) {
        let datagram = batch.datagram(i)
        switch PacketClass(datagram) {
        case .stun:
            guard let checks else { return }
            let source = batch.source(i)
            if let reply = checks.answer(request: datagram, from: source) {
                transmit(reply, to: source)
                return
            }
            guard let tid = pendingCheck else { return }
            switch checks.check(response: Array(datagram), transactionID: tid) {
            case .success:
                pendingCheck = nil
                lastAnsweredCheck = lastCheckSent
                checksSucceededSinceRestart += 1
                if state == .checking, let dtls {
                    state = .handshaking
                    for d in dtls.start(now: now) { transmit(d) }
                }
            case .error(let code): state = .failed("ICE error \(code)")
            case .invalid: break
            }
        case .dtls:
            guard let dtls, !stallDTLS else { return }
            for reply in dtls.receive(datagram, now: now) { transmit(reply) }
            // A server that is the DTLS client (Janus answers `a=setup:active`) may start before this client
            // has read the answer to its nominating check.
            if state == .handshaking || state == .checking, dtls.state == .connected, let keys = dtls.keys {
                tx = try? SRTPSession(keys: keys.outbound, direction: .outbound)
                rx = try? SRTPSession(keys: keys.inbound, direction: .inbound)
                state = tx != nil && rx != nil ? .connected : .failed("SRTP setup")
            }
            if state == .connected, dtls.state != .connected { state = .closed }  // close_notify from the node
        case .rtp:
            guard let rx else { return }
            let buffer = batch.buffer(i)
            let length = batch.length(i)
            if isRTCP(datagram) {
                if publishes || onRTCP != nil, case .success(let n) = rx.unprotectRTCP(buffer, length: length) {
                    let plain = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                    if publishes { readFeedback(plain) }
                    onRTCP?(plain)
                }
                return
            }
            let arrival = batch.arrival(i) ?? now
            if let id = transportCCExtensionID,
               let seq = TransportWideSequence.read(UnsafeRawBufferPointer(rebasing: buffer[0..<length]), id: id) {
                feedbackRecorder.record(sequence: seq, arrival: arrival)
                transportSequencesRecorded += 1
            }
            if let onMedia {
                onMedia(buffer, length, arrival)
            } else if case .success = rx.unprotectRTP(buffer, length: length) {
                mediaPacketsReceived += 1
            }
        default:
            break
        }
    }

    /// Decrypts a datagram `onMedia` was given, in place; returns the RTP packet's length.
    public func decrypt(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Int? {
        guard let rx, case .success(let n) = rx.unprotectRTP(buffer, length: length) else { return nil }
        return n
    }

    /// PLI and FIR from the node ask for a keyframe.
    private func readFeedback(_ p: UnsafeRawBufferPointer) {
        _ = RTCPCompound.forEach(p) { pkt in
            if pkt.type == .payloadFeedback, pkt.countOrFormat == FeedbackFormat.pli || pkt.countOrFormat == FeedbackFormat.fir {
                keyframeRequested = true
                keyframeRequests += 1
                // RFC 4585 section 6.1: the media source follows the packet sender's SSRC.
                let at = pkt.range.lowerBound + 8
                if p.count >= at + 4 {
                    keyframeRequestedSSRCs.insert(UInt32(p[at]) << 24 | UInt32(p[at + 1]) << 16 | UInt32(p[at + 2]) << 8 | UInt32(p[at + 3]))
                }
            }
        }
    }

    /// Transport-cc feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01) for what arrived since the
    /// last one, as a browser sends it: protected RTCP, one packet per feedback (several after a long gap).
    func sendTransportFeedback(now: MonoTime) {
        guard let tx, let node else { return }
        let media = answeredSlots.first?.ssrc ?? 0
        while true {
            var n = 0
            var more = false
            rtcpScratch.withUnsafeMutableBytes { out in
                guard let written = feedbackRecorder.writeFeedback(sender: rtcpSSRC, media: media, now: now,
                                                                    into: UnsafeMutableRawBufferPointer(rebasing: out[0..<1200])) else { return }
                more = true
                if case .success(let sealed) = tx.protectRTCP(out, length: written) { n = sealed }
            }
            guard more else { return }
            if n > 0, rtcpScratch.withUnsafeBytes({ transmit(Array($0[0..<n])) }) { transportFeedbackSent += 1 }
        }
    }

    /// Writes the feedback for what was recorded into `out` (for tests: what `sendTransportFeedback` protects).
    func writeTransportFeedback(now: MonoTime, into out: UnsafeMutableRawBufferPointer) -> Int? {
        feedbackRecorder.writeFeedback(sender: rtcpSSRC, media: answeredSlots.first?.ssrc ?? 0, now: now, into: out)
    }

    /// Records one received packet's transport-wide sequence number, as `poll` does for each datagram (for
    /// tests: a clear RTP header is enough).
    func recordTransportSequence(_ packet: UnsafeRawBufferPointer, arrival: MonoTime) {
        guard let id = transportCCExtensionID, let seq = TransportWideSequence.read(packet, id: id) else { return }
        feedbackRecorder.record(sequence: seq, arrival: arrival)
        transportSequencesRecorded += 1
    }
}
