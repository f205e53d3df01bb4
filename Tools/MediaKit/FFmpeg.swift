import Foundation

/// FFmpeg's command-line tools (Debian's `ffmpeg`), for the recording's tests, `sfu compose` and checks of what
/// the node writes: probe a file, decode it, hash its decoded frames.
public enum FFmpeg {
    public struct Failure: Error, CustomStringConvertible {
        public var command: String
        public var status: Int32
        public var stderr: String
        public var description: String { "\(command) exited \(status): \(stderr.suffix(600))" }
    }

    /// Runs `tool` (ffmpeg or ffprobe) with `arguments`; returns its standard output. Throws when it fails.
    @discardableResult
    public static func run(_ tool: String = "ffmpeg", _ arguments: [String]) throws -> Data {
        try runCommand("/usr/bin/" + tool, (tool == "ffmpeg" ? ["-hide_banner", "-nostdin", "-loglevel", "error"] : ["-v", "error"]) + arguments)
    }

    /// Runs any command (mount, umount, ffmpeg): its standard output, or a failure naming it with its standard
    /// error. The output is read through a pipe on this thread; the errors go to a file, read once it exited
    /// (a second pipe read on another thread raced with Foundation's own handling of the process's pipes).
    @discardableResult
    public static func runCommand(_ path: String, _ arguments: [String]) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        let out = Pipe()
        let errPath = NSTemporaryDirectory() + "sfu-cmd-\(UUID().uuidString).err"
        FileManager.default.createFile(atPath: errPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errPath) }
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        try? err.close()
        guard p.terminationStatus == 0 else {
            throw Failure(command: ([path] + arguments).joined(separator: " "), status: p.terminationStatus,
                          stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
        }
        return data
    }

    /// What ffprobe says of a file's first stream and its container: codec name, duration (seconds), frames
    /// counted by decoding.
    public struct Probe: Sendable {
        public var codec: String
        public var duration: Double
        public var frames: Int
    }

    public static func probe(_ path: String) throws -> Probe {
        let data = try run("ffprobe", ["-count_frames", "-show_entries", "stream=codec_name,nb_read_frames:format=duration",
                                       "-of", "json", path])
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        let stream = (json["streams"] as? [[String: Any]])?.first ?? [:]
        let format = json["format"] as? [String: Any] ?? [:]
        return Probe(codec: stream["codec_name"] as? String ?? "",
                     duration: Double(format["duration"] as? String ?? "") ?? 0,
                     frames: Int(stream["nb_read_frames"] as? String ?? "") ?? 0)
    }

    /// Decodes a file's audio fully to 48 kHz mono samples (libopus for Opus, as browsers decode it).
    public static func decodeAudio(_ path: String) throws -> [Int16] {
        let data = try run("ffmpeg", ["-c:a", "libopus", "-i", path, "-f", "s16le", "-ac", "1", "-ar", "48000", "-"])
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// The MD5 of each decoded video frame, in order (`-f framemd5`): two files that decode to the same
    /// pictures have the same list.
    public static func frameHashes(_ path: String) throws -> [String] {
        let text = String(decoding: try run("ffmpeg", ["-i", path, "-map", "0:v:0", "-f", "framemd5", "-"]), as: UTF8.self)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
    }
}

/// VP8 frames in an IVF file (the container libvpx's tools write), for a reference decode of what was sent.
public enum IVF {
    public static func file(_ frames: [[UInt8]], width: Int, height: Int, fps: Int = 30) -> Data {
        var d = Data()
        func le16(_ v: Int) { d.append(UInt8(v & 0xFF)); d.append(UInt8(v >> 8 & 0xFF)) }
        func le32(_ v: Int) { le16(v & 0xFFFF); le16(v >> 16 & 0xFFFF) }
        d.append(contentsOf: Array("DKIF".utf8))
        le16(0); le16(32)
        d.append(contentsOf: Array("VP80".utf8))
        le16(width); le16(height); le32(fps); le32(1); le32(frames.count); le32(0)
        for (i, f) in frames.enumerated() {
            le32(f.count); le32(i); le32(0)
            d.append(contentsOf: f)
        }
        return d
    }
}

/// Splits H.264 access units (Annex B) into RTP payloads in non-interleaved mode (RFC 6184): a NAL unit that
/// fits goes alone (section 5.6), a larger one as FU-A fragments (section 5.8). The last payload of an access
/// unit takes the marker bit.
public enum H264Packetizer {
    public static func packetize(accessUnit: [UInt8], maxPayload: Int = 1100) -> [[UInt8]] {
        var payloads: [[UInt8]] = []
        for nal in nalUnits(accessUnit) where !nal.isEmpty {
            if nal.count <= maxPayload {
                payloads.append(nal)
                continue
            }
            let header = nal[0]
            var o = 1
            while o < nal.count {
                let end = min(nal.count, o + maxPayload - 2)
                var fu: UInt8 = header & 0x1F
                if o == 1 { fu |= 0x80 }
                if end == nal.count { fu |= 0x40 }
                payloads.append([(header & 0xE0) | 28, fu] + nal[o..<end])
                o = end
            }
        }
        return payloads
    }

    /// The NAL units of an Annex B stream (3- or 4-byte start codes).
    public static func nalUnits(_ s: [UInt8]) -> [[UInt8]] {
        var starts: [(code: Int, data: Int)] = []
        var i = 0
        while i + 2 < s.count {
            if s[i] == 0, s[i + 1] == 0, s[i + 2] == 1 {
                starts.append((i > 0 && s[i - 1] == 0 ? i - 1 : i, i + 3))
                i += 3
            } else {
                i += 1
            }
        }
        return starts.enumerated().map { n, st in
            Array(s[st.data..<(n + 1 < starts.count ? starts[n + 1].code : s.count)])
        }
    }

    /// An Annex B elementary stream cut into access units: a new one at each access unit delimiter, SPS or
    /// first slice of a picture (first_mb_in_slice 0: the slice data's first bit set).
    public static func accessUnits(_ stream: [UInt8]) -> [[UInt8]] {
        var units: [[UInt8]] = []
        var current: [UInt8] = []
        var hasSlice = false
        for nal in nalUnits(stream) where !nal.isEmpty {
            let type = nal[0] & 0x1F
            let startsPicture = (type == 9 || type == 7 || type == 8 || type == 6) || ((type == 1 || type == 5) && nal.count > 1 && nal[1] & 0x80 != 0)
            if startsPicture && hasSlice {
                units.append(current)
                current = []
                hasSlice = false
            }
            current += [0, 0, 0, 1] + nal
            if type == 1 || type == 5 { hasSlice = true }
        }
        if !current.isEmpty { units.append(current) }
        return units
    }
}
