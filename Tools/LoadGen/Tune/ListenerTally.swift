import SFU

/// What one subscriber received, packet by packet, read from the stamps the publishers put in each payload
/// (`BenchStamp`: publisher and the 20 ms frame of the script the packet belongs to) and the slot each arrived
/// on: which speech frames reached it, and when each slot changed source. Nothing here reads the model's
/// intentions or the room's events; `ListenerMetrics` compares the tally with the script afterwards. The same
/// tally counts for `sfu tune` (virtual time) and for `sfu bench` subscribers over UDP, so the two report
/// the same metrics from the same code.
public struct ListenerTally {
    /// Frames received from each publisher, one bit per frame.
    var heard: [[UInt64]]
    let frames: Int
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

    /// IPv4 + UDP, and the SRTP tag of AEAD_AES_128_GCM (SRTCP adds its 4-byte index): what each packet
    /// costs on the wire beyond its plain bytes.
    static let ipUDP = 28, srtpTag = 16, srtcpIndex = 4
    /// For Opus, the two bytes that make a code-3 packet to carry the stamp as padding.
    static let opusPaddingBytes = 2

    public init(publishers: Int, frames: Int, audioSlotSSRCs: [UInt32], videoSlotSSRCs: [UInt32]) {
        heard = Array(repeating: [UInt64](repeating: 0, count: (frames + 63) / 64), count: publishers)
        self.frames = frames
        self.audioSlotSSRCs = audioSlotSSRCs
        self.videoSlotSSRCs = videoSlotSSRCs
        audioSource = Array(repeating: nil, count: audioSlotSSRCs.count)
        videoSource = Array(repeating: nil, count: videoSlotSSRCs.count)
    }

    /// Counts one plain packet the subscriber received.
    public mutating func receive(_ plain: [UInt8]) {
        plain.withUnsafeBytes { receive($0) }
    }

    /// Counts one plain (decrypted) packet. A packet stamped with a frame outside the script (sent before
    /// the meeting began, while everyone joined) says which source its slot carries and nothing more.
    public mutating func receive(_ p: UnsafeRawBufferPointer) {
        packets += 1
        if isRTCP(p) {
            wireBytes += p.count + Self.ipUDP + Self.srtpTag + Self.srtcpIndex
            return
        }
        guard case .success(let h) = RTPHeader.parse(p) else { return }
        let payload = UnsafeRawBufferPointer(rebasing: p[h.payloadRange])
        guard let stamp = BenchStamp.read(payload), let frame = stamp.frame else {
            wireBytes += p.count + Self.ipUDP + Self.srtpTag
            return
        }
        let publisher = Int(stamp.publisher)
        let inScript = publisher < heard.count && frame < frames
        if let slot = audioSlotSSRCs.firstIndex(of: h.ssrc) {
            wireBytes += p.count - stamp.size - Self.opusPaddingBytes + Self.ipUDP + Self.srtpTag
            if inScript { heard[publisher][frame / 64] |= 1 << UInt64(frame % 64) }
            if audioSource[slot] != publisher {
                if inScript { audioTakes.append((frame, slot, publisher, audioSource[slot] != nil)) }
                audioSource[slot] = publisher
            }
        } else if let slot = videoSlotSSRCs.firstIndex(of: h.ssrc) {
            wireBytes += p.count - stamp.size + Self.ipUDP + Self.srtpTag
            if videoSource[slot] != publisher {
                if videoSource[slot] != nil, inScript { videoSwitches += 1 }
                videoSource[slot] = publisher
            }
        } else {
            wireBytes += p.count + Self.ipUDP + Self.srtpTag
        }
    }

    public func heard(_ publisher: Int, frame: Int) -> Bool {
        heard[publisher][frame / 64] & (1 << UInt64(frame % 64)) != 0
    }
}
