import Foundation
import SFUBase

/// One recorded stream's file on the writer's thread: the RTP timeline turned into the file's, gaps kept as
/// time (audio: concealment frames; video: no frame), video rebuilt into whole frames (`FrameAssembler`). The
/// file opens at the first packet (audio) or key frame (video): the manifest's offset is where that lands on
/// the recording's clock.
final class StreamFile {
    let info: RecordedStream
    let fileName: String
    let path: String
    private(set) var file: MediaFile?
    private var assembler: FrameAssembler?
    /// When the file's time 0 arrived, and the RTP timestamp that maps to a file time.
    private(set) var firstArrival: MonoTime?
    private(set) var lastArrival: MonoTime?
    private var anchor: (timestamp: Int64, pts: Int64)?
    private var audioTimestamps = TimestampUnwrapper()
    private var nextAudioPTS: Int64 = 0
    private var lastVideoPTS: Int64 = -1
    private(set) var endPTS: Int64 = 0
    private(set) var framesWritten = 0
    /// Audio: 20 ms concealment frames written where packets were missing (lost, muted, DTX).
    private(set) var concealedFrames = 0
    private var audioIgnored = 0
    private var closedIgnored = 0
    /// Packets not written: malformed, late, repeated, or of a layer not recorded.
    var packetsIgnored: Int { audioIgnored + closedIgnored + (assembler?.packetsIgnored ?? 0) }
    private(set) var failure: MediaFile.Failure?
    /// Bytes the file had when last counted (the writer charges the difference to the caps).
    var countedBytes: Int64 = 0

    /// A timestamp further from what arrival times say than this re-anchors the timeline on arrival (a sender
    /// that reset its clock, or lies).
    static let maxClockDisagreement: MonoTime.Interval = .seconds(5)
    /// RFC 6716 section 3.2.1: a code 0 packet whose only frame is empty (TOC byte only: CELT, fullband, 20 ms)
    /// - a lost frame the decoder conceals, and the time it covers stays in the file.
    static let concealmentFrame: [UInt8] = [0xF8]

    init(info: RecordedStream, fileName: String, directory: String) {
        self.info = info
        self.fileName = fileName
        path = directory + "/" + fileName
        if info.codec.kind == .video { assembler = FrameAssembler(codec: info.codec) }
    }

    var clock: Int64 { Int64(info.codec.clockRate) }
    /// Video: the assembler lost a frame (or has not had a key frame yet), or the key frames so far could not
    /// start the file (no size, H.264 without its parameter sets): it waits for a key frame.
    var wantsKeyframe: Bool { (assembler?.broken ?? false) || (assembler != nil && file == nil) }
    var framesLost: Int { (assembler?.framesLost ?? 0) + closedLost + unopenable }
    /// Key frames that could not start the file.
    private var unopenable = 0
    private var closedLost = 0
    var durationSeconds: Double { Double(endPTS) / Double(clock) }

    func restart() {
        anchor = nil
        audioTimestamps = TimestampUnwrapper()
        assembler?.restart()
    }

    /// One packet. Throws when the file cannot be written (a full disk): the caller closes it.
    func add(sequence: Int64, timestamp: UInt32, marker: Bool, payload: UnsafeRawBufferPointer, arrival: MonoTime) throws {
        guard failure == nil else { return }
        if var a = assembler {
            let frames = a.add(sequence: sequence, timestamp: timestamp, marker: marker, payload: payload, arrival: arrival)
            assembler = a
            for f in frames { try writeVideo(f) }
        } else {
            try writeAudio(timestamp: audioTimestamps.unwrap(timestamp), payload: payload, arrival: arrival)
        }
    }

    /// Where an RTP timestamp lands in the file: from the anchor, unless that disagrees with arrival times.
    private func pts(_ ts: Int64, arrival: MonoTime) -> Int64 {
        let byArrival = firstArrival.map { Int64((arrival - $0).seconds * Double(clock)) } ?? 0
        if let a = anchor {
            // Wrapping arithmetic: the timestamps are the sender's, whatever they are.
            let p = a.pts &+ (ts &- a.timestamp)
            let off = p &- byArrival, limit = Int64(Self.maxClockDisagreement.seconds * Double(clock))
            if off >= -limit && off <= limit { return p }
        }
        anchor = (ts, byArrival)
        return byArrival
    }

    private func writeAudio(timestamp ts: Int64, payload: UnsafeRawBufferPointer, arrival: MonoTime) throws {
        guard case .success(let opus) = OpusPacketInfo.parse(payload), opus.samples48k > 0 else {
            audioIgnored += 1
            return
        }
        if file == nil { try open() }
        if firstArrival == nil { firstArrival = arrival }
        let at = pts(ts, arrival: arrival)
        let frame = Int64(960)
        // Late or repeated: the time it covers is written already.
        guard at > nextAudioPTS - frame / 2 || framesWritten == 0 else {
            audioIgnored += 1
            return
        }
        while at - nextAudioPTS >= frame - frame / 4 {
            try write(Self.concealmentFrame, pts: nextAudioPTS, duration: frame, keyframe: true)
            concealedFrames += 1
            nextAudioPTS += frame
        }
        try write(payload, pts: nextAudioPTS, duration: Int64(opus.samples48k), keyframe: true)
        nextAudioPTS += Int64(opus.samples48k)
        endPTS = nextAudioPTS
        lastArrival = arrival
    }

    private func writeVideo(_ f: AssembledFrame) throws {
        if file == nil {
            guard f.keyframe else { return }
            // A file starts with what its track header needs: a size, and for H.264 the parameter sets.
            let openable = switch info.codec {
            case .h264: !Self.parameterSets(f.bytes).isEmpty
            case .vp8, .vp9: f.size != nil
            case .opus: true
            }
            guard openable else {
                unopenable += 1
                return
            }
            try open(keyframe: f)
        }
        if firstArrival == nil { firstArrival = f.arrival }
        var at = pts(f.timestamp, arrival: f.arrival)
        if at <= lastVideoPTS { at = lastVideoPTS + 1 }
        try f.bytes.withUnsafeBytes { b in try write(b, pts: at, duration: 0, keyframe: f.keyframe) }
        lastVideoPTS = at
        endPTS = at + clock / 30
        lastArrival = f.arrival
    }

    private func write(_ bytes: [UInt8], pts: Int64, duration: Int64, keyframe: Bool) throws {
        try bytes.withUnsafeBytes { b in try write(b, pts: pts, duration: duration, keyframe: keyframe) }
    }

    private func write(_ bytes: UnsafeRawBufferPointer, pts: Int64, duration: Int64, keyframe: Bool) throws {
        do {
            try file?.write(bytes, pts: pts, duration: duration, keyframe: keyframe)
            framesWritten += 1
        } catch {
            failure = error as? MediaFile.Failure ?? MediaFile.Failure(-5)
            throw error
        }
    }

    private func open(keyframe: AssembledFrame? = nil) throws {
        do {
            switch info.codec {
            case .opus: file = try MediaFile(path: path, codec: .opus, extradata: MediaFile.opusHead)
            case .h264:
                // The parameter sets of the first key frame, as Annex B: the muxer writes them as the track's
                // avcC and turns every frame's start codes into lengths.
                let sets = keyframe.map { Self.parameterSets($0.bytes) } ?? []
                file = try MediaFile(path: path, codec: .h264, extradata: sets, firstFrame: keyframe?.bytes ?? [])
            case .vp8, .vp9:
                file = try MediaFile(path: path, codec: info.codec, width: keyframe?.size?.width ?? 0, height: keyframe?.size?.height ?? 0,
                                     firstFrame: keyframe?.bytes ?? [])
            }
        } catch {
            failure = error as? MediaFile.Failure ?? MediaFile.Failure(-5)
            throw error
        }
    }

    /// Closes the file (trailer written when the disk lets it). Returns what went wrong, if anything.
    @discardableResult
    func close() -> MediaFile.Failure? {
        // What waits for packets is let go (a closed stream keeps only its counts).
        closedLost = assembler?.framesLost ?? 0
        closedIgnored = assembler?.packetsIgnored ?? 0
        assembler = nil
        guard let f = file, closedBytes == nil else { return failure }
        do { try f.close() } catch { failure = failure ?? (error as? MediaFile.Failure ?? MediaFile.Failure(-5)) }
        let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber
        closedBytes = size?.int64Value ?? 0
        return failure
    }

    private var closedBytes: Int64?
    var bytesWritten: Int64 { closedBytes ?? file?.bytesWritten ?? 0 }

    /// The SPS and PPS NAL units of an Annex B access unit, each behind its start code.
    static func parameterSets(_ au: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var starts: [Int] = []
        var i = 0
        while i + 3 < au.count {
            if au[i] == 0, au[i + 1] == 0, au[i + 2] == 0, au[i + 3] == 1 { starts.append(i + 4); i += 4 } else { i += 1 }
        }
        for (n, s) in starts.enumerated() where s < au.count {
            let end = n + 1 < starts.count ? starts[n + 1] - 4 : au.count
            let type = au[s] & 0x1F
            if type == 7 || type == 8 { out += [0, 0, 0, 1] + au[s..<end] }
        }
        return out
    }
}
