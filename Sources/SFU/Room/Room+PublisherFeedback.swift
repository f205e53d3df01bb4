/// What the node tells publishers, so that their own controllers see the path and the room (issue 13):
/// transport-wide feedback for their GCC (draft-holmer-rmcat-transport-wide-cc-extensions-01), NACKs for
/// what went missing (RFC 4585, answered with RTX), and REMB: a camera is asked for no more than the
/// best-placed of its subscribers can take, so a 2 Mbit/s camera does not flood a room of 300 kbit/s
/// receivers; a publisher without transport-cc gets the lower of that and its uplink as the node measured
/// it (`ReceiveSideEstimator`), as a receiver's REMB would say.
extension Room {
    /// The most a publisher's video is worth sending when nobody constrains it.
    static let unconstrainedBitrate: UInt64 = 10_000_000
    static let minimumPublisherCap: UInt64 = 150_000

    func sendDuePublisherFeedback(now: MonoTime, into out: DatagramBatch) {
        for p in participants.values {
            guard let cid = p.publishConnection, let conn = connections[cid], conn.outbound != nil else { continue }
            let out = conn.egress(out)
            let media = ([p.audioTrack].compactMap { $0 } + p.videoTracks).compactMap { tracks[$0]?.ssrc }.first ?? 0
            if conn.feedback?.isDue(now) == true {
                while let buf = out.nextBuffer(),
                      let n = conn.feedback!.writeFeedback(sender: nodeSSRC, media: media, now: now, into: buf) {
                    commitRTCP(buf, length: n, conn: conn, into: out)
                }
            }
            for t in p.videoTracks {
                guard let track = tracks[t], track.description.nack, let ssrc = track.ssrc,
                      track.nacks.nextDeadline(rtt: track.nacks.rtt) <= now else { continue }
                let lost = track.nacks.due(now: now, rtt: track.nacks.rtt)
                if !lost.isEmpty, let buf = out.nextBuffer(),
                   let n = GenericNACK.write(sender: nodeSSRC, media: ssrc, sequences: lost, into: buf) {
                    counters.nacksSent &+= 1
                    commitRTCP(buf, length: n, conn: conn, into: out)
                }
            }
            if now >= conn.nextREMB {
                conn.nextREMB = now + .seconds(1)
                // A simulcast publisher's layers share its REMB (RFC 8853 leaves the split to it): no cap from
                // the room, whose subscribers each take the layer that fits them; its uplink still applies. A
                // camera and a screen share are capped each, and the REMB (one figure for all its SSRCs) is
                // their sum.
                let ssrcs = p.videoTracks.compactMap { tracks[$0]?.ssrc }
                var cap: UInt64 = 0
                for source in VideoSource.allCases {
                    let layers = p.tracks(source).compactMap { tracks[$0] }
                    cap = min(cap &+ (layers.count == 1 ? publisherCap(layers[0]) : layers.isEmpty ? 0 : Self.unconstrainedBitrate),
                              Self.unconstrainedBitrate)
                }
                if !ssrcs.isEmpty, let buf = out.nextBuffer(),
                   let n = REMB(senderSSRC: nodeSSRC, bitrate: min(cap, conn.uplink?.estimate ?? .max), ssrcs: ssrcs).write(into: buf) {
                    commitRTCP(buf, length: n, conn: conn, into: out)
                }
            }
        }
    }

    /// When publisher feedback is next due, for `nextDeadline`.
    func nextPublisherFeedback() -> MonoTime {
        var t = MonoTime.never
        for p in participants.values {
            guard let cid = p.publishConnection, let conn = connections[cid] else { continue }
            if let f = conn.feedback, f.hasPending, f.nextFeedback < t { t = f.nextFeedback }
            t = min(t, conn.nextREMB)
            for v in p.videoTracks {
                guard let track = tracks[v], track.description.nack, track.nacks.missingCount > 0 else { continue }
                t = min(t, track.nacks.nextDeadline(rtt: track.nacks.rtt))
            }
        }
        return t
    }

    /// What a publisher's video should not exceed: the largest share of a downlink among the subscribers it
    /// feeds (their estimate less their audio, over their number of videos); unconstrained while none of
    /// them has an estimate.
    func publisherCap(_ track: SourceTrack) -> UInt64 {
        var cap: Double?
        for ref in track.sinks where ref.kind == .video {
            guard let s = participants[ref.subscriber]?.subscriber, let estimate = s.estimator.estimate else { continue }
            let audio = Double(configuration.audioReserveKbps * 1000 * s.audioSlots.filter { $0.current != nil }.count)
            let share = max(0, Double(estimate) - audio) / Double(max(1, s.videoCount.numberOfVideos))
            cap = max(cap ?? 0, share)
        }
        guard let cap else { return Self.unconstrainedBitrate }
        return min(max(UInt64(cap), Self.minimumPublisherCap), Self.unconstrainedBitrate)
    }
}
