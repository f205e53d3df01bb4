/// The runs of a slot's source sequence numbers that were missing when the slot's output went past them (lost
/// or reordered on the way from the publisher), each with the output offsets in force then, so that a packet
/// that arrives late (an RTX repair, RFC 4588, or one reordered) takes the place it would have had in order,
/// however much the output closed up since over packets the slot left out (`SlotRewriter.skip`).
///
/// A gap is one entry however many packets the slot leaves out after it, so the log reaches back `capacity`
/// losses whatever share of a source's packets the slot leaves out (a log of the skipped packets themselves
/// would reach back a fraction of a second of a source whose upper spatial layers are left out). Fixed size
/// and inline: nothing is allocated on the packet path.
struct MissingPackets: Sendable {
    struct Gap: Sendable {
        var sequences: Range<Int64>
        var sequenceOffset: Int64
        var pictureOffset: UInt16
    }

    static let capacity = 32
    private var gaps = InlineArray<32, Gap>(repeating: Gap(sequences: 0..<0, sequenceOffset: 0, pictureOffset: 0))
    private var next = 0
    private var count = 0

    /// Notes that `sequences` were missing when the output's offsets were `sequenceOffset` and `pictureOffset`.
    mutating func record(_ sequences: Range<Int64>, sequenceOffset: Int64, pictureOffset: UInt16) {
        gaps[next] = Gap(sequences: sequences, sequenceOffset: sequenceOffset, pictureOffset: pictureOffset)
        next = (next + 1) % Self.capacity
        count = min(count + 1, Self.capacity)
    }

    mutating func reset() { count = 0 }

    /// The offsets `ext` would have been sent with in order; nil when it was not missing in any gap the log
    /// still holds (more losses since than it holds): such a packet cannot be placed.
    func offsets(for ext: Int64) -> (sequence: Int64, picture: UInt16)? {
        for k in 0..<count {
            let gap = gaps[(next - 1 - k + Self.capacity) % Self.capacity]
            if gap.sequences.contains(ext) { return (gap.sequenceOffset, gap.pictureOffset) }
            if gap.sequences.upperBound <= ext { return nil }  // gaps are in rising order: none older holds it
        }
        return nil
    }
}
