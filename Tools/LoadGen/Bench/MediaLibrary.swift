import Foundation
import SFU
import SFUMedia
import SFUSimulation

/// Media encoded once before a run and replayed by every publisher with fresh headers: Opus frames of real
/// speech (espeak-ng, or a syllable-like synthetic signal when espeak-ng is missing) and of near silence, and
/// VP8 frames at the chosen size, bitrate and frame rate (libvpx; the first a keyframe, which replay starts
/// from again when the node asks for one).
public final class MediaLibrary: @unchecked Sendable {
    public let speech: [[UInt8]]
    public let silence: [[UInt8]]
    public let video: [VP8Frame]
    public let fps: Int
    /// How much of the speech is voice (its level, -dBov, per frame), for the audio level extension.
    public let speechLevels: [UInt8]

    /// With `simulcast`, the video as three layers, lowest first (`layers`; `video` is the top one).
    public let layers: [[VP8Frame]]

    /// Simulcast layers relative to the top one: a quarter and half of its size at 15 % and 35 % of its
    /// bitrate (about what libwebrtc gives three layers of a 720p camera).
    public static let simulcastScales: [(size: Int, bitrate: Double)] = [(4, 0.15), (2, 0.35), (1, 1)]

    public init(videoKbps: Int, fps: Int, width: Int = 640, height: Int = 360, videoSeconds: Double = 2, simulcast: Bool = false) {
        let pcm: [Int16]
        if let said = try? Speech.say("Thanks everyone for joining. Let me walk you through the numbers from last week, then we can take questions about the release plan.") {
            pcm = said
        } else {
            // Syllables: 180 ms of tone, 70 ms of near silence (the engine counts speech by its dips).
            pcm = (0..<12).flatMap { i in TestSignal.sine(frequency: 180 + Double(i % 4) * 40, dbfs: -16, seconds: 0.18) + TestSignal.noise(dbfs: -60, seconds: 0.07, seed: UInt64(i)) }
        }
        let encoder = OpusFrameEncoder()
        speech = encoder.encodeAll(pcm)
        speechLevels = stride(from: 0, to: pcm.count - OpusFrameEncoder.frameSamples + 1, by: OpusFrameEncoder.frameSamples).map {
            pcm[$0..<($0 + OpusFrameEncoder.frameSamples)].withUnsafeBufferPointer { LevelMath.level(of: $0) }
        }
        silence = OpusFrameEncoder().encodeAll(TestSignal.noise(dbfs: -70, seconds: 1))
        self.fps = fps
        let count = max(1, Int(videoSeconds * Double(fps)))
        func encode(width: Int, height: Int, kbps: Int) -> [VP8Frame] {
            let vp8 = VP8FrameEncoder(width: width, height: height, bitrateKbps: kbps, fps: fps)
            return (0..<count).map { vp8.next(keyframe: $0 == 0) }
        }
        // libvpx wants even sizes of at least 16.
        layers = simulcast ? Self.simulcastScales.map { s in
            encode(width: max(16, width / s.size / 2 * 2), height: max(16, height / s.size / 2 * 2), kbps: max(20, Int(Double(videoKbps) * s.bitrate)))
        } : []
        video = layers.last ?? encode(width: width, height: height, kbps: videoKbps)
    }
}
