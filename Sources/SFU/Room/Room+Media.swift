/// The packet path through the room: a datagram from a connection goes to what the connection carries - its
/// publisher's ingress (RTP) or its RTCP - then, as a packet of a track, through the room's policy (hard mute,
/// floor), the track's measurements and on to the track's consumers.
extension Room {
    /// Handles one datagram (RTP or RTCP, RFC 5761 multiplexed) from a connection. The datagram is decrypted
    /// in place in `buffer`. Anything wrong with it becomes a counted drop.
    public func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, from id: ConnectionID,
                        now: MonoTime, arrival: MonoTime? = nil, into out: DatagramBatch) {
        guard let conn = sessions.connection(id) else {
            effects.counters.packetsIn &+= 1
            effects.counters.bytesIn &+= UInt64(length)
            return effects.drop(.unknownConnection)
        }
        receive(buffer, length: length, from: conn, now: now, arrival: arrival, into: out)
    }

    /// `receive` for a caller that holds the connection (the worker's connection table): no lookup.
    ///
    /// `arrival`, when the socket stamps datagrams, is when the kernel received this one: what the
    /// publisher's estimator is told (transport-cc feedback, abs-send-time). `now`, when the worker got to
    /// it, runs everything else.
    public func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, from conn: Connection,
                        now: MonoTime, arrival: MonoTime? = nil, into out: DatagramBatch) {
        effects.counters.packetsIn &+= 1
        effects.counters.bytesIn &+= UInt64(length)
        guard length <= buffer.count else { return effects.drop(.badLength) }
        guard conn.attached else { return effects.drop(.unknownConnection) }
        if isRTCP(UnsafeRawBufferPointer(rebasing: buffer[0..<length])) {
            let rules = rules
            let estimated = conn.receiveRTCP(buffer, length: length, limits: limits, tracks: tracks.byIndex, mayForward: { kind in
                // A relay's sender reports are of remote participants' streams: only slots showing them get them.
                conn.participant < 0 || self.participants[conn.participant].map { rules.refusal($0, kind) == nil } ?? false
            }, now: now, into: out, effects: effects)
            // A relay's estimate (its peer's reports) moves no video count: the relay carries what the plan says.
            if estimated, let s = conn.subscriber, s.participant.index >= 0 { downlinks.estimated(s, now: now, into: out) }
            return
        }
        // A client's publishing transport, or a relay carrying remote participants' streams (by SSRC).
        guard let publisher = conn.publisher
            ?? (conn.remotePublishers.isEmpty ? nil : RTPHeader.peekSSRC(UnsafeRawBufferPointer(rebasing: buffer[0..<length])).flatMap { conn.remotePublishers[$0] })
        else {
            // A subscribing transport that sends RTP, or a publisher not yet bound: nothing routes it.
            if length < 12 { return effects.drop(.truncated, conn) }
            return effects.drop(.unknownSSRC, conn)
        }
        guard let a = publisher.receive(buffer, length: length, limits: limits, now: now, arrival: arrival, into: out) else { return }
        let owner = publisher.participant
        if let refused = rules.refusal(owner, a.track.kind) { return effects.drop(refused, conn) }
        var arrived = Publisher.Ingested()
        guard let packet = publisher.ingest(a, configuration: configuration, now: now, into: out, noting: &arrived) else { return }
        if let level = arrived.level { election.detector.push(owner.index, level: level.level, count: level.samples, now: now) }
        if let db = arrived.levelMismatchDb { effects.events.append(.levelMismatch(participant: owner.id, meanDifferenceDb: db)) }
        if arrived.becameLive { refreshAllSubscribers(now: now, into: out) }  // before its first packet: slots wait for its key frame
        a.track.forward(packet, now: now, into: out)
    }
}
