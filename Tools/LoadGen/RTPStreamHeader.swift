import SFU

/// RTP headers of one stream: sequence numbers per packet, timestamps per frame.
struct RTPStreamHeader {
    private(set) var ssrc: UInt32
    var payloadType: UInt8
    /// The audio level extension's id; none written when nil.
    var levelID: UInt8?
    var sequenceNumber = UInt16.random(in: 0...UInt16.max)
    var timestamp = UInt32.random(in: 0...UInt32.max)
    /// Extensions the next `taggedLeft` packets carry (a new stream's MID and RID).
    private var tags: [(id: UInt8, value: [UInt8])] = []
    private var taggedLeft = 0

    init(ssrc: UInt32, payloadType: UInt8, levelExtension: Bool) {
        self.init(ssrc: ssrc, payloadType: payloadType, levelID: levelExtension ? 1 : nil)
    }

    init(ssrc: UInt32, payloadType: UInt8, levelID: UInt8?) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.levelID = levelID
    }

    /// The next `packets` packets carry `extensions`.
    mutating func tag(_ extensions: [(id: UInt8, value: [UInt8])], packets: Int) {
        tags = extensions
        taggedLeft = packets
    }

    /// The stream goes on under another SSRC, in a sequence space of its own.
    mutating func move(to ssrc: UInt32) {
        self.ssrc = ssrc
        sequenceNumber = .random(in: 0...UInt16.max)
    }

    mutating func write(payload: [UInt8], level: UInt8?, marker: Bool, into out: UnsafeMutableRawBufferPointer) -> Int {
        var extensions: [(id: UInt8, value: [UInt8])] = []
        if let levelID, let level { extensions.append((levelID, [AudioLevelExtension(voiceActivity: level < 127, level: level).byte])) }
        if taggedLeft > 0 {
            extensions += tags
            taggedLeft -= 1
        }
        let n = payload.withUnsafeBytes { p in
            RTPPacketBuilder(payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc, marker: marker)
                .write(extensions: extensions, payload: p, into: out)
        }
        sequenceNumber &+= 1
        return n ?? 0
    }

    mutating func advance(samples: UInt32) { timestamp &+= samples }
}
