/// The last packets of one audio track, plaintext, so that a slot taking the track over because its publisher
/// started speaking can send the utterance from its first loud frame (`SlotSender.replayOnset`): the talker
/// detector needs several loud frames before it calls anyone speaking (`DominantSpeakerDetector`), and what was
/// said before that decision would otherwise never reach listeners outside the talker's list (issue 28).
///
/// A ring of fixed slots indexed by extended sequence number, allocated at the first packet (a room of silent
/// or absent publishers holds none) and never again. A packet larger than a slot is not kept; it breaks the
/// run a replay can use, as a lost packet does.
final class OnsetBuffer {
    let capacity: Int
    static let slotSize = 640
    private var storage: UnsafeMutableRawBufferPointer?
    private var entries: [Entry]
    /// The newest packet kept, by extended sequence number (-1: none).
    private(set) var newest: Int64 = -1
    /// The talker's background over the last 5 s of measured levels, for an onset that is loud against it
    /// though quieter than the detector's threshold (a soft voice, a low microphone).
    private var floor = NoiseFloor()
    var noiseFloor: UInt8? { floor.level }

    struct Entry {
        var sequence: Int64 = -1
        var length = 0
        var timestamp: UInt32 = 0
        var level: UInt8 = 127
        var arrival: MonoTime = .zero
    }

    /// Enough packets for `span` of 20 ms frames and a little more, rounded up to a power of two.
    init(span: MonoTime.Interval) {
        let frames = max(1, Int(span.nanoseconds / 20_000_000)) + 4
        var c = 1
        while c < frames { c <<= 1 }
        capacity = c
        entries = []
    }

    deinit { storage?.deallocate() }

    /// Keeps a packet; an older one than the newest (reordered) takes its place in the ring too, unless it is
    /// older than the ring holds (it would evict a newer one). `level` nil: the packet has no level of its own
    /// (DTX, no voice, a repair): quiet for the onset, and not part of the noise floor.
    func store(extendedSequence ext: Int64, timestamp: UInt32, level: UInt8?, packet: UnsafeRawBufferPointer, now: MonoTime) {
        guard ext >= 0, ext > newest - Int64(capacity) else { return }
        if let level { floor.push(level) }
        let level = level ?? LevelMath.silence
        if storage == nil {
            storage = .allocate(byteCount: capacity * Self.slotSize, alignment: 16)
            entries = [Entry](repeating: Entry(), count: capacity)
        }
        let i = Int(ext) & (capacity - 1)
        guard packet.count <= Self.slotSize else {
            entries[i].sequence = -1
            return
        }
        entries[i] = Entry(sequence: ext, length: packet.count, timestamp: timestamp, level: level, arrival: now)
        UnsafeMutableRawBufferPointer(rebasing: storage![(i * Self.slotSize)..<(i * Self.slotSize + packet.count)]).copyMemory(from: packet)
        if ext > newest { newest = ext }
    }

    /// Forgets every packet: the stream moved to a new SSRC, or what was kept may no longer be sent (a hard
    /// mute, the floor taken).
    func clear() {
        for i in entries.indices { entries[i].sequence = -1 }
        newest = -1
    }

    func entry(_ ext: Int64) -> Entry? {
        guard ext >= 0, !entries.isEmpty else { return nil }
        let e = entries[Int(ext) & (capacity - 1)]
        return e.sequence == ext ? e : nil
    }

    func packet(_ ext: Int64) -> UnsafeRawBufferPointer? {
        guard let e = entry(ext), let storage else { return nil }
        let i = Int(ext) & (capacity - 1)
        return UnsafeRawBufferPointer(rebasing: storage[(i * Self.slotSize)..<(i * Self.slotSize + e.length)])
    }

    /// What a slot taking the track over at `now` should send first: the extended sequence numbers from the
    /// current utterance's first loud frame (a level at or louder than `threshold`, -dBov, or `margin` dB or
    /// more above the talker's noise floor: a soft voice starts below the detector's threshold) to the newest
    /// packet, or nil when there is no utterance under way. An utterance is under way when the newest packet
    /// arrived within `fresh` of `now` and a loud frame is among the packets of the last `pause`; it reaches
    /// back over quiet stretches shorter than `pause` (between words) and no further than `span` of RTP time
    /// before the newest packet (`clockRate` ticks a second). The run stops at a missing packet: what is sent
    /// must be one continuous piece of the stream. `preroll` quiet frames before the first loud one are sent
    /// too (the attack of a word is quieter than its body).
    func utterance(now: MonoTime, span: MonoTime.Interval, pause: MonoTime.Interval, fresh: MonoTime.Interval,
                   threshold: UInt8, margin: UInt8, preroll: Int, clockRate: Int) -> ClosedRange<Int64>? {
        guard newest >= 0, let last = entry(newest), now - last.arrival <= fresh else { return nil }
        // Loud: at the threshold, or `margin` dB above the floor (levels are -dBov: smaller is louder).
        let loud = max(threshold, (noiseFloor ?? 0) &- min(margin, noiseFloor ?? 0))
        let ticks = { (i: MonoTime.Interval) in UInt32(clamping: i.nanoseconds / 1000 * Int64(clockRate) / 1_000_000) }
        let spanTicks = ticks(span), pauseTicks = ticks(pause)
        var onset: Int64?
        var lastLoudTimestamp = last.timestamp
        var ext = newest
        var oldest = newest
        while let e = entry(ext), ext > newest - Int64(capacity) {
            // RTP time back from the newest, wrapping as timestamps do.
            guard last.timestamp &- e.timestamp <= spanTicks else { break }
            if e.level <= loud {
                onset = ext
                lastLoudTimestamp = e.timestamp
            } else if lastLoudTimestamp &- e.timestamp > pauseTicks {
                break  // a pause longer than between words: the utterance starts after it
            }
            oldest = ext
            ext -= 1
        }
        // No loud frame within `pause` of the newest: the loop stopped before any (a talker who has stopped).
        guard let onset else { return nil }
        return max(oldest, onset - Int64(preroll))...newest
    }
}
