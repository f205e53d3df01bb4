/// The last packets a slot left out on purpose (a layer above what it sends), in rising extended sequence
/// order, so that a packet that arrives late, from before some of them, is numbered as if it had come in
/// order: the output after it was closed up over those skips (`SlotRewriter.skip`). Fixed size and inline:
/// nothing is allocated on the packet path.
struct SkippedPackets: Sendable {
    static let capacity = 32
    private var sequences = InlineArray<32, Int64>(repeating: .min)
    private var closesPicture = InlineArray<32, Bool>(repeating: false)
    private var next = 0
    private var count = 0

    mutating func record(_ ext: Int64, closesPicture closes: Bool) {
        sequences[next] = ext
        closesPicture[next] = closes
        next = (next + 1) % Self.capacity
        count = min(count + 1, Self.capacity)
    }

    mutating func reset() { count = 0 }

    /// How many packets were skipped after `ext`, and how many of them closed up a picture ID; nil when the log
    /// no longer reaches back that far (more skips since than it holds): such a packet cannot be placed.
    func after(_ ext: Int64) -> (packets: Int64, pictures: UInt16)? {
        var packets: Int64 = 0, pictures: UInt16 = 0
        for k in 0..<count {
            let i = (next - 1 - k + Self.capacity) % Self.capacity
            guard sequences[i] > ext else { return (packets, pictures) }
            packets += 1
            if closesPicture[i] { pictures &+= 1 }
        }
        return count < Self.capacity ? (packets, pictures) : nil
    }
}
