/// Extends 16-bit RTP sequence numbers to 64 bits (RFC 3550 appendix A.1's cycle counting), so that
/// comparisons and offsets never wrap. A packet more than 2^15 behind the highest is read as old.
public struct SequenceUnwrapper: Sendable {
    public private(set) var highest: Int64?

    public init() {}

    /// The extended value `seq` would have, without moving the highest seen (nil before the first packet):
    /// for a repair, whose original number says nothing of where the stream is.
    public func peek(_ seq: UInt16) -> Int64? {
        guard let h = highest else { return nil }
        return h + Int64(Int16(bitPattern: seq &- UInt16(truncatingIfNeeded: h)))
    }

    /// The extended value of `seq`; updates the highest seen when it moves forward.
    public mutating func unwrap(_ seq: UInt16) -> Int64 {
        guard let h = highest else {
            highest = Int64(seq)
            return Int64(seq)
        }
        let delta = Int64(Int16(bitPattern: seq &- UInt16(truncatingIfNeeded: h)))
        let ext = h + delta
        if ext > h { highest = ext }
        return ext
    }
}
