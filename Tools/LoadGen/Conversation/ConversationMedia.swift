import Foundation
import SFU
import SFUMedia
import SFUSimulation

/// The sound of a simulated meeting, made once and replayed: espeak-ng sentences and acknowledgements in a few
/// voices, each mixed with a participant's steady room noise at its microphone gain and encoded with libopus
/// into 20 ms frames, with each frame's level (RFC 6464) computed from the mixed PCM as a browser does.
///
/// Encoding happens once per (voice, noise) that some participant uses, not per participant or frame: a
/// 30-minute meeting of 50 replays a few tens of seconds of encoded speech. The levels are always those of
/// the participant's own gain; the Opus payloads are too with `encodeGains`, and otherwise those of the
/// voice at unit gain (libopus takes ~0.3 ms a frame here, and a room that reads levels from the extension
/// never decodes them). A talkspurt plays the voice's sentences from some offset, looping; a backchannel
/// plays one clip whole; silence is the noise alone.
public final class ConversationMedia: @unchecked Sendable {
    /// espeak-ng voices (two accents, a female variant, a third accent).
    public static let voiceNames = ["en-us", "en-gb", "en-us+f3", "en-gb-scotland"]
    static let sentences = [
        "Good morning, I looked at the numbers from last week.",
        "The release is on track, but the tests on the new build are still slow, so I would like another day.",
        "Could we move the review to Thursday?",
        "I talked to the customer yesterday and they asked about the export feature again, twice.",
        "That depends on the budget.",
        "We tried the cache and it helped a little, maybe ten percent, not more.",
        "Let me share my screen.",
        "I think the second option is simpler, and we can always change it later if it does not work.",
    ]
    static let acknowledgements = ["yeah", "mm hm", "right", "okay", "uh huh", "I see", "sure"]

    /// One voice's PCM at 48 kHz: its sentences back to back, and its acknowledgements, each cut to whole
    /// frames with the leading and trailing silence removed.
    struct VoicePCM {
        var speech: [Int16]
        var clips: [[Int16]]
    }

    /// One voice at one gain over one noise, encoded.
    public struct Encoded: Sendable {
        public var speech: [[UInt8]]
        public var speechLevels: [UInt8]
        public var clips: [[[UInt8]]]
        public var clipLevels: [[UInt8]]
        public var noise: [[UInt8]]
        public var noiseLevels: [UInt8]
    }

    struct Key: Hashable {
        var voice: Int
        var gainStep: Int
        var noiseDbov: Int
    }

    let voices: [VoicePCM]
    private var encoded: [Key: Encoded] = [:]
    /// Runs may share one library from several threads (tests do).
    private let lock = NSLock()
    public var voiceCount: Int { voices.count }
    /// Payloads encoded at each participant's gain (needed when the room decodes them for levels).
    public let encodeGains: Bool
    /// Lengths of each voice's acknowledgement clips, in frames (what the model needs to place them).
    public var backchannelFrames: [[Int]] { voices.map { $0.clips.map { $0.count / OpusFrameEncoder.frameSamples } } }
    /// Frames encoded so far (each once).
    public private(set) var framesEncoded = 0

    /// Synthesises the voices with espeak-ng (cached on disk by `Speech`).
    public init(voiceNames: [String] = ConversationMedia.voiceNames, encodeGains: Bool = false) throws {
        self.encodeGains = encodeGains
        voices = try voiceNames.map { v in
            let speech = try Self.sentences.flatMap { try Self.trimmed(Speech.say($0, voice: v, peakDbfs: -9)) }
            let clips = try Self.acknowledgements.map { try Self.trimmed(Speech.say($0, voice: v, peakDbfs: -9)) }
            return VoicePCM(speech: speech, clips: clips.filter { !$0.isEmpty })
        }
    }

    /// The encoded sound of one participant.
    public func sound(of person: ConversationScript.Person) -> Encoded {
        let key = Key(voice: person.voice % voices.count, gainStep: person.gainStep, noiseDbov: Int(person.noiseDbov.rounded()))
        lock.lock()
        defer { lock.unlock() }
        if let e = encoded[key] { return e }
        var e = encode(key, payloads: encodeGains || key.gainStep == 0)
        if e.speech.isEmpty {
            let unit = Key(voice: key.voice, gainStep: 0, noiseDbov: key.noiseDbov)
            let payloads = encoded[unit] ?? encode(unit, payloads: true)
            encoded[unit] = payloads
            e.speech = payloads.speech
            e.clips = payloads.clips
            e.noise = payloads.noise
        }
        encoded[key] = e
        return e
    }

    /// The mixed sound's levels, and its Opus frames when `payloads`.
    private func encode(_ key: Key, payloads: Bool) -> Encoded {
        let gain = exp(Double(key.gainStep) * 3 / 20 * log(10))
        let voice = voices[key.voice]
        let seed = UInt64(key.voice * 1000 + (key.gainStep + 50) * 10) &+ UInt64(bitPattern: Int64(key.noiseDbov))
        let encoder = OpusFrameEncoder()
        func mix(_ pcm: [Int16]) -> [Int16] {
            let noise = TestSignal.noise(dbfs: Double(key.noiseDbov), seconds: Double(pcm.count) / 48_000 + 0.02, seed: seed)
            return pcm.indices.map { Int16(clamping: Int((Double(pcm[$0]) * gain).rounded()) + Int(noise[$0])) }
        }
        func run(_ pcm: [Int16]) -> ([[UInt8]], [UInt8]) {
            let n = OpusFrameEncoder.frameSamples
            var frames: [[UInt8]] = [], levels: [UInt8] = []
            for start in stride(from: 0, to: pcm.count - n + 1, by: n) {
                let frame = pcm[start..<(start + n)]
                if payloads { frames.append(encoder.encode(frame)) }
                levels.append(frame.withUnsafeBufferPointer { LevelMath.level(of: $0) })
            }
            framesEncoded += frames.count
            return (frames, levels)
        }
        let speech = run(mix(voice.speech))
        let clips = voice.clips.map { run(mix($0)) }
        let noise = run(mix([Int16](repeating: 0, count: 48_000)))
        return Encoded(speech: speech.0, speechLevels: speech.1, clips: clips.map(\.0), clipLevels: clips.map(\.1),
                       noise: noise.0, noiseLevels: noise.1)
    }

    /// Whole frames of `pcm` from the first to the last one louder than -55 dBov.
    static func trimmed(_ pcm: [Int16]) -> [Int16] {
        let n = OpusFrameEncoder.frameSamples
        let count = pcm.count / n
        let loud = (0..<count).filter { i in
            pcm[(i * n)..<((i + 1) * n)].withUnsafeBufferPointer { LevelMath.level(of: $0) } <= 55
        }
        guard let first = loud.first, let last = loud.last else { return [] }
        return Array(pcm[(first * n)..<((last + 1) * n)])
    }
}
