import Foundation

/// Real speech from espeak-ng, resampled to 48 kHz mono int16, cached per text in the temp directory.
///
/// Tests that need speech fail with a clear message when espeak-ng is missing: `.ci/run` installs it.
public enum Speech {
    public enum Failure: Error, CustomStringConvertible {
        case espeakMissing(String)
        case badWAV(String)
        public var description: String {
            switch self {
            case .espeakMissing(let m): "espeak-ng is needed for speech fixtures (apt-get install espeak-ng): \(m)"
            case .badWAV(let m): "unexpected WAV from espeak-ng: \(m)"
            }
        }
    }

    /// `text` spoken, at 48 kHz, scaled so its loudest 20 ms frames peak near `peakDbfs`.
    public static func say(_ text: String, voice: String = "en", peakDbfs: Double = -6) throws -> [Int16] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sfu-speech")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let key = String(UInt64(bitPattern: Int64(truncatingIfNeeded: (text + voice).hashValueStable)), radix: 16)
        let wav = dir.appendingPathComponent("\(key).wav")
        if !FileManager.default.fileExists(atPath: wav.path) {
            let tmp = dir.appendingPathComponent("\(key).\(getpid()).tmp.wav")
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/espeak-ng")
            p.arguments = ["-v", voice, "-w", tmp.path, text]
            do { try p.run() } catch { throw Failure.espeakMissing("\(error)") }
            p.waitUntilExit()
            guard p.terminationStatus == 0 else { throw Failure.espeakMissing("exit \(p.terminationStatus)") }
            try? FileManager.default.removeItem(at: wav)
            try FileManager.default.moveItem(at: tmp, to: wav)
        }
        let (rate, samples) = try readWAV(Data(contentsOf: wav))
        let resampled = resample(samples, from: rate, to: 48_000)
        let peak = resampled.map { abs(Int($0)) }.max() ?? 1
        let gain = 32767 * exp(peakDbfs / 20 * 2.302585092994046) / Double(max(peak, 1))
        return resampled.map { Int16(max(-32767, min(32767, (Double($0) * gain).rounded()))) }
    }

    /// Mono 16-bit PCM WAV (what espeak-ng writes).
    static func readWAV(_ d: Data) throws -> (Int, [Int16]) {
        let b = [UInt8](d)
        guard b.count > 44, b[0..<4] == [0x52, 0x49, 0x46, 0x46] else { throw Failure.badWAV("no RIFF header") }
        func u32(_ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 | Int(b[o + 2]) << 16 | Int(b[o + 3]) << 24 }
        func u16(_ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 }
        var o = 12
        var rate = 0
        var channels = 1
        while o + 8 <= b.count {
            let id = String(decoding: b[o..<(o + 4)], as: UTF8.self)
            let size = u32(o + 4)
            if id == "fmt " { channels = u16(o + 10); rate = u32(o + 12) }
            if id == "data" {
                let end = min(b.count, o + 8 + size)
                var s: [Int16] = []
                s.reserveCapacity((end - o - 8) / 2)
                var i = o + 8
                while i + 1 < end {
                    s.append(Int16(bitPattern: UInt16(b[i]) | UInt16(b[i + 1]) << 8))
                    i += 2 * channels
                }
                guard rate > 0 else { throw Failure.badWAV("no fmt chunk") }
                return (rate, s)
            }
            o += 8 + size + (size & 1)
        }
        throw Failure.badWAV("no data chunk")
    }

    /// Linear-interpolation resampling: good enough for level and talker tests.
    static func resample(_ s: [Int16], from: Int, to: Int) -> [Int16] {
        guard from != to, !s.isEmpty else { return s }
        let n = s.count * to / from
        return (0..<n).map { i in
            let x = Double(i) * Double(from) / Double(to)
            let j = Int(x)
            let f = x - Double(j)
            let a = Double(s[min(j, s.count - 1)])
            let b = Double(s[min(j + 1, s.count - 1)])
            return Int16((a + (b - a) * f).rounded())
        }
    }
}

extension String {
    /// FNV-1a: stable across runs, unlike `hashValue`.
    var hashValueStable: Int {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
        return Int(truncatingIfNeeded: h)
    }
}
