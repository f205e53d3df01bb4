/// The packet path through the room: a datagram from a connection goes to what the connection carries - its
/// publisher's ingress (RTP) or its RTCP - then, as a packet of a track, through the room's policy (hard mute,
/// floor), the track's measurements and on to the track's consumers.
extension Room {
    /// Handles one datagram (RTP or RTCP, RFC 5761 multiplexed) from a connection. The datagram is decrypted
    /// in place in `buffer`. Anything wrong with it becomes a counted drop.
    public func receive(_ buffer: UnsafeMutableRawBufferPointer, length: Int, from id: ConnectionID,
                        now: MonoTime, arrival: MonoTime? = nil, into out: DatagramBatch) {
        guard let conn = connections[id] else {
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
            let estimated = conn.receiveRTCP(buffer, length: length, limits: limits, tracks: tracks, mayForward: { kind in
                self.participants[conn.participant].map { rules.refusal($0, kind) == nil } ?? false
            }, now: now, into: out, effects: effects)
            if estimated, let s = conn.subscriber { onEstimate(s, now: now, into: out) }
            return
        }
        guard let publisher = conn.publisher else {
            // A subscribing transport that sends RTP, or a publisher not yet bound: nothing routes it.
            if length < 12 { return effects.drop(.truncated, conn) }
            return effects.drop(.unknownSSRC, conn)
        }
        guard let a = publisher.receive(buffer, length: length, limits: limits, now: now, arrival: arrival, into: out) else { return }
        ingest(a, publisher: publisher, now: now, into: out)
    }

    /// A media packet of a track, original or repaired: policy, codec checks, level, history, fan-out.
    private func ingest(_ a: Publisher.Arrival, publisher: Publisher, now: MonoTime, into out: DatagramBatch) {
        let track = a.track, conn = publisher.connection, owner = publisher.participant
        if let refused = rules.refusal(owner, track.kind) { return effects.drop(refused, conn) }
        if !a.repaired, track.description.nack {
            // What goes missing is asked for again (nothing is, for a muted or floor-less track).
            switch track.nacks.received(a.extendedSequence, now: now) {
            case .none: break
            case .nacking: effects.wake(at: track.nacks.nextDeadline(rtt: track.nacks.rtt))
            case .tooWide: track.requestKeyframe(now: now, into: out, effects: effects)
            }
        }
        let plain = a.plain, header = a.header
        if track.kind == .audio {
            // Opus, or Opus with redundancy (RFC 2198): the level is the primary block's.
            var red: REDPayload?
            var media = header.payloadRange
            if header.payloadType == track.description.redPayloadType, track.description.redPayloadType != nil {
                guard case .success(let r) = REDPayload.parse(UnsafeRawBufferPointer(rebasing: plain[header.payloadRange])),
                      r.primaryPayloadType == track.description.payloadType else { return effects.drop(.badCodecPayload, conn) }
                red = r
                media = (header.payloadOffset + r.primary.lowerBound)..<(header.payloadOffset + r.primary.upperBound)
            } else {
                guard header.payloadType == track.description.payloadType else { return effects.drop(.badCodecPayload, conn) }
            }
            let payload = UnsafeRawBufferPointer(rebasing: plain[media])
            guard case .success(let opus) = OpusPacketInfo.parse(payload) else { return effects.drop(.badCodecPayload, conn) }
            if !a.repaired { measureLevel(track, owner: owner, a, opus: opus, payload: payload, now: now) }
            track.forward(ForwardedPacket(plain: plain, header: header, primary: media, red: red, video: nil, extendedSequence: a.extendedSequence,
                                          inOrder: a.inOrder, level: track.lastLevel), now: now, into: out)
        } else {
            guard header.payloadType == track.description.payloadType else { return effects.drop(.badCodecPayload, conn) }
            let payload = UnsafeRawBufferPointer(rebasing: plain[header.payloadRange])
            // Each codec says where its key frames start in its own way (`VideoDescriptor.isKeyframeStart`).
            guard case .success(let video) = VideoDescriptor.parse(track.description.codec, payload: payload) else {
                return effects.drop(.badCodecPayload, conn)
            }
            track.history?.store(extendedSequence: a.extendedSequence, packet: plain)
            publisher.feedback.videoArrived(now: now, effects: effects)
            if !a.repaired, let l = video.layerIndices {
                track.noteLayer(l, bytes: header.payloadLength + 40, pictureStart: video.startsPicture, now: now)
            }
            // Only a key frame newer than anything before it answers the request for one. An older start (an
            // RTX repair, RFC 4588, or one reordered on the way) begins a picture whose other packets have gone
            // by, and what follows it refers to that picture: a slot switched there would show a broken picture,
            // and with the request cancelled it would wait for the publisher's next periodic key frame.
            if video.isKeyframeStart, a.inOrder {
                track.keyframes.keyframeArrived()
                if let size = video.keyframeSize(in: payload) { track.frameSize = size }
            }
            if !track.live {
                publisher.setLive(track, true, now: now)
                effects.wake(at: now + configuration.videoStaleAfter)
                refreshAllSubscribers(now: now, into: out)
            }
            track.forward(ForwardedPacket(plain: plain, header: header, primary: header.payloadRange, red: nil, video: video,
                                          extendedSequence: a.extendedSequence, inOrder: a.inOrder, level: nil), now: now, into: out)
        }
    }

    /// Feeds the detector one sample per 20 ms of RTP time: a timestamp jump over contiguous sequence numbers
    /// (DTX) fills silence; a sequence gap (loss) is not filled (media-core.md section 1).
    private func measureLevel(_ t: PublishedTrack, owner: Participant, _ a: Publisher.Arrival, opus: OpusPacketInfo,
                              payload: UnsafeRawBufferPointer, now: MonoTime) {
        var claimed: AudioLevelExtension?
        if let id = t.description.audioLevelExtensionID, let r = a.header.extensions(in: a.plain).find(id) {
            claimed = AudioLevelExtension.read(a.plain, range: r)
        }
        let (level, verdict) = t.meter.measure(claimed: claimed, opus: opus, payload: payload)
        if let verdict, verdict.meanDifference > configuration.levelMismatchThresholdDb {
            // The claims are off: this participant's levels are decoded from now on (the event says so).
            effects.events.append(.levelMismatch(participant: owner.id, meanDifferenceDb: verdict.meanDifference))
            t.meter.setSource(.decode)
        }
        guard let level else { return }
        t.lastLevel = level
        let samples = t.levelSamples.samples(extendedSequence: a.extendedSequence, timestamp: a.header.timestamp)
        if samples > 0 { election.detector.push(owner.index, level: level, count: samples, now: now) }
    }

    // MARK: Estimates

    /// A new downlink estimate for a subscriber: the video count may change (and be reported), then its layers
    /// and caps are reviewed. ABWD weighs videos at what they measure (`streamBandwidthKbps`), not at a
    /// configured figure.
    func onEstimate(_ s: Subscriber, now: MonoTime, into out: DatagramBatch) {
        guard let bps = s.estimator.estimate else { return }
        let p = s.participant
        let audio = configuration.audioReserveKbps * s.audioSlotsInUse
        // Before a first measurement the node has sent next to nothing: any estimate is app-limited.
        let sent = s.sentKbps(now: now) ?? 0
        // videos_first: videos are counted at their highest layer, but one is kept (at a lower layer) while
        // even one highest layer does not fit and a lowest one does: fewer videos first, then lower layers.
        // Its estimate is not read as capped by what is sent: layers lowered for a share that no longer fits
        // send less, and an estimate just above that must still take a video away.
        let costs = streamCosts(now: now)
        let estimate = Int(bps / 1000)
        let videosFirst = configuration.videoDegradation == .videosFirst
        let keepOne = videosFirst && estimate - max(costs.lowest, audio) >= costs.lowest
        if let alert = s.videoCount.update(estimateKbps: estimate, streamKbps: streamBandwidthKbps(now: now), audioKbps: audio,
                                           minVideos: keepOne ? 1 : 0, maxVideos: s.videoSlots.count,
                                           sentKbps: videosFirst ? nil : sent, now: now) {
            effects.events.append(.bandwidthAlert(participant: p.id, bandwidthKbps: alert.bandwidthKbps,
                                                  streamBandwidthKbps: alert.streamBandwidthKbps, numberOfVideos: alert.numberOfVideos))
            refreshSubscriber(p, now: now, into: out)
        }
        // The slot map reports a layer that moved.
        if s.reviewLayers(configuration: configuration, now: now, into: out) { refreshSubscriber(p, now: now, into: out) }
        s.reviewLayerCaps(audioReserveKbps: configuration.audioReserveKbps, now: now, into: out)
    }

    /// What one video costs in this room: the mean measured bitrate of the live video sources (re-measured at
    /// most every 500 ms), or the configured `stream_bandwidth` before any is measured. A simulcast source
    /// counts at its lowest live layer, a single layered stream at its base layer (`reviewLayerCaps`)
    /// (`VideoDegradation.layersFirst`): a subscriber whose share shrinks takes lower layers first, and only
    /// when even those do not fit is it shown fewer videos (and back up in the reverse order); or at its
    /// highest (`.videosFirst`): fewer videos first, each kept at the best layer that fits. A camera and a
    /// screen share are two videos.
    func streamBandwidthKbps(now: MonoTime) -> Int {
        let c = streamCosts(now: now)
        return configuration.videoDegradation == .layersFirst ? c.lowest : c.highest
    }

    /// The mean cost of a video at its sources' lowest and at their highest live layers (kbps).
    func streamCosts(now: MonoTime) -> (lowest: Int, highest: Int) {
        if let c = streamRateCache, now - c.at < .milliseconds(500) { return (c.lowest, c.highest) }
        var lowest = 0.0, highest = 0.0, n = 0
        for p in participants.values {
            for source in VideoSource.allCases {
                var low: Double?, high: Double?
                let all = p.tracks(source)
                for track in all {
                    guard track.live, let bps = track.rate.bitsPerSecond(now: now), bps > 30_000 else { continue }
                    // A single layered stream can be capped to its base layer; a simulcast layer is sent whole
                    // but for its temporal layers, which only the lowest layer drops below its rate.
                    let cheapest = all.count == 1 ? track.cheapestBitsPerSecond(now: now) ?? bps : bps
                    low = min(low ?? cheapest, cheapest)
                    high = max(high ?? bps, bps)
                }
                guard let low, let high else { continue }
                lowest += low
                highest += high
                n += 1
            }
        }
        func kbps(_ total: Double) -> Int { n == 0 ? configuration.streamBandwidthKbps : max(50, Int(total / Double(n) / 1000)) }
        streamRateCache = (now, kbps(lowest), kbps(highest))
        return (kbps(lowest), kbps(highest))
    }

    /// When the subscriber would take more videos if its estimate allowed, the bandwidth all it could show
    /// would take (`VideoCountPolicy`'s up rule: reserve + k videos x 1.15); nil when it has all it can use.
    func bandwidthForMoreVideos(_ p: Participant, _ s: Subscriber, now: MonoTime) -> Double? {
        let n = s.videoCount.numberOfVideos
        let rules = rules
        let cameras = participants.values.count { q in
            q.index != p.index && (q.publisher?.videoLive() ?? false) && rules.videoAllowed(q) && !q.videoMuted
        }
        let screens = participants.values.count { q in q.index != p.index && (q.publisher?.videoLive(.screen) ?? false) && rules.videoAllowed(q) }
        let screenSlots = s.videoSlots.count { $0.description.source == .screen }
        let wanted = min(s.videoSlots.count - screenSlots, cameras) + min(screenSlots, screens)
        guard n < wanted else { return nil }
        let stream = streamBandwidthKbps(now: now)
        let audio = configuration.audioReserveKbps * max(1, s.audioSlotsInUse)
        let r = max(stream, audio)
        return (Double(r) + Double(wanted * stream) * s.videoCount.parameters.upMargin) * 1000
    }
}
