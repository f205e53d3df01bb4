import Foundation
import SFUBase
import SFUMedia
import Testing
@testable import SFURecording

/// The recorder's depacketization and files on virtual time: packets go into a `StreamFile` as the writer
/// thread would hand them, and what FFmpeg decodes of the file is compared with what was sent.
@Suite final class RecordedFileTests {
    let dir: String

    init() throws {
        dir = NSTemporaryDirectory() + "recorded-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    func stream(_ codec: Codec, name: String) -> StreamFile {
        StreamFile(info: RecordedStream(recording: "r", room: "room", participant: "p", name: "P", codec: codec,
                                        source: codec == .opus ? nil : .camera, layer: nil, recordingStart: .zero),
                   fileName: name, directory: dir)
    }

    static func at(ms: Int) -> MonoTime { .milliseconds(Int64(1000 + ms)) }

    /// Best normalised cross-correlation of `b` against `a` over lags 0..<maxLag (Opus delays what it decodes).
    static func correlation(_ a: [Int16], _ b: [Int16], maxLag: Int = 2000) -> Double {
        var best = 0.0
        let n = min(a.count, b.count) - maxLag
        guard n > 0 else { return 0 }
        for lag in stride(from: 0, to: maxLag, by: 1) {
            var ab = 0.0, aa = 0.0, bb = 0.0
            for i in stride(from: 0, to: n, by: 4) {
                let x = Double(a[i]), y = Double(b[i + lag])
                ab += x * y; aa += x * x; bb += y * y
            }
            if aa > 0, bb > 0 { best = max(best, ab / (aa * bb).squareRoot()) }
        }
        return best
    }

    @Test func opusFileDecodesToTheSpeechSentAndKeepsALossBurstAsTime() throws {
        let pcm = TestSignal.sine(frequency: 440, dbfs: -12, seconds: 2)
        let frames = OpusFrameEncoder().encodeAll(pcm)
        let f = stream(.opus, name: "a.opus")
        // 10 packets (200 ms) lost in the middle: the file keeps the time.
        for (i, frame) in frames.enumerated() where !(50..<60).contains(i) {
            try frame.withUnsafeBytes { b in
                try f.add(sequence: Int64(i), timestamp: UInt32(960 * i) &+ 123_456, marker: false, payload: b, arrival: Self.at(ms: 20 * i))
            }
        }
        f.close()
        let probe = try FFmpeg.probe(f.path)
        #expect(probe.codec == "opus")
        #expect(abs(probe.duration - 2.0) < 0.05, "duration \(probe.duration)")
        #expect(f.concealedFrames == 10)
        let decoded = try FFmpeg.decodeAudio(f.path)
        #expect(abs(decoded.count - pcm.count) < 960 * 2, "\(decoded.count) samples for \(pcm.count)")
        // Before the loss the decoded speech is the sine sent (Opus at 32 kbps: well above 0.9).
        #expect(Self.correlation(Array(pcm[0..<40_000]), Array(decoded[0..<42_000])) > 0.9)
        // Where packets were lost the file holds concealment fading to silence, not garbage: quieter than the sine.
        let lost = decoded[(58 * 960)..<(60 * 960)].map { abs(Int($0)) }.max() ?? 0
        let sent = pcm[(58 * 960)..<(60 * 960)].map { abs(Int($0)) }.max() ?? 0
        #expect(lost < sent / 2, "concealment peak \(lost) vs sine \(sent)")
    }

    @Test func vp8FileDecodesFrameForFrameWithTheFramesSentThoughPacketsCameOutOfOrder() throws {
        let enc = VP8FrameEncoder(width: 160, height: 120, bitrateKbps: 400, fps: 30)
        let frames = (0..<45).map { enc.next(keyframe: $0 == 0) }
        var packetizer = VP8Packetizer(maxPayload: 300)
        var packets: [(seq: Int64, ts: UInt32, marker: Bool, payload: [UInt8], at: MonoTime)] = []
        var seq: Int64 = 1000
        for (i, fr) in frames.enumerated() {
            let ps = packetizer.packetize(fr)
            for (k, p) in ps.enumerated() {
                packets.append((seq, UInt32(3000 * i), k == ps.count - 1, p, Self.at(ms: 33 * i)))
                seq += 1
            }
        }
        // Neighbours swapped here and there: a reordering network.
        for i in stride(from: 3, to: packets.count - 1, by: 7) { packets.swapAt(i, i + 1) }
        let f = stream(.vp8, name: "v.webm")
        for p in packets { try p.payload.withUnsafeBytes { try f.add(sequence: p.seq, timestamp: p.ts, marker: p.marker, payload: $0, arrival: p.at) } }
        f.close()
        let reference = dir + "/sent.ivf"
        try IVF.file(frames.map(\.data), width: 160, height: 120).write(to: URL(fileURLWithPath: reference))
        #expect(try FFmpeg.probe(f.path).codec == "vp8")
        let recorded = try FFmpeg.frameHashes(f.path)
        #expect(recorded.count == 45)
        #expect(recorded == (try FFmpeg.frameHashes(reference)))
    }

    @Test func aLostVP8PacketLeavesAGapUntilTheNextKeyFrameNotACorruptPicture() throws {
        let enc = VP8FrameEncoder(width: 160, height: 120, bitrateKbps: 400, fps: 30)
        let frames = (0..<40).map { enc.next(keyframe: $0 == 0 || $0 == 30) }
        var packetizer = VP8Packetizer(maxPayload: 300)
        let f = stream(.vp8, name: "loss.webm")
        var seq: Int64 = 0
        for (i, fr) in frames.enumerated() {
            let ps = packetizer.packetize(fr)
            for (k, p) in ps.enumerated() {
                defer { seq += 1 }
                if i == 10 && k == 0 { continue }  // lost, never repaired
                try p.withUnsafeBytes { try f.add(sequence: seq, timestamp: UInt32(3000 * i), marker: k == ps.count - 1, payload: $0, arrival: Self.at(ms: 33 * i)) }
            }
        }
        #expect(!f.wantsKeyframe)
        f.close()
        // Frames 0-9 and 30-39: frame 10 was incomplete and 11-29 refer to it.
        #expect(f.framesWritten == 20)
        #expect(f.framesLost == 20)
        let recorded = try FFmpeg.frameHashes(f.path)
        let reference = dir + "/kept.ivf"
        try IVF.file(frames[0..<10].map(\.data) + frames[30..<40].map(\.data), width: 160, height: 120).write(to: URL(fileURLWithPath: reference))
        #expect(recorded == (try FFmpeg.frameHashes(reference)))
    }

    @Test func h264FileDecodesFrameForFrameWithTheFramesSent() throws {
        let source = dir + "/sent.h264"
        try FFmpeg.run("ffmpeg", ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-frames:v", "45", "-c:v", "libx264",
                                  "-pix_fmt", "yuv420p", "-profile:v", "baseline", "-g", "30", "-bsf:v", "h264_mp4toannexb", "-f", "h264", source])
        let units = H264Packetizer.accessUnits(Array(try Data(contentsOf: URL(fileURLWithPath: source))))
        #expect(units.count == 45)
        let f = stream(.h264, name: "h.mkv")
        var seq: Int64 = 0
        for (i, au) in units.enumerated() {
            let ps = H264Packetizer.packetize(accessUnit: au, maxPayload: 500)
            for (k, p) in ps.enumerated() {
                try p.withUnsafeBytes { try f.add(sequence: seq, timestamp: UInt32(3000 * i), marker: k == ps.count - 1, payload: $0, arrival: Self.at(ms: 33 * i)) }
                seq += 1
            }
        }
        f.close()
        #expect(try FFmpeg.probe(f.path).codec == "h264")
        #expect(try FFmpeg.frameHashes(f.path) == (try FFmpeg.frameHashes(source)))
    }

    @Test func aStreamThatMovesToANewSSRCGoesOnInTheSameFileOnArrivalTime() throws {
        let frames = OpusFrameEncoder().encodeAll(TestSignal.sine(frequency: 300, dbfs: -12, seconds: 2))
        let f = stream(.opus, name: "restart.opus")
        for (i, frame) in frames.enumerated() {
            if i == 50 { f.restart() }
            // A new SSRC at 1 s: new sequence numbers and a random timestamp base.
            let ts = i < 50 ? UInt32(960 * i) : UInt32(3_000_000_000) &+ UInt32(960 * (i - 50))
            try frame.withUnsafeBytes { try f.add(sequence: Int64(i < 50 ? i : i - 50), timestamp: ts, marker: false, payload: $0, arrival: Self.at(ms: 20 * i)) }
        }
        f.close()
        #expect(abs(try FFmpeg.probe(f.path).duration - 2.0) < 0.05)
        #expect(f.concealedFrames == 0)
    }

    @Test func aTimestampJumpThatArrivalTimesDenyDoesNotStretchTheFile() throws {
        let frames = OpusFrameEncoder().encodeAll(TestSignal.sine(frequency: 300, dbfs: -12, seconds: 1))
        let f = stream(.opus, name: "liar.opus")
        for (i, frame) in frames.enumerated() {
            // A sender that jumps its clock by an hour halfway through.
            let ts = UInt32(960 * i) &+ (i >= 25 ? 48_000 * 3600 : 0)
            try frame.withUnsafeBytes { try f.add(sequence: Int64(i), timestamp: ts, marker: false, payload: $0, arrival: Self.at(ms: 20 * i)) }
        }
        f.close()
        #expect(abs(try FFmpeg.probe(f.path).duration - 1.0) < 0.05)
    }

    /// IVF frames (the 32-byte file header, then a 12-byte header before each frame).
    static func ivfFrames(_ data: [UInt8]) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        var o = 32
        while o + 12 <= data.count {
            let size = Int(data[o]) | Int(data[o + 1]) << 8 | Int(data[o + 2]) << 16 | Int(data[o + 3]) << 24
            o += 12
            guard o + size <= data.count else { break }
            frames.append(Array(data[o..<(o + size)]))
            o += size
        }
        return frames
    }

    @Test func vp9FileDecodesFrameForFrameWithTheFramesSentAndTakesItsSizeFromTheKeyFrame() throws {
        let source = dir + "/sent-vp9.ivf"
        try FFmpeg.run("ffmpeg", ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-frames:v", "30", "-c:v", "libvpx-vp9",
                                  "-deadline", "realtime", "-g", "30", "-f", "ivf", source])
        let frames = Self.ivfFrames(Array(try Data(contentsOf: URL(fileURLWithPath: source))))
        #expect(frames.count == 30)
        #expect(FrameAssembler.vp9KeyframeSize(frames[0]).map { [$0.width, $0.height] } == [320, 240])
        let f = stream(.vp9, name: "v9.webm")
        var seq: Int64 = 0
        for (i, frame) in frames.enumerated() {
            // RFC 9628 section 4.2, non-flexible, no layer indices: P (inter-predicted), B (first), E (last).
            let chunks = stride(from: 0, to: frame.count, by: 700).map { Array(frame[$0..<min(frame.count, $0 + 700)]) }
            for (k, c) in chunks.enumerated() {
                let d = UInt8(i == 0 ? 0 : 0x40) | (k == 0 ? 0x08 : 0) | (k == chunks.count - 1 ? 0x04 : 0)
                try ([d] + c).withUnsafeBytes {
                    try f.add(sequence: seq, timestamp: UInt32(3000 * i), marker: k == chunks.count - 1, payload: $0, arrival: Self.at(ms: 33 * i))
                }
                seq += 1
            }
        }
        f.close()
        #expect(try FFmpeg.probe(f.path).codec == "vp9")
        #expect(try FFmpeg.frameHashes(f.path) == (try FFmpeg.frameHashes(source)))
    }

    @Test func anH264KeyFrameWithoutItsParameterSetsWaitsForOneThatHasThemRatherThanFailing() throws {
        let source = dir + "/sent2.h264"
        try FFmpeg.run("ffmpeg", ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-frames:v", "60", "-c:v", "libx264",
                                  "-pix_fmt", "yuv420p", "-profile:v", "baseline", "-g", "30", "-x264-params", "repeat-headers=1",
                                  "-bsf:v", "h264_mp4toannexb", "-f", "h264", source])
        let units = H264Packetizer.accessUnits(Array(try Data(contentsOf: URL(fileURLWithPath: source))))
        let f = stream(.h264, name: "late-sps.mkv")
        var seq: Int64 = 0
        for (i, au) in units.enumerated() {
            // The first key frame arrives without its SPS and PPS (a sender that sent them once, long ago).
            let nals = H264Packetizer.nalUnits(au).filter { i != 0 || ($0[0] & 0x1F != 7 && $0[0] & 0x1F != 8) }
            let stripped: [UInt8] = nals.flatMap { [UInt8]([0, 0, 0, 1]) + $0 }
            let ps = H264Packetizer.packetize(accessUnit: stripped, maxPayload: 500)
            for (k, p) in ps.enumerated() {
                try p.withUnsafeBytes { try f.add(sequence: seq, timestamp: UInt32(3000 * i), marker: k == ps.count - 1, payload: $0, arrival: Self.at(ms: 33 * i)) }
                seq += 1
            }
            if i == 10 { #expect(f.wantsKeyframe && f.file == nil, "no file yet, and a key frame asked for") }
        }
        f.close()
        #expect(f.failure == nil)
        // The file starts at the second key frame (frame 30), which carries its parameter sets.
        #expect(f.framesWritten == 30)
        #expect(try FFmpeg.frameHashes(f.path).count == 30)
    }

    @Test func aForgedFrameThatReachesItsMarkerButIsNotAFrameIsLostOnceNotReassembledPerPacket() throws {
        var a = FrameAssembler(codec: .h264)
        // A FU-A middle fragment (no start bit) with the marker: whole by sequence numbers, not a frame.
        let forged: [UInt8] = [0x7C, 0x05] + [UInt8](repeating: 1, count: 100)
        var out: [AssembledFrame] = []
        for i in 0..<50 {
            out += forged.withUnsafeBytes { a.add(sequence: Int64(i), timestamp: UInt32(i * 3000), marker: true, payload: $0, arrival: Self.at(ms: 33 * i)) }
        }
        #expect(out.isEmpty && a.framesLost == 50 && a.broken)
    }
}
