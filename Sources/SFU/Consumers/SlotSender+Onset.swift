/// A talker's first words, sent late rather than never (issue 28).
///
/// The detector calls a participant speaking only after several loud frames (`DominantSpeakerDetector`:
/// four in 400 ms, checked every 40 ms), so a talker outside a listener's list is forwarded 80-300 ms into
/// its utterance and the listener never hears how it began. An audio slot that takes a talker over while it
/// speaks therefore sends first what its track kept of the utterance (`OnsetBuffer`, from the first loud
/// frame, at most `RoomConfiguration.onsetReplay`), rewritten into the slot's timeline like any switch
/// (`SlotRewriter`: the first packet anchors at the slot's clock, the rest follow it), then the live packets.
/// The receiver gets up to `onsetReplay` of audio at once (typically 100-200 ms: the detector's delay and the
/// frames before the first loud one): its jitter buffer plays it out and then catches up by time-compressing
/// (NetEQ's accelerate; in Chromium back to its delay within 2.3-5.2 s, Benchmarks/README.md).
extension SlotSender {
    /// The talker's newest packet must be this recent: one that has stopped is not starting to speak.
    static let onsetFresh = MonoTime.Interval.milliseconds(100)
    /// Frames before the first loud one that go too (a word's attack is quieter than its body).
    static let onsetPreroll = 3
    /// A frame this many dB above the talker's own noise floor starts its utterance too, though quieter than
    /// the detector's threshold (`sfu tune`: a talker 6 dB below the others lost 4-5 points of coverage to
    /// onsets that began below it; Benchmarks/README.md).
    static let onsetMarginDb: UInt8 = 12

    /// The slot stops showing audio track `track`: what it sent of it is not sent again if the track comes
    /// back to it (a talker dropped from the list and taken back a moment later while still speaking).
    func noteLeaving(_ track: PublishedTrack) {
        if let newest = track.onset?.newest { lastLeft = (track.index, newest) }
    }

    /// Sends the utterance `track` is in from its onset, when the slot has just taken `track` over and there
    /// is one, leaving out what the slot already sent of it. Skipped (counted) when the slot's batch has not
    /// room for it beside live traffic (half of it stays for that): a late onset is worth less than the
    /// packets of every other slot.
    func replayOnset(of track: PublishedTrack, configuration c: RoomConfiguration, now: MonoTime, into out: DatagramBatch) {
        guard kind == .audio, current === track, let buffer = track.onset, connection.attached, connection.outbound != nil,
              let run = buffer.utterance(now: now, span: c.onsetReplay, pause: c.onsetPause, fresh: Self.onsetFresh,
                                         threshold: c.detector.speakingThreshold, margin: Self.onsetMarginDb, preroll: Self.onsetPreroll,
                                         clockRate: track.description.codec.clockRate)
        else { return }
        var first = run.lowerBound
        // (A newest beyond the track's newest is of a stream it left for a new SSRC: nothing of this one was sent.)
        if let left = lastLeft, left.track == track.index, left.newest <= run.upperBound { first = max(first, left.newest + 1) }
        guard first <= run.upperBound else { return }
        let batch = connection.batch(for: out)
        guard batch.count + Int(run.upperBound - first) + 1 <= batch.capacity / 2 else {
            effects.counters.onsetReplaysSkipped &+= 1
            return
        }
        // Anchored afresh on the utterance's first packet whatever the slot showed before (one stopped by a
        // hard mute keeps its mapping until its silence frames went out).
        rewriter.resume()
        var sent = 0
        for ext in first...run.upperBound {
            guard let e = buffer.entry(ext), let plain = buffer.packet(ext), case .success(let h) = RTPHeader.parse(plain),
                  let (primary, red) = track.audioPayload(plain, h) else { break }
            consume(ForwardedPacket(plain: plain, header: h, primary: primary, red: red, video: nil, extendedSequence: ext,
                                    inOrder: true, level: e.level), from: track, now: now, into: out)
            sent += 1
        }
        guard sent > 0 else { return }
        effects.counters.onsetReplays &+= 1
        effects.counters.onsetReplayedPackets &+= UInt64(sent)
    }
}
