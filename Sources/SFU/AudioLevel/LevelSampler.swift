/// Turns an audio track's packets into dominant speaker samples: one per 20 ms of RTP time (960 ticks at
/// 48 kHz), so a publisher's packetization does not weigh its speech. A timestamp jump over contiguous
/// sequence numbers is discontinuous transmission: the silence it stands for is counted. A sequence gap is
/// loss: nothing is filled in. Reordered and duplicate packets were counted already (media-core.md section 1).
struct LevelSampler {
    static let ticksPerSample: Int64 = 960
    private var lastSequence: Int64?
    private var lastTimestamp: UInt32 = 0
    /// RTP time not yet turned into a sample (packets shorter than 20 ms).
    private var carry: Int64 = 0

    /// How many samples of its level this packet is worth (0: none).
    mutating func samples(extendedSequence ext: Int64, timestamp: UInt32) -> Int {
        var samples = 1
        if let last = lastSequence {
            guard ext > last else { return 0 }
            if ext == last + 1 {
                carry += Int64(timestamp &- lastTimestamp)
                samples = Int(carry / Self.ticksPerSample)
                carry %= Self.ticksPerSample
            } else {
                carry = 0
            }
        }
        lastSequence = ext
        lastTimestamp = timestamp
        return samples
    }
}
