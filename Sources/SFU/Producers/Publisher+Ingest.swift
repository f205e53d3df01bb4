/// What happens to a packet of a track once it may be forwarded: NACKs for what went missing, the codec's
/// checks, the audio level, the video history, layers and key frames - then it is handed back as a packet
/// for the track's consumers.
extension Publisher {
    /// What an ingested packet told the room: a level sample for the talker detector, a client whose level
    /// claims are off (verify mode), a video track that started arriving.
    struct Ingested {
        var level: (level: UInt8, samples: Int)?
        var levelMismatchDb: Double?
        var becameLive = false
    }

    /// A media packet of a track that may be forwarded, original or repaired: returns it for the track's
    /// consumers, or nil (counted) when its payload is not what the track declared.
    func ingest(_ a: Arrival, configuration c: RoomConfiguration, now: MonoTime, into out: DatagramBatch,
                noting arrived: inout Ingested) -> ForwardedPacket? {
        let track = a.track
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
            guard let (media, red) = track.audioPayload(plain, header) else { effects.drop(.badCodecPayload, connection); return nil }
            let payload = UnsafeRawBufferPointer(rebasing: plain[media])
            guard case .success(let opus) = OpusPacketInfo.parse(payload) else { effects.drop(.badCodecPayload, connection); return nil }
            let level = a.repaired ? nil : measureLevel(a, opus: opus, payload: payload, mismatchThresholdDb: c.levelMismatchThresholdDb,
                                                        noting: &arrived)
            // Kept for a slot that takes this talker over as it starts speaking (`SlotSender.replayOnset`); a
            // frame with no level of its own (DTX, no voice, a repair) counts as quiet there.
            track.onset?.store(extendedSequence: a.extendedSequence, timestamp: header.timestamp, level: level, packet: plain, now: now)
            return ForwardedPacket(plain: plain, header: header, primary: media, red: red, video: nil, extendedSequence: a.extendedSequence,
                                   inOrder: a.inOrder, level: track.lastLevel)
        }
        guard header.payloadType == track.description.payloadType else { effects.drop(.badCodecPayload, connection); return nil }
        let payload = UnsafeRawBufferPointer(rebasing: plain[header.payloadRange])
        // Each codec says where its key frames start in its own way (`VideoDescriptor.isKeyframeStart`).
        guard case .success(let video) = VideoDescriptor.parse(track.description.codec, payload: payload) else {
            effects.drop(.badCodecPayload, connection)
            return nil
        }
        track.history?.store(extendedSequence: a.extendedSequence, packet: plain)
        feedback.videoArrived(now: now, effects: effects)
        if !a.repaired, let l = video.layerIndices {
            track.noteLayer(l, bytes: header.payloadLength + 40, pictureStart: video.startsPicture, now: now)
        }
        // Only a key frame newer than anything before it answers the request for one. An older start (an RTX
        // repair, RFC 4588, or one reordered on the way) begins a picture whose other packets have gone by, and
        // what follows it refers to that picture: a slot switched there would show a broken picture, and with
        // the request cancelled it would wait for the publisher's next periodic key frame.
        if video.isKeyframeStart, a.inOrder {
            track.keyframes.keyframeArrived()
            if let size = video.keyframeSize(in: payload) { track.frameSize = size }
        }
        if !track.live {
            setLive(track, true, now: now)
            effects.wake(at: now + c.videoStaleAfter)
            arrived.becameLive = true
        }
        return ForwardedPacket(plain: plain, header: header, primary: header.payloadRange, red: nil, video: video,
                               extendedSequence: a.extendedSequence, inOrder: a.inOrder, level: nil)
    }

    /// One sample per 20 ms of RTP time for the talker detector: a timestamp jump over contiguous sequence
    /// numbers (DTX) fills silence; a sequence gap (loss) is not filled (media-core.md section 1). In verify
    /// mode, claims that are off by more than `mismatchThresholdDb` switch the track to decoded levels.
    /// Returns the packet's own level, nil when it has none (DTX, or no voice in decode mode).
    private func measureLevel(_ a: Arrival, opus: OpusPacketInfo, payload: UnsafeRawBufferPointer, mismatchThresholdDb: Double,
                              noting arrived: inout Ingested) -> UInt8? {
        let t = a.track
        var claimed: AudioLevelExtension?
        if let id = t.description.audioLevelExtensionID, let r = a.header.extensions(in: a.plain).find(id) {
            claimed = AudioLevelExtension.read(a.plain, range: r)
        }
        let (level, verdict) = t.meter.measure(claimed: claimed, opus: opus, payload: payload)
        if let verdict, verdict.meanDifference > mismatchThresholdDb {
            // The claims are off: this participant's levels are decoded from now on (the event says so).
            arrived.levelMismatchDb = verdict.meanDifference
            t.meter.setSource(.decode)
        }
        guard let level else { return nil }
        t.lastLevel = level
        let samples = t.levelSamples.samples(extendedSequence: a.extendedSequence, timestamp: a.header.timestamp)
        if samples > 0 { arrived.level = (level, samples) }
        return level
    }
}
