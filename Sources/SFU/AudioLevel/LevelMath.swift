import Foundation

/// Audio level in -dBov from PCM (RFC 6464 section 3, computed as libwebrtc does).
public enum LevelMath {
    /// Digital silence in RFC 6464 terms.
    public static let silence: UInt8 = 127

    /// -dBov of int16 samples: mean square against full scale, rounded, clamped to 0...127.
    /// Full-scale square wave gives 0, all zeros 127, a -20 dBFS sine 23.
    public static func level(of samples: UnsafeBufferPointer<Int16>) -> UInt8 {
        guard !samples.isEmpty else { return silence }
        var sum: Int64 = 0
        for s in samples { let v = Int64(s); sum &+= v * v }
        let meanSquare = Double(sum) / Double(samples.count)
        let fullScale = 32768.0 * 32768.0
        // Below 10^-12.7 of full scale (-127 dBov) the level is silence.
        guard meanSquare > pow(10, -12.7) * fullScale else { return silence }
        let db = -10 * log10(meanSquare / fullScale)
        return UInt8(max(0, min(127, db.rounded())))
    }
}
