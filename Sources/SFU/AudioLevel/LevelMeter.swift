/// Where a room takes its participants' audio levels from.
public enum LevelSource: String, Sendable, CaseIterable, Codable {
    /// The RFC 6464 extension the client sends (what the client claims); decode only when it is absent.
    case `extension`
    /// Decode Opus and measure (what the server hears); the extension is ignored.
    case decode
    /// Use the extension while it matches what is heard: a sample of packets is decoded (every packet for
    /// the first half second), every SILK packet's voice flag is checked against the claim for free, and a
    /// participant whose claims disagree is flagged and from then on decoded.
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

    // Verify mode: decode every packet of the first `verifyStart`, then a burst of consecutive packets every
    // `verifyPeriod`; compare the decoded level (after the decoder's warm-up) with the claim. A packet whose
    // SILK voice flag says "no voice" under a claim of speech is evidence too, and costs nothing.
    static let verifyStart = 25
    static let verifyPeriod = 50
    static let verifyBurst = 5
    static let verifyWarmup = 2
    private var packetCounter = 0
    private var diffSum = 0.0
    private var diffCount = 0
    private static let verdictSamples = 10
    /// A claim louder than -40 dBov says "speech".
    static let speechClaim: UInt8 = 40

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
            var measured: UInt8?
            let phase = packetCounter % Self.verifyPeriod
            // A claim of speech on a packet whose SILK voice flag says nobody speaks is checked at once.
            let suspicious = opus.activity == .noVoice && claimed.level < Self.speechClaim
            if packetCounter <= Self.verifyStart || phase < Self.verifyBurst || suspicious, let d = decoderInstance() {
                let warming = packetCounter <= Self.verifyStart ? packetCounter <= Self.verifyWarmup : phase < Self.verifyWarmup
                if phase == 0, packetCounter > Self.verifyStart { d.reset() }
                decodedPackets += 1
                let level = d.level(ofPacket: payload)
                if !warming || suspicious { measured = level }
            }
            var verdict: Verdict?
            if let measured {
                diffSum += abs(Double(measured) - Double(claimed.level))
                diffCount += 1
                if diffCount >= Self.verdictSamples {
                    verdict = Verdict(meanDifference: diffSum / Double(diffCount), samples: diffCount)
                    diffSum = 0
                    diffCount = 0
                }
            }
            // What was heard wins over the claim for this packet: a lie lasts at most until the verdict.
            return (measured.map { max($0, claimed.level) } ?? claimed.level, verdict)
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
