import COpus
import COpusShims
import SFU

/// A libopus encoder (48 kHz mono, VOIP, 20 ms frames) for making real Opus packets in tests and the load
/// generator.
public final class OpusFrameEncoder {
    public static let frameSamples = 960
    private let encoder: OpaquePointer
    private var out = [UInt8](repeating: 0, count: 1500)

    public init(bitrate: Int32 = 32_000, dtx: Bool = false) {
        var err: Int32 = 0
        encoder = opus_encoder_create(48_000, 1, OPUS_APPLICATION_VOIP, &err)!
        precondition(err == OPUS_OK, "opus_encoder_create failed: \(err)")
        _ = sfu_opus_encoder_set_int(encoder, OPUS_SET_BITRATE_REQUEST, bitrate)
        _ = sfu_opus_encoder_set_int(encoder, OPUS_SET_DTX_REQUEST, dtx ? 1 : 0)
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Encodes one 20 ms frame of 960 samples.
    public func encode(_ pcm: ArraySlice<Int16>) -> [UInt8] {
        precondition(pcm.count == Self.frameSamples)
        let n = pcm.withUnsafeBufferPointer { p in
            out.withUnsafeMutableBufferPointer { o in
                opus_encode(encoder, p.baseAddress!, Int32(Self.frameSamples), o.baseAddress!, Int32(o.count))
            }
        }
        precondition(n > 0, "opus_encode failed: \(n)")
        return Array(out[0..<Int(n)])
    }

    /// Encodes a whole signal into 20 ms packets (the tail shorter than a frame is dropped).
    public func encodeAll(_ pcm: [Int16]) -> [[UInt8]] {
        stride(from: 0, to: pcm.count - Self.frameSamples + 1, by: Self.frameSamples).map {
            encode(pcm[$0..<($0 + Self.frameSamples)])
        }
    }
}

/// Synthetic and spoken test signals at 48 kHz mono.
public enum TestSignal {
    /// A sine at `dbfs` (0 = full-scale peak) for `seconds`.
    public static func sine(frequency: Double = 440, dbfs: Double, seconds: Double) -> [Int16] {
        let n = Int(seconds * 48_000)
        let amp = 32767 * pow10(dbfs / 20)
        return (0..<n).map { Int16((amp * sin(2 * Double.pi * frequency * Double($0) / 48_000)).rounded()) }
    }

    public static func silence(seconds: Double) -> [Int16] { [Int16](repeating: 0, count: Int(seconds * 48_000)) }

    /// Low-level white noise (a "hum" or room noise) at roughly `dbfs` RMS, deterministic.
    public static func noise(dbfs: Double, seconds: Double, seed: UInt64 = 1) -> [Int16] {
        var rng = SplitMix64(seed: seed)
        let rms = 32767 * pow10(dbfs / 20)
        return (0..<Int(seconds * 48_000)).map { _ in
            Int16(max(-32767, min(32767, (Double(rng.next() % 20001) / 10000 - 1) * rms * 1.732)))
        }
    }

    static func pow10(_ x: Double) -> Double { exp(x * 2.302585092994046) }
}

/// A small deterministic generator for tests (SplitMix64).
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

import Foundation
