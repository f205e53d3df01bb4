/// Makes one slot's output a single continuous RTP stream while the source feeding it changes
/// (`media-core.md` section 5; the role mediasoup's SeqManager and LiveKit's RTPMunger play).
///
/// At a switch to packet p (extended sequence p.seq): seqOffset = lastSeqOut + 1 + g - p.seq, where g = 1 leaves
/// a gap when the previous source's last frame was cut short (no marker seen); tsOffset = lastTsOut +
/// max(1, elapsed wall time in clock units) - p.ts; the VP8 or VP9 picture ID, TL0PICIDX and VP8 KEYIDX continue
/// from the last output, whatever codec it was (a switch lands on a key frame, which resets the decoder). Packets of the new source older than the switch packet are stale and dropped. All offsets live in
/// 64-bit extended space so they survive wrap-around.
public struct SlotRewriter: Sendable {
    public struct Output: Equatable, Sendable {
        public var sequenceNumber: UInt16
        public var timestamp: UInt32
        public var pictureID: UInt16?
        public var tl0PicIdx: UInt8?
        public var keyIndex: UInt8?
        /// True on the first packet after a switch or resume: audio sets the marker bit (RFC 3551 section 4.1).
        public var firstAfterSwitch: Bool
    }

    public let clockRate: Int64
    /// Video frames span packets, so a switch after a frame cut short leaves a sequence gap; an audio packet
    /// is a whole frame and never does.
    public let framesSpanPackets: Bool
    /// The source currently mapped (a track identifier chosen by the caller).
    public private(set) var source: Int?
    private var switchFloor: Int64 = 0  // first extended seq of the current source
    private var seqOffset: Int64 = 0
    private var tsOffset: UInt32 = 0
    private var picOffset: UInt16 = 0
    private var tl0Offset: UInt8 = 0
    private var keyIdxOffset: UInt8 = 0
    private var pendingSwitch = true
    private var pendingResume = false

    // Last output, for continuity at the next switch.
    public private(set) var started = false
    private var lastSeqOut: Int64 = 0
    private var lastTsOut: UInt32 = 0
    private var lastOutTime: MonoTime = .zero
    private var lastMarker = true
    private var lastPic: UInt16 = 0
    private var lastTl0: UInt8 = 0
    private var lastKeyIdx: UInt8 = 0
    private var highestIn: Int64 = .min
    /// Where the current source's missing packets go when they arrive late.
    private var missing = MissingPackets()

    /// How far behind the newest a late packet may still be placed: the receiver's SRTP replay window
    /// (RFC 3711 section 3.3.2; libsrtp's default is 128, browsers keep more, the node's outbound context
    /// 1,024) would refuse anything older, and a jitter buffer has long given it up.
    public static let lateWindow: Int64 = 512

    public init(clockRate: Int, framesSpanPackets: Bool) {
        self.clockRate = Int64(clockRate)
        self.framesSpanPackets = framesSpanPackets
    }

    /// Maps a new source; its next accepted packet starts the continuation.
    public mutating func switchTo(_ source: Int?) {
        guard source != self.source else { return }
        self.source = source
        pendingSwitch = true
    }

    /// Re-anchors the current source after a pause (hard mute lifted): seq stays gapless, ts jumps by the
    /// elapsed time, the first packet carries the switch flag.
    public mutating func resume() { pendingSwitch = true }

    /// The rewritten fields for a VP8 packet (or, with nil, one without picture numbering).
    public mutating func rewrite(
        extendedSequence ext: Int64, timestamp: UInt32, marker: Bool, vp8: VP8Descriptor?, now: MonoTime
    ) -> Output? {
        rewrite(extendedSequence: ext, timestamp: timestamp, marker: marker,
                picture: vp8.map(PictureNumbering.init), now: now)
    }

    /// The rewritten fields for a packet of the current source, or nil when it is older than the switch.
    public mutating func rewrite(
        extendedSequence ext: Int64, timestamp: UInt32, marker: Bool, picture: PictureNumbering?, now: MonoTime
    ) -> Output? {
        var first = false
        if pendingSwitch {
            pendingSwitch = false
            first = true
            if started {
                let gap: Int64 = framesSpanPackets && !lastMarker ? 1 : 0
                seqOffset = lastSeqOut + 1 + gap - ext
                // Clamp before scaling: a slot idle for a day must not overflow (1 hour is plenty of advance).
                let idle = min(max(0, (now - lastOutTime).nanoseconds), 3_600_000_000_000)
                let elapsed = max(1, idle / 1000 * clockRate / 1_000_000)
                tsOffset = lastTsOut &+ UInt32(truncatingIfNeeded: elapsed) &- timestamp
                if let d = picture {
                    if let pid = d.pictureID {
                        let m = d.pictureIDModulus
                        picOffset = ((lastPic &+ 1) &- pid) & (m - 1)
                    }
                    if let t = d.tl0PicIdx { tl0Offset = (lastTl0 &+ 1) &- t }
                    if let k = d.keyIndex { keyIdxOffset = ((lastKeyIdx &+ 1) &- k) & 0x1F }
                }
            } else {
                seqOffset = 0
                tsOffset = 0
                picOffset = 0
                tl0Offset = 0
                keyIdxOffset = 0
            }
            switchFloor = ext
            highestIn = ext - 1
            missing.reset()
        }
        guard ext >= switchFloor else { return nil }
        // A late packet is numbered as it would have been in order, before the skips since.
        var offsets = (sequence: seqOffset, picture: picOffset)
        if ext < highestIn {
            guard highestIn - ext <= Self.lateWindow, let then = missing.offsets(for: ext) else { return nil }
            offsets = then
        } else {
            noteGap(before: ext)
        }
        let outExt = ext + offsets.sequence
        let outTs = timestamp &+ tsOffset
        var out = Output(sequenceNumber: UInt16(truncatingIfNeeded: outExt), timestamp: outTs, pictureID: nil,
                         tl0PicIdx: nil, keyIndex: nil, firstAfterSwitch: first)
        if let d = picture {
            if let pid = d.pictureID { out.pictureID = (pid &+ offsets.picture) & (d.pictureIDModulus - 1) }
            if let t = d.tl0PicIdx { out.tl0PicIdx = t &+ tl0Offset }
            if let k = d.keyIndex { out.keyIndex = (k &+ keyIdxOffset) & 0x1F }
        }
        if ext > highestIn || !started {
            highestIn = ext
            lastSeqOut = outExt
            lastTsOut = outTs
            lastOutTime = now
            lastMarker = marker
            if let p = out.pictureID { lastPic = p }
            if let t = out.tl0PicIdx { lastTl0 = t }
            if let k = out.keyIndex { lastKeyIdx = k }
        }
        started = true
        return out
    }

    /// Leaves out a packet of the current source that the slot does not send (a temporal or spatial layer
    /// above its cap, `LayerFilter`): the output closes up over it, so sequence numbers stay contiguous and
    /// the receiver sees no loss to ask for, and over a whole picture (`closesPicture` on its first packet)
    /// the picture ID too, which VP8 and VP9 receivers read gaps in as lost pictures (RFC 7741 section 4.2,
    /// RFC 9628 section 4.2). Before the first packet after a switch, nothing is anchored and nothing moves.
    ///
    /// A late packet cannot be closed up over: the output went past the place kept for it (it was missing, of
    /// a layer the slot could not know). Its fields are returned, for the caller to send padding under its
    /// number (`SlotSender.fillWithPadding`); nil otherwise, and for a late packet that cannot be placed.
    @discardableResult
    public mutating func skip(extendedSequence ext: Int64, timestamp: UInt32, closesPicture: Bool) -> Output? {
        guard started, !pendingSwitch, ext >= switchFloor else { return nil }
        if ext < highestIn {
            guard highestIn - ext <= Self.lateWindow, let then = missing.offsets(for: ext) else { return nil }
            return Output(sequenceNumber: UInt16(truncatingIfNeeded: ext + then.sequence), timestamp: timestamp &+ tsOffset,
                          pictureID: nil, tl0PicIdx: nil, keyIndex: nil, firstAfterSwitch: false)
        }
        guard ext > highestIn else { return nil }
        noteGap(before: ext)
        seqOffset -= 1
        if closesPicture { picOffset &-= 1 }
        highestIn = ext
        return nil
    }

    /// Keeps the places of the packets missing before `ext`, the newest so far, with the offsets in force.
    private mutating func noteGap(before ext: Int64) {
        guard highestIn != .min, ext > highestIn + 1 else { return }
        missing.record((highestIn + 1)..<ext, sequenceOffset: seqOffset, pictureOffset: picOffset)
    }

    /// Starts the output with nothing forwarded yet (a live stream's audio slot that sends silence before its
    /// first talker): numbering from 0; the first source re-anchors after it as after any synthetic packet.
    public mutating func startSynthetic(now: MonoTime) {
        guard !started else { return }
        started = true
        lastOutTime = now
        pendingSwitch = true
    }

    /// Sequence number and timestamp for a packet the node generates on this slot (silence frames after a
    /// hard mute), `tsIncrement` after the last output. Keeps the stream continuous for the next switch.
    public mutating func synthesize(tsIncrement: UInt32, now: MonoTime) -> (sequenceNumber: UInt16, timestamp: UInt32)? {
        guard started else { return nil }
        lastSeqOut += 1
        lastTsOut = lastTsOut &+ tsIncrement
        lastOutTime = now
        lastMarker = true
        pendingSwitch = true  // whatever comes next re-anchors after the synthetic packets
        return (UInt16(truncatingIfNeeded: lastSeqOut), lastTsOut)
    }
}

extension SlotRewriter {
    /// The timestamp offset of the current mapping, once its first packet went out: a forwarded sender
    /// report adds it so that the slot's RTP/NTP pairing (lip sync) stays right.
    public var timestampOffset: UInt32? { started && !pendingSwitch ? tsOffset : nil }
}
