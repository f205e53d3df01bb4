import SFU

/// What one subscriber received, packet by packet, read from the stamps the publishers put in each payload
/// (`BenchStamp`: publisher and the 20 ms frame the packet was sent in) and the slot each arrived on: which
/// speech frames reached it, and when each slot changed source. Nothing here reads the model's intentions or
/// the room's events; `ListenerMetrics` compares the tally with the script afterwards.
public struct ListenerTally {
    /// Frames received from each publisher, one bit per frame.
    var heard: [[UInt64]]
    let audioSlotSSRCs: [UInt32]
    let videoSlotSSRCs: [UInt32]
    var audioSource: [Int?]
    var videoSource: [Int?]
    /// Each time an audio slot took a publisher: the frame, the slot, the publisher, and whether it replaced
    /// another (a switch) or filled an empty slot.
    public private(set) var audioTakes: [(frame: Int, slot: Int, publisher: Int, replaced: Bool)] = []
    public private(set) var videoSwitches = 0
    /// On-the-wire bytes and packets (IP, UDP and SRTP overhead added, the measurement stamps taken out).
    public private(set) var wireBytes = 0
    public private(set) var packets = 0
    public private(set) var unstamped = 0

    /// IPv4 + UDP, and the SRTP tag of AEAD_AES_128_GCM (SRTCP adds its 4-byte index): what each packet
    /// costs on the wire beyond its plain bytes.
    static let ipUDP = 28, srtpTag = 16, srtcpIndex = 4
    /// The stamp and, for Opus, the two bytes that make a code-3 packet to carry it as padding.
    static let opusStampBytes = BenchStamp.size + 2, videoStampBytes = BenchStamp.size

    public init(publishers: Int, frames: Int, audioSlotSSRCs: [UInt32], videoSlotSSRCs: [UInt32]) {
        heard = Array(repeating: [UInt64](repeating: 0, count: (frames + 63) / 64), count: publishers)
        self.audioSlotSSRCs = audioSlotSSRCs
        self.videoSlotSSRCs = videoSlotSSRCs
        audioSource = Array(repeating: nil, count: audioSlotSSRCs.count)
        videoSource = Array(repeating: nil, count: videoSlotSSRCs.count)
    }

    /// Counts one plain packet the subscriber received.
    public mutating func receive(_ plain: [UInt8]) {
        packets += 1
        plain.withUnsafeBytes { p in
            if isRTCP(p) {
                wireBytes += p.count + Self.ipUDP + Self.srtpTag + Self.srtcpIndex
                return
            }
            guard case .success(let h) = RTPHeader.parse(p) else { return }
            let payload = UnsafeRawBufferPointer(rebasing: p[h.payloadRange])
            guard let stamp = BenchStamp.read(payload) else {
                unstamped += 1
                wireBytes += p.count + Self.ipUDP + Self.srtpTag
                return
            }
            let publisher = Int(stamp.publisher), frame = Int(stamp.sentAt)
            if let slot = audioSlotSSRCs.firstIndex(of: h.ssrc) {
                wireBytes += p.count - Self.opusStampBytes + Self.ipUDP + Self.srtpTag
                if publisher < heard.count, frame / 64 < heard[publisher].count {
                    heard[publisher][frame / 64] |= 1 << UInt64(frame % 64)
                }
                if audioSource[slot] != publisher {
                    audioTakes.append((frame, slot, publisher, audioSource[slot] != nil))
                    audioSource[slot] = publisher
                }
            } else if let slot = videoSlotSSRCs.firstIndex(of: h.ssrc) {
                wireBytes += p.count - Self.videoStampBytes + Self.ipUDP + Self.srtpTag
                if videoSource[slot] != publisher {
                    if videoSource[slot] != nil { videoSwitches += 1 }
                    videoSource[slot] = publisher
                }
            } else {
                wireBytes += p.count + Self.ipUDP + Self.srtpTag
            }
        }
    }

    public func heard(_ publisher: Int, frame: Int) -> Bool {
        heard[publisher][frame / 64] & (1 << UInt64(frame % 64)) != 0
    }
}
