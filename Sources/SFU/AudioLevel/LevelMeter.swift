/// Where a room takes its participants' audio levels from.
public enum LevelSource: String, Sendable, CaseIterable, Codable {
    /// The RFC 6464 extension the client sends (what the client claims); decode only when it is absent.
    case `extension`
    /// Decode Opus and measure (what the server hears); the extension is ignored.
    case decode
    /// Use the extension, but decode a sample of packets and flag participants whose claim disagrees.
    case verify
}

/// Measures one audio source's level per packet according to the room's `LevelSource`.
///
/// The SILK VAD flags (RFC 6716 section 4.2.3) gate decoding: a SILK or hybrid packet that says "no voice"
/// reads as silence without being decoded; DTX packets are silence and are never decoded. CELT-only packets
/// carry no VAD flag and are decoded.
public struct LevelMeter {
    public struct Verdict: Equatable, Sendable {
        /// Mean of |claimed - heard| in dB over the comparison window.
        public var meanDifference: Double
        public var samples: Int
    }

    public private(set) var source: LevelSource
    private var decoder: OpusLevelDecoder?
    /// Packets decoded since the meter was created (for stats and benchmarks).
    public private(set) var decodedPackets = 0
    public private(set) var gatedPackets = 0

    // Verify mode: decode a burst of consecutive packets every `verifyPeriod` packets; compare the last
    // packets of the burst (after decoder warm-up) with the claimed level.
    static let verifyPeriod = 50
    static let verifyBurst = 5
    static let verifyWarmup = 2
    private var packetCounter = 0
    private var diffSum = 0.0
    private var diffCount = 0
    private static let verdictSamples = 30

    public init(source: LevelSource) {
        self.source = source
    }

    public mutating func setSource(_ s: LevelSource) { source = s }

    private mutating func decoderInstance() -> OpusLevelDecoder? {
        if decoder == nil { decoder = OpusLevelDecoder() }
        return decoder
    }

    /// The level (0 loud ... 127 silence) for this packet, or nil when nothing can be said (corrupt payload).
    /// Also returns a verify-mode verdict when enough samples were compared.
    public mutating func measure(
        claimed: AudioLevelExtension?, opus: OpusPacketInfo, payload: UnsafeRawBufferPointer
    ) -> (level: UInt8?, verdict: Verdict?) {
        if opus.isDTX { return (LevelMath.silence, nil) }
        switch source {
        case .extension:
            if let claimed { return (claimed.level, nil) }
            return (heard(opus, payload), nil)
        case .decode:
            return (heard(opus, payload), nil)
        case .verify:
            guard let claimed else { return (heard(opus, payload), nil) }
            packetCounter += 1
            let phase = packetCounter % Self.verifyPeriod
            var verdict: Verdict?
            if phase < Self.verifyBurst, let d = decoderInstance() {
                if phase == 0 { d.reset() }
                decodedPackets += 1
                if let measured = d.level(ofPacket: payload), phase >= Self.verifyWarmup {
                    diffSum += abs(Double(measured) - Double(claimed.level))
                    diffCount += 1
                    if diffCount >= Self.verdictSamples {
                        verdict = Verdict(meanDifference: diffSum / Double(diffCount), samples: diffCount)
                        diffSum = 0
                        diffCount = 0
                    }
                }
            }
            return (claimed.level, verdict)
        }
    }

    private mutating func heard(_ opus: OpusPacketInfo, _ payload: UnsafeRawBufferPointer) -> UInt8? {
        if opus.activity == .noVoice {
            gatedPackets += 1
            return LevelMath.silence
        }
        guard let d = decoderInstance() else { return nil }
        decodedPackets += 1
        return d.level(ofPacket: payload)
    }
}
