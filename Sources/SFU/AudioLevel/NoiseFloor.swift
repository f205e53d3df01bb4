/// A speaker's background level: the quietest level (RFC 6464 units, larger is quieter) of each of the last
/// ten blocks of 25 samples (500 ms each, 5 s in all). Speech pauses between words every few hundred ms, so
/// over 5 s its quietest frames are its room's noise; a steady fan or hum is all noise. The talker detector
/// (`SpeechActivity`) and the onset buffer (`OnsetBuffer`) each keep one per speaker; a fixed array, allocated
/// with its owner.
struct NoiseFloor {
    static let blockLength = 25
    static let blocks = 10
    private var blockMax = [UInt8](repeating: 0, count: blocks)
    private var block = 0
    private var fill = 0
    private var filled = 0

    mutating func push(_ level: UInt8) {
        let l = min(level, 127)
        blockMax[block] = fill == 0 ? l : max(blockMax[block], l)
        fill += 1
        guard fill == Self.blockLength else { return }
        fill = 0
        block = (block + 1) % Self.blocks
        filled = min(filled + 1, Self.blocks)
    }

    /// The quietest level of the last 5 s (the block being filled included); nil until a block is complete.
    var level: UInt8? {
        guard filled > 0 else { return nil }
        var floor = fill > 0 ? blockMax[block] : 0
        for i in 0..<filled { floor = max(floor, blockMax[(block - 1 - i + Self.blocks) % Self.blocks]) }
        return floor
    }
}
