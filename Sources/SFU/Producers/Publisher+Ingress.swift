/// The RTP ingress of a publishing transport: route by SSRC (or MID/RID), decrypt in place, bind what
/// authenticated, record arrivals for the publisher's estimator, restore RTX repairs. What comes out is a
/// plain packet of one of its tracks; everything wrong on the way is a counted drop.
extension Publisher {
    /// A packet of a track, decrypted and parsed, as the ingress hands it to the room.
    struct Arrival {
        var track: PublishedTrack
        var plain: UnsafeRawBufferPointer
        var header: RTPHeader
        var extendedSequence: Int64
        /// An RTX repair restored to its original (RFC 4588), not a packet in the stream's order.
        var repaired: Bool
        /// Newer than any packet of the track before it.
        var inOrder: Bool
    }

    /// One RTP datagram from the publisher's transport, decrypted in place in `buffer`. `arrival` is the
    /// kernel's receive stamp when the socket has them: what the publisher's estimator is told (transport-cc
    /// feedback, abs-send-time); on a busy worker it differs from `now` by the time the datagram waited.
    func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, limits: RoomLimits, now: MonoTime, arrival: MonoTime?,
                 into out: DatagramBatch) -> Arrival? {
        let conn = connection
        let packet = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
        guard let ssrc = RTPHeader.peekSSRC(packet) else { effects.drop(.truncated, conn); return nil }
        let known = tracksBySSRC[ssrc]
        let route: (track: PublishedTrack, rtx: Bool)
        if let known { route = known } else {
            switch midBinding(packet, now: now, limits: limits) {
            case .success(let r): route = r
            case .failure(let reason): effects.drop(reason, conn); return nil
            }
        }
        let track = route.track
        guard let srtp = conn.inbound else { effects.drop(.noSRTPContext, conn); return nil }
        // A new SSRC (bound from its MID or RID) must fit under the connection's stream cap before libsrtp
        // takes a stream for it.
        if known == nil, !conn.inboundSSRCs.reserve(ssrc, limit: limits.ssrcsPerConnection, srtp: srtp) {
            effects.drop(.ssrcLimit, conn)
            return nil
        }
        // Decrypt even what policy will drop: the SRTP rollover counter must follow every packet, or the first
        // packet after a long hard mute fails to authenticate (media-core.md section 6).
        let plainLength: Int
        switch srtp.unprotectRTP(buffer, length: length) {
        case .success(let n): plainLength = n
        case .failure(let r): effects.drop(r, conn); return nil
        }
        var plain = UnsafeRawBufferPointer(rebasing: buffer[0..<plainLength])
        if known == nil { bind(ssrc, to: route, now: now, into: out) }  // learned only once the packet authenticated
        var header: RTPHeader
        switch RTPHeader.parse(plain) {
        case .success(let h): header = h
        case .failure(let r): effects.drop(r, conn); return nil
        }
        // Every authenticated packet, padding and repairs included, is an arrival the publisher's own estimator
        // wants to hear about. A stamp later than now, or implausibly early (the wall clock the kernel stamps
        // with was stepped), is not used.
        let arrivedAt = arrival.map { $0 <= now && now - $0 < .seconds(1) ? $0 : now } ?? now
        feedback.recordArrival(plain, header, at: arrivedAt, size: length, effects: effects)
        if route.rtx {
            // RFC 4588: back to the original packet, in place; padding alone is a bandwidth probe.
            guard let rtxPT = track.description.rtxPayloadType, header.payloadType == rtxPT else {
                effects.drop(.badCodecPayload, conn)
                return nil
            }
            guard let n = RTXPayload.restore(buffer, header: header, payloadType: track.description.payloadType, ssrc: track.ssrc ?? 0) else {
                effects.counters.paddingIn &+= 1
                return nil
            }
            plain = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            guard case .success(let h) = RTPHeader.parse(plain) else { effects.drop(.badCodecPayload, conn); return nil }
            header = h
            // A repair is of a packet before the newest: its number must not move the stream's position (an
            // RTX packet naming a number 2^15 ahead would make every packet after it read as old).
            guard let ext = track.unwrapper.peek(header.sequenceNumber), ext <= track.unwrapper.highest ?? .min,
                  track.nacks.repaired(ext, now: now) else {
                effects.drop(.duplicateRepair, conn)
                return nil
            }
            effects.counters.repairsIn &+= 1
            return Arrival(track: track, plain: plain, header: header, extendedSequence: ext, repaired: true, inOrder: false)
        }
        // Sequence and reception state follow every authenticated packet, as SRTP's does, policy or not: a
        // source muted (or waiting for the floor) for more than 2^15 packets must not read as old after.
        let newest = track.unwrapper.highest
        let ext = track.unwrapper.unwrap(header.sequenceNumber)
        track.noteReception(header, extendedSequence: ext, now: now)
        if feedback.nextReceiverReport == .never {
            feedback.nextReceiverReport = now + feedback.receiverReportInterval
            effects.wake(at: feedback.nextReceiverReport)
        }
        return Arrival(track: track, plain: plain, header: header, extendedSequence: ext, repaired: false, inOrder: newest.map { ext > $0 } ?? true)
    }

    /// For a packet of unknown SSRC: the track its MID extension names, or for a simulcast layer its RID or
    /// repaired RID (header extensions are sent in clear under SRTP, RFC 3711 section 3.1), media or RTX by
    /// payload type. A track already bound to another SSRC moves to this one (a sender resolving an SSRC
    /// collision, RFC 3550 section 8.2), at most once per `ssrcRebindInterval`.
    private func midBinding(_ packet: UnsafeRawBufferPointer, now: MonoTime, limits: RoomLimits) -> Result<(track: PublishedTrack, rtx: Bool), DropReason> {
        guard !midRoutes.isEmpty, case .success(let h) = RTPHeader.parse(packet, checkPadding: false) else { return .failure(.unknownSSRC) }
        let ext = h.extensions(in: packet)
        func carries(_ id: UInt8?, _ value: [UInt8]) -> Bool {
            guard let id, let r = ext.find(id) else { return false }
            return r.count == value.count && packet[r].elementsEqual(value)
        }
        for a in midRoutes {
            let t = a.track
            let rtx: Bool
            if let rid = a.rid {
                // A simulcast layer: its RID names the media stream, the repaired RID its RTX (RFC 8852 section 3).
                if h.payloadType == t.description.payloadType, carries(a.ridExtensionID, rid) {
                    rtx = false
                } else if h.payloadType == t.description.rtxPayloadType, carries(a.repairedRidExtensionID, rid) {
                    rtx = true
                } else {
                    continue
                }
            } else {
                guard carries(a.midExtensionID, a.mid) else { continue }
                if h.payloadType == t.description.payloadType {
                    rtx = false
                } else if h.payloadType == t.description.rtxPayloadType {
                    rtx = true
                } else {
                    continue
                }
            }
            let bound = rtx ? t.rtxSSRC : t.ssrc
            let lastMove = rtx ? t.rtxReboundAt : t.reboundAt
            if bound != nil, let lastMove, now - lastMove < limits.ssrcRebindInterval { return .failure(.ssrcRebindLimit) }
            return .success((t, rtx))
        }
        return .failure(.unknownSSRC)
    }

    /// Routes `ssrc` to the track `midBinding` found, once a packet on it authenticated. A track that was on
    /// another SSRC leaves it: its libsrtp stream is retired, and its sequence space starts again, so the
    /// slots it feeds re-anchor their rewriters (sequence numbers stay gapless) and video asks for a key frame.
    private func bind(_ ssrc: UInt32, to route: (track: PublishedTrack, rtx: Bool), now: MonoTime, into out: DatagramBatch) {
        let t = route.track
        if let old = route.rtx ? t.rtxSSRC : t.ssrc, old != ssrc {
            tracksBySSRC[old] = nil
            connection.inboundSSRCs.retire(old)
            effects.counters.ssrcRebinds &+= 1
            if route.rtx {
                t.rtxReboundAt = now
            } else {
                t.restartStream(ssrc: ssrc, now: now)
                for c in t.consumers { c.trackRestarted(t) }
                if t.kind == .video { t.requestKeyframe(now: now, into: out, effects: effects) }
            }
        }
        if route.rtx { t.rtxSSRC = ssrc } else { t.ssrc = ssrc }
        tracksBySSRC[ssrc] = route
        connection.inboundSSRCs.use(ssrc)
    }
}
