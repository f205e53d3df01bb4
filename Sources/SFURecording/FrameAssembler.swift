import SFUBase

/// A whole video frame, depacketized: what the container takes as one block.
struct AssembledFrame: Equatable {
    /// RTP timestamp, unwrapped (90 kHz).
    var timestamp: Int64
    var bytes: [UInt8]
    var keyframe: Bool
    /// From a VP8 key frame's header (RFC 6386 section 9.1); nil when the codec's header was not read.
    var size: (width: Int, height: Int)?
    var arrival: MonoTime

    static func == (a: AssembledFrame, b: AssembledFrame) -> Bool {
        a.timestamp == b.timestamp && a.bytes == b.bytes && a.keyframe == b.keyframe && a.size?.width == b.size?.width
            && a.size?.height == b.size?.height
    }
}

/// Rebuilds video frames from RTP packets for the recorder, on the writer's thread: VP8 (RFC 7741 section 4),
/// VP9 (RFC 9628 section 4; the base spatial layer of an SVC stream, which decodes alone) and H.264 in
/// non-interleaved mode (RFC 6184 sections 5.6-5.8: single NAL units, STAP-A and FU-A, written in Annex B form).
///
/// A frame is written only whole: its packets contiguous in sequence from one that starts a frame to the one
/// with the marker bit. Packets may come out of order (a NACK repair comes late): frames wait, a few, for what
/// they miss. A frame that cannot be completed is given up, and so is every frame after it until a key frame -
/// a gap in the file rather than a picture decoded from half a frame and what it refers to. `broken` tells the
/// recorder to ask the publisher for that key frame.
struct FrameAssembler {
    let codec: Codec
    /// How long an incomplete frame waits for its packets once a later one is whole, and how many frames may
    /// wait at once.
    static let patience = MonoTime.Interval.milliseconds(250)
    static let maxWaiting = 32
    /// An incomplete frame is given up after this even when nothing later is whole (a stream that stalled).
    static let giveUp = MonoTime.Interval.seconds(1)
    static let maxFrameBytes = 4 << 20

    /// Packets one frame may have at most (a 4 MiB frame in 1,000-byte packets).
    static let maxFramePackets = 4096
    /// A jump in sequence numbers this large (backwards, or forwards) is a new stream whose restart was not
    /// signalled (the queue had no room for it): start again rather than call every packet late.
    static let restartJump: Int64 = 3000

    private struct Waiting {
        var timestamp: Int64
        /// In sequence order, no duplicates.
        var packets: [(sequence: Int64, marker: Bool, payload: [UInt8])] = []
        var firstArrival: MonoTime
        var bytes = 0
        /// The marker packet's sequence number, once it came.
        var markerSequence: Int64?
        var first: Int64 { packets[0].sequence }
        /// Every packet from the first to the marker is here (no duplicates are kept, so a count says it).
        var whole: Bool { markerSequence.map { Int64(packets.count) == $0 - first + 1 } ?? false }
    }

    private var waiting: [Waiting] = []
    private var timestamps = TimestampUnwrapper()
    /// The last sequence number of the last frame written or given up: a packet at or before it is late.
    private var doneThrough: Int64?
    /// The last frame ended at `doneThrough` with a marker (H.264 knows a frame's start only from the end of the
    /// one before it).
    private var previousEnded = false
    /// Frames are given up until the next key frame.
    private(set) var broken = true
    /// Frames given up, and packets that were malformed, late or of a layer not recorded.
    private(set) var framesLost = 0
    private(set) var packetsIgnored = 0

    init(codec: Codec) { self.codec = codec }

    /// A new SSRC: new sequence numbers and timestamps. What waits is given up.
    mutating func restart() {
        if !waiting.isEmpty { framesLost += waiting.count }
        waiting.removeAll()
        timestamps = TimestampUnwrapper()
        doneThrough = nil
        previousEnded = false
        broken = true
    }

    /// Takes one packet's payload; returns the frames it completed, oldest first. Each packet costs a lookup
    /// and an insertion; a frame is put together once, when its last packet came.
    mutating func add(sequence: Int64, timestamp: UInt32, marker: Bool, payload: UnsafeRawBufferPointer,
                      arrival: MonoTime) -> [AssembledFrame] {
        if let d = doneThrough, sequence < d - Self.restartJump || sequence > d + Self.restartJump { restart() }
        if let d = doneThrough, sequence <= d {
            packetsIgnored += 1
            return []
        }
        guard let layerEnd = accepts(payload) else {
            packetsIgnored += 1
            return []
        }
        // VP9: the base layer's frame ends with its E bit; the marker ends the whole picture (all layers).
        let marker = codec == .vp9 ? layerEnd : marker
        let ts = timestamps.unwrap(timestamp)
        if let i = waiting.firstIndex(where: { $0.timestamp == ts }) {
            // Binary search for its place; a duplicate is dropped.
            var lo = 0, hi = waiting[i].packets.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if waiting[i].packets[mid].sequence < sequence { lo = mid + 1 } else { hi = mid }
            }
            if lo < waiting[i].packets.count && waiting[i].packets[lo].sequence == sequence { return [] }
            guard waiting[i].bytes + payload.count <= Self.maxFrameBytes, waiting[i].packets.count < Self.maxFramePackets else {
                packetsIgnored += 1
                return []
            }
            waiting[i].packets.insert((sequence, marker, Array(payload)), at: lo)
            waiting[i].bytes += payload.count
            if marker { waiting[i].markerSequence = sequence }
            // A frame whose first packet moved keeps its place: frames are kept in order of their first packet.
            if lo == 0, i > 0, waiting[i - 1].first > sequence { waiting.sort { $0.first < $1.first } }
        } else {
            var w = Waiting(timestamp: ts, firstArrival: arrival)
            w.packets.append((sequence, marker, Array(payload)))
            w.bytes = payload.count
            if marker { w.markerSequence = sequence }
            let at = waiting.firstIndex { $0.first > sequence } ?? waiting.count
            waiting.insert(w, at: at)
        }
        return emit(now: arrival)
    }

    private mutating func emit(now: MonoTime) -> [AssembledFrame] {
        var out: [AssembledFrame] = []
        while let first = waiting.first {
            let expired = now - first.firstArrival > Self.patience
            // Packets missing before it (a whole frame, perhaps, still to come): it waits for them a while.
            let gapBefore = doneThrough.map { first.first != $0 + 1 } ?? false
            if gapBefore && !expired && waiting.count <= Self.maxWaiting { break }
            if first.whole {
                // H.264 knows where a frame starts only from where the one before it ended.
                let follows = doneThrough != nil && !gapBefore && previousEnded
                waiting.removeFirst()
                finish(first, ended: true)
                // Put together once; one that does not parse as a frame (a hostile or broken sender) is lost.
                guard let frame = assemble(first, follows: follows) else {
                    framesLost += 1
                    broken = true
                    continue
                }
                if gapBefore {
                    framesLost += 1
                    broken = true
                }
                if broken && !frame.keyframe {
                    framesLost += 1
                    continue
                }
                broken = false
                out.append(frame)
                continue
            }
            // The oldest is not whole yet: wait, unless it waited too long or too many wait behind it.
            let laterWhole = waiting.dropFirst().contains { $0.whole }
            guard waiting.count > Self.maxWaiting || (laterWhole && expired) || (now - first.firstArrival > Self.giveUp) else { break }
            waiting.removeFirst()
            finish(first, ended: false)
            framesLost += 1
            broken = true
        }
        return out
    }

    private mutating func finish(_ w: Waiting, ended: Bool) {
        let last = w.packets.last!.sequence
        doneThrough = max(doneThrough ?? last, last)
        previousEnded = ended
    }

    /// The frame from its packets (contiguous from the first to the marker), if they make one.
    private func assemble(_ w: Waiting, follows: Bool) -> AssembledFrame? {
        switch codec {
        case .vp8: return vp8Frame(w)
        case .vp9: return vp9Frame(w)
        case .h264: return h264Frame(w, follows: follows)
        case .opus: return nil
        }
    }

    /// Whether a packet can belong to a recorded frame (parsed; VP9: of the base spatial layer), and for VP9
    /// whether it ends its layer's frame. Nil: not recorded.
    private func accepts(_ payload: UnsafeRawBufferPointer) -> Bool? {
        switch codec {
        case .vp8: if case .success(let d) = VP8Descriptor.parse(payload), d.size < payload.count { return false }
        case .vp9:
            if case .success(let d) = VP9Descriptor.parse(payload), d.size < payload.count, (d.spatialLayer ?? 0) == 0 {
                return d.endOfLayerFrame
            }
        case .h264: if case .success = H264Payload.parse(payload) { return false }
        case .opus: break
        }
        return nil
    }

    private func vp8Frame(_ w: Waiting) -> AssembledFrame? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(w.bytes)
        var key = false
        var size: (width: Int, height: Int)?
        for (i, p) in w.packets.enumerated() {
            let parsed = p.payload.withUnsafeBytes { b -> (VP8Descriptor, (width: Int, height: Int)?)? in
                guard case .success(let d) = VP8Descriptor.parse(b) else { return nil }
                return (d, d.keyframeSize(in: b))
            }
            guard let (d, s) = parsed else { return nil }
            if i == 0 {
                // RFC 7741 section 4.2: the first packet of a frame starts partition 0.
                guard d.startOfPartition, d.partitionIndex == 0 else { return nil }
                key = d.isKeyframeStart
                size = s
            }
            bytes += p.payload[d.size...]
        }
        return AssembledFrame(timestamp: w.timestamp, bytes: bytes, keyframe: key, size: size, arrival: w.firstArrival)
    }

    private func vp9Frame(_ w: Waiting) -> AssembledFrame? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(w.bytes)
        var key = false
        for (i, p) in w.packets.enumerated() {
            let parsed = p.payload.withUnsafeBytes { b -> VP9Descriptor? in
                guard case .success(let d) = VP9Descriptor.parse(b) else { return nil }
                return d
            }
            guard let d = parsed else { return nil }
            if i == 0 {
                // The B bit: the first packet of the (base layer's) frame.
                guard d.startOfLayerFrame else { return nil }
                key = d.isKeyframeStart
            }
            bytes += p.payload[d.size...]
        }
        return AssembledFrame(timestamp: w.timestamp, bytes: bytes, keyframe: key, size: key ? Self.vp9KeyframeSize(bytes) : nil,
                              arrival: w.firstArrival)
    }

    /// A VP9 key frame's size from its uncompressed header (VP9 bitstream specification, sections 6.2 and
    /// 7.2: frame marker, profile, frame type, sync code 0x49 0x83 0x42, colour config, then width - 1 and
    /// height - 1 in 16 bits each). Nil when it is not one or is cut short.
    static func vp9KeyframeSize(_ f: [UInt8]) -> (width: Int, height: Int)? {
        var bit = 0
        func read(_ n: Int) -> Int? {
            var v = 0
            for _ in 0..<n {
                guard bit / 8 < f.count else { return nil }
                v = v << 1 | Int(f[bit / 8] >> (7 - UInt8(bit % 8)) & 1)
                bit += 1
            }
            return v
        }
        guard read(2) == 2, let low = read(1), let high = read(1) else { return nil }
        let profile = high << 1 | low
        if profile == 3 { guard read(1) != nil else { return nil } }
        guard read(1) == 0, read(1) == 0 /* key frame */, read(1) != nil, read(1) != nil,
              read(8) == 0x49, read(8) == 0x83, read(8) == 0x42 else { return nil }
        if profile >= 2 { guard read(1) != nil else { return nil } }
        guard let colorSpace = read(3) else { return nil }
        if colorSpace != 7 {
            guard read(1) != nil else { return nil }
            if profile == 1 || profile == 3 { guard read(3) != nil else { return nil } }
        } else if profile == 1 || profile == 3 {
            guard read(1) != nil else { return nil }
        }
        guard let w = read(16), let h = read(16) else { return nil }
        return (w + 1, h + 1)
    }

    /// RFC 6184: each NAL unit behind an Annex B start code; a FU-A's fragments joined behind the header
    /// rebuilt from its indicator and FU header (section 5.8).
    private func h264Frame(_ w: Waiting, follows: Bool) -> AssembledFrame? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(w.bytes + 32)
        var key = false
        var inFragment = false
        for (i, p) in w.packets.enumerated() {
            let ok = p.payload.withUnsafeBytes { b -> Bool in
                guard case .success(let h) = H264Payload.parse(b) else { return false }
                if h.isKeyframeStart { key = true }
                switch h.packet {
                case .single, .stapA:
                    guard !inFragment else { return false }
                    h.forEachNALUnit(in: b) { _, range in
                        bytes += [0, 0, 0, 1]
                        bytes += b[range]
                    }
                case .fuA(let start, let end):
                    guard b.count > 2 else { return false }
                    if start {
                        guard !inFragment else { return false }
                        inFragment = true
                        bytes += [0, 0, 0, 1, (b[0] & 0xE0) | (b[1] & 0x1F)]
                    } else if !inFragment {
                        return false
                    }
                    bytes += b[2...]
                    if end { inFragment = false }
                }
                return true
            }
            guard ok else { return nil }
            // Where a frame starts is known only from where the one before it ended, or from a key frame's
            // parameter sets or IDR slice at its head.
            if i == 0, !follows, !key { return nil }
        }
        guard !inFragment, !bytes.isEmpty else { return nil }
        return AssembledFrame(timestamp: w.timestamp, bytes: bytes, keyframe: key, size: nil, arrival: w.firstArrival)
    }
}

/// RTP timestamps (32 bits, wrapping) as a line: each one placed nearest the last (RFC 3550 section 5.1).
struct TimestampUnwrapper {
    private var last: Int64?

    mutating func unwrap(_ ts: UInt32) -> Int64 {
        guard let last else {
            self.last = Int64(ts)
            return Int64(ts)
        }
        let delta = Int64(Int32(bitPattern: ts &- UInt32(truncatingIfNeeded: last)))
        // Wrapping: a sender that keeps jumping forward half the range for a day would pass Int64's end; only
        // differences are used.
        let value = last &+ delta
        self.last = value
        return value
    }
}
