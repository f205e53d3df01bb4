import ArgumentParser
import Foundation
import SFUMedia
import SFURecording

/// `sfu compose`: the seeds' post-session service ("transcoded ... to create a single video file"). Reads a
/// recording's manifest and has FFmpeg make one MP4 of it: every audio file mixed, each on the recording's
/// clock (its start offset); the picture is the active talker's camera, full frame, chosen from the recorded
/// audio itself (the loudest participant, kept until another is louder for a second), and a screen share
/// while one is live.
struct ComposeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compose",
        abstract: "Mix a recording's individual files into one video file (active-talker layout, all audio mixed).",
        discussion: "Give the recording's manifest.json (written by the node beside its files). Needs Debian's ffmpeg.")

    @Argument(help: "the recording's manifest.json") var manifest: String
    @Option(name: .shortAndLong, help: "the file to write (MP4: H.264 and AAC)") var output = "composed.mp4"
    @Option(help: "picture size, WIDTHxHEIGHT") var size = "1280x720"

    func run() throws {
        let m = try JSONDecoder().decode(RecordingManifest.self, from: Data(contentsOf: URL(fileURLWithPath: manifest)))
        let dir = (manifest as NSString).deletingLastPathComponent
        let plan = try ComposePlan(manifest: m, directory: dir.isEmpty ? "." : dir)
        guard plan.duration > 0 else { throw ValidationError("the recording has no files to compose") }
        try FFmpeg.run("ffmpeg", ["-y"] + plan.arguments(size: size, output: output))
        print("composed \(m.recording): \(plan.audio.count) audio, \(plan.videos.count) video files, \(String(format: "%.1f", plan.duration)) s, " +
              "\(plan.talkerSegments.count) talker segments -> \(output)")
    }
}

/// What `sfu compose` asks FFmpeg for, worked out from a manifest (separate from running it, for tests).
struct ComposePlan {
    struct Input {
        var path: String
        var participant: String
        var kind: String
        var offset: Double
        var duration: Double
    }

    var audio: [Input] = []
    var videos: [Input] = []
    var duration = 0.0
    /// Who is shown when: (participant, from, to) on the recording's clock.
    var talkerSegments: [(participant: String, from: Double, to: Double)] = []

    /// Level windows of the active-talker choice, and how long a new talker must lead before the picture moves.
    static let window = 0.25
    static let hold = 4

    init(manifest m: RecordingManifest, directory: String) throws {
        for s in m.streams where s.startOffsetMs != nil && s.frames > 0 {
            let i = Input(path: directory + "/" + s.file, participant: s.participant, kind: s.kind,
                          offset: Double(s.startOffsetMs ?? 0) / 1000, duration: Double(s.durationMs) / 1000)
            if s.kind == "audio" { audio.append(i) } else { videos.append(i) }
            duration = max(duration, i.offset + i.duration)
        }
        talkerSegments = try Self.talkers(audio, duration: duration)
    }

    /// The loudest participant per window, from each audio file decoded at 8 kHz; a change of talker only once
    /// the new one has led for `hold` windows in a row.
    static func talkers(_ audio: [Input], duration: Double) throws -> [(participant: String, from: Double, to: Double)] {
        let windows = Int((duration / window).rounded(.up))
        guard windows > 0 else { return [] }
        var levels: [String: [Double]] = [:]
        for a in audio {
            let pcm = try FFmpeg.run("ffmpeg", ["-i", a.path, "-f", "s16le", "-ac", "1", "-ar", "8000", "-"])
            let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
            var l = levels[a.participant] ?? [Double](repeating: 0, count: windows)
            let per = Int(8000 * window)
            for w in 0..<windows {
                let start = Int((Double(w) * window - a.offset) * 8000)
                guard start >= 0, start + per <= samples.count else { continue }
                var sum = 0.0
                for s in samples[start..<(start + per)] { sum += Double(s) * Double(s) }
                l[w] = max(l[w], (sum / Double(per)).squareRoot())
            }
            levels[a.participant] = l
        }
        var segments: [(participant: String, from: Double, to: Double)] = []
        var current: String?
        var challenger: (String, Int)?
        for w in 0..<windows {
            // Below about -50 dBFS nobody is talking: the picture stays where it is.
            guard let (loudest, level) = levels.max(by: { $0.value[w] < $1.value[w] }).map({ ($0.key, $0.value[w]) }), level > 100 else { continue }
            if current == nil { current = loudest }
            if loudest == current {
                challenger = nil
            } else if let (c, n) = challenger, c == loudest {
                challenger = (c, n + 1)
                if n + 1 >= hold {
                    current = loudest
                    challenger = nil
                }
            } else {
                challenger = (loudest, 1)
            }
            let t = Double(w) * window
            if let last = segments.last, last.participant == current {
                segments[segments.count - 1].to = t + window
            } else if let current {
                segments.append((current, t, t + window))
            }
        }
        if !segments.isEmpty {
            segments[0].from = 0
            segments[segments.count - 1].to = duration
        }
        return segments
    }

    /// FFmpeg's arguments: the inputs, one filter graph (black canvas, each camera over it while its owner is
    /// the talker, screen shares on top while live; the audio delayed to its offset and mixed), the output.
    func arguments(size: String, output: String) -> [String] {
        let dims = size.split(separator: "x").compactMap { Int($0) }
        let (w, h) = dims.count == 2 ? (dims[0], dims[1]) : (1280, 720)
        var args: [String] = []
        for i in videos + audio { args += ["-i", i.path] }
        var graph = ["color=c=black:s=\(w)x\(h):r=30:d=\(String(format: "%.3f", duration))[base]"]
        var last = "base"
        let cameras = videos.enumerated().filter { $0.element.kind != "screen" }
        let screens = videos.enumerated().filter { $0.element.kind == "screen" }
        for (n, (k, v)) in (cameras + screens).enumerated() {
            graph.append("[\(k):v]setpts=PTS-STARTPTS+\(String(format: "%.3f", v.offset))/TB,scale=\(w):\(h):force_original_aspect_ratio=decrease,"
                         + "pad=\(w):\(h):(ow-iw)/2:(oh-ih)/2[v\(n)]")
            let when: String
            if v.kind == "screen" {
                when = "between(t,\(String(format: "%.3f", v.offset)),\(String(format: "%.3f", v.offset + v.duration)))"
            } else {
                let mine = talkerSegments.filter { $0.participant == v.participant }
                when = mine.isEmpty ? "0" : mine.map { "between(t,\(String(format: "%.3f", $0.from)),\(String(format: "%.3f", $0.to)))" }.joined(separator: "+")
            }
            graph.append("[\(last)][v\(n)]overlay=eof_action=pass:enable='\(when)'[o\(n)]")
            last = "o\(n)"
        }
        var mixed: [String] = []
        for (j, a) in audio.enumerated() {
            let ms = Int((a.offset * 1000).rounded())
            graph.append("[\(videos.count + j):a]adelay=delays=\(ms):all=1,aresample=48000[a\(j)]")
            mixed.append("[a\(j)]")
        }
        var maps = ["-map", "[\(last)]"]
        if !mixed.isEmpty {
            graph.append(mixed.joined() + "amix=inputs=\(mixed.count):normalize=0:duration=longest[aout]")
            maps += ["-map", "[aout]"]
        }
        return args + ["-filter_complex", graph.joined(separator: ";")] + maps
            + ["-c:v", "libx264", "-preset", "veryfast", "-crf", "26", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "96k",
               "-t", String(format: "%.3f", duration), output]
    }
}
