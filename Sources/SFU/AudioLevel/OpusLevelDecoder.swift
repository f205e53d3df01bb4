import COpus
import COpusShims

/// Decodes Opus to mono 16 kHz PCM to measure what the server actually hears.
///
/// 16 kHz reads voiced speech within about 1 dB of the 48 kHz level at a third of the cost (see
/// `limits.md`). The PCM buffer is allocated once (120 ms, the longest Opus packet), so decoding allocates
/// nothing per packet. The decoder is destroyed with the object.
public final class OpusLevelDecoder {
    public static let sampleRate: Int32 = 16_000
    private static let maxSamples = 1920  // 120 ms at 16 kHz
    private let decoder: OpaquePointer
    private let pcm: UnsafeMutableBufferPointer<Int16>

    public init?() {
        var err: Int32 = 0
        guard let d = opus_decoder_create(Self.sampleRate, 1, &err), err == OPUS_OK else { return nil }
        decoder = d
        pcm = .allocate(capacity: Self.maxSamples)
    }

    deinit {
        opus_decoder_destroy(decoder)
        pcm.deallocate()
    }

    /// The level of one Opus packet, or nil when libopus refuses it (a corrupt packet).
    public func level(ofPacket payload: UnsafeRawBufferPointer) -> UInt8? {
        guard let base = payload.baseAddress, payload.count > 0, payload.count <= 1275 * 3 else { return nil }
        let n = opus_decode(decoder, base.assumingMemoryBound(to: UInt8.self), Int32(payload.count),
                            pcm.baseAddress!, Int32(Self.maxSamples), 0)
        guard n > 0 else { return nil }
        return LevelMath.level(of: UnsafeBufferPointer(rebasing: pcm[0..<Int(n)]))
    }

    /// Forgets decoder state, after a gap in what was decoded (verify mode decodes in bursts).
    public func reset() { _ = sfu_opus_decoder_reset(decoder) }
}
