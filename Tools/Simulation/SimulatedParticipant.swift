import SFU
import SFUMedia

/// A participant that behaves like a client on the wire: 20 ms Opus frames of whatever its script says
/// (with the audio level extension computed from the frame, as browsers do), VP8 at 25 fps that answers
/// the node's PLIs with a keyframe, all protected with SRTP.
public final class SimulatedParticipant {
    public var member: RoomHarness.Member
    public var id: String { member.id }
    /// What the microphone picks up at time t (seconds): 960 samples, or nil to send nothing.
    public var audioScript: (Double) -> ArraySlice<Int16>?
    public var sendsVideo: Bool
    public var sendsLevelExtension: Bool
    /// Claimed level override (a client lying in the extension).
    public var claimedLevel: UInt8?
    /// Video of this bitrate made of stand-in frames (a VP8 frame tag, then random bytes) instead of libvpx
    /// output: what bandwidth scenarios need is realistic sizes and rates, not pictures.
    public var videoKbps: Int?
    /// Sends its screen share (the member must have joined with `publishScreen`): stand-in VP8 frames of
    /// `screenKbps` at 5 fps, a keyframe when the node asks for one on the screen's SSRC.
    public var sendsScreen = false
    public var screenKbps = 300
    private var screenPackets = VP8Packetizer(pictureID: 7000, tl0PicIdx: 70)
    private var screenKeyframePending = true
    public private(set) var screenKeyframesSent = 0
    /// Sent Opus frames wrapped in RED (RFC 2198) with the previous frame as redundancy, when the member's
    /// options negotiated RED.
    private var previousOpus: [UInt8]?
    private var rng = SplitMix64(seed: 77)
    private let opus = OpusFrameEncoder()
    private let vp8: VP8FrameEncoder?
    private var packetizer: VP8Packetizer
    private var seenRTCP = 0
    public private(set) var keyframesSent = 0
    public private(set) var plisReceived = 0
    public private(set) var nacksReceived = 0

    public init(_ member: RoomHarness.Member, video: Bool = false, levelExtension: Bool = true, seed: UInt8 = 0,
                audio: @escaping (Double) -> ArraySlice<Int16>? = { _ in nil }) {
        self.member = member
        self.audioScript = audio
        self.sendsVideo = video
        self.sendsLevelExtension = levelExtension
        self.vp8 = video ? VP8FrameEncoder(seed: seed) : nil
        self.packetizer = VP8Packetizer(pictureID: UInt16(seed) &* 1000, tl0PicIdx: seed &* 10)
    }

    /// Sends this 20 ms step's audio (and video every other step, the screen share every tenth) into the harness.
    public func step(_ h: RoomHarness, t: Double, stepIndex: Int) {
        if sendsScreen, stepIndex % 10 == 0 { sendScreenFrame(h) }
        if let pcm = audioScript(t) {
            let payload = opus.encode(pcm)
            h.payloadSenders[payload, default: []].insert(id)
            let level = claimedLevel ?? pcm.withUnsafeBufferPointer { LevelMath.level(of: $0) }
            var body = payload
            if member.options.red {
                // One redundant block (the previous frame, 960 samples earlier), then the primary (RFC 2198).
                let previous = previousOpus ?? []
                body = [0x80 | 111, UInt8(960 >> 6), UInt8((960 & 0x3F) << 2) | UInt8(previous.count >> 8), UInt8(previous.count & 0xFF), 111]
                    + previous + payload
                previousOpus = payload
                member.audio.payloadType = 63
            }
            let packet = member.audio.packet(body, level: sendsLevelExtension ? level : nil,
                                             transportSequence: member.nextTransportSequence())
            member.audio.timestamp &+= 960
            h.send(packet, from: member.publish)
        } else {
            member.audio.timestamp &+= 960  // RTP time runs on while the mic is off
        }
        guard sendsVideo, let vp8, stepIndex % 2 == 0 else { return }
        readFeedback(h)
        let keyframe = keyframesSent == 0 || plisPending
        var frame: VP8Frame
        if let kbps = videoKbps {
            // 25 frames a second (every other 20 ms step): kbps * 1000 / 8 / 25 bytes, keyframes 3x.
            let size = max(10, kbps * 5 * (keyframe ? 3 : 1))
            frame = VP8Frame(data: [keyframe ? 0x10 : 0x11] + (0..<(size - 1)).map { _ in UInt8(truncatingIfNeeded: rng.next()) },
                             isKeyframe: keyframe)
        } else {
            frame = vp8.next(keyframe: keyframe)
        }
        plisPending = false
        if frame.isKeyframe { keyframesSent += 1 }
        let payloads = packetizer.packetize(frame)
        for (i, p) in payloads.enumerated() {
            let packet = member.video.packet(p, marker: i == payloads.count - 1, transportSequence: member.nextTransportSequence())
            h.send(packet, from: member.publish)
        }
        member.video.timestamp &+= 3600
    }

    private var plisPending = false

    private func sendScreenFrame(_ h: RoomHarness) {
        readFeedback(h)
        let keyframe = screenKeyframePending
        screenKeyframePending = false
        if keyframe { screenKeyframesSent += 1 }
        // 5 frames a second: kbps * 1000 / 8 / 5 bytes, keyframes 3x.
        let size = max(10, screenKbps * 25 * (keyframe ? 3 : 1))
        let frame = VP8Frame(data: [keyframe ? 0x10 : 0x11] + (0..<(size - 1)).map { _ in UInt8(truncatingIfNeeded: rng.next()) },
                             isKeyframe: keyframe)
        let payloads = screenPackets.packetize(frame)
        for (i, p) in payloads.enumerated() {
            let packet = member.screen.packet(p, marker: i == payloads.count - 1, transportSequence: member.nextTransportSequence())
            h.send(packet, from: member.publish)
        }
        member.screen.timestamp &+= 18_000
    }

    /// Sends a keyframe with the next video frame, asked or not.
    public func sendKeyframe() { plisPending = true }

    private func readFeedback(_ h: RoomHarness) {
        let rtcp = h.rtcp(to: member.publish.connection)
        if rtcp.count < seenRTCP { seenRTCP = 0 }  // the harness cleared what it kept (`clearReceived`)
        guard rtcp.count > seenRTCP else { return }
        for p in rtcp[seenRTCP...] {
            var (pkts, _) = ([RTCPPacket](), DropReason?.none)
            _ = p.withUnsafeBytes { RTCPCompound.forEach($0) { pkts.append($0) } }
            for pkt in pkts {
                if pkt.packetType == RTCPPacketType.payloadFeedback.rawValue, pkt.countOrFormat == FeedbackFormat.pli {
                    // RFC 4585 section 6.1: the media source's SSRC follows the sender's.
                    let at = pkt.range.lowerBound + 8
                    let media = p.count >= at + 4 ? UInt32(p[at]) << 24 | UInt32(p[at + 1]) << 16 | UInt32(p[at + 2]) << 8 | UInt32(p[at + 3]) : 0
                    if media == member.screen.ssrc { screenKeyframePending = true } else {
                        plisReceived += 1
                        plisPending = true
                    }
                }
                if pkt.packetType == RTCPPacketType.transportFeedback.rawValue, pkt.countOrFormat == FeedbackFormat.nack {
                    nacksReceived += 1
                }
            }
        }
        seenRTCP = rtcp.count
    }
}

extension RoomHarness {
    /// Runs `seconds` of 20 ms steps from `start` (seconds since the scenario began).
    public func run(_ people: [SimulatedParticipant], from start: Double, seconds: Double, base: MonoTime? = nil) {
        let origin = base ?? scenarioOrigin
        let steps = Int((seconds * 50).rounded())
        let first = Int((start * 50).rounded())
        for k in first..<(first + steps) {
            let t = Double(k) / 50
            advance(to: origin + .milliseconds(Int64(k) * 20))
            for p in people { p.step(self, t: t, stepIndex: k) }
        }
        advance(to: origin + .milliseconds(Int64(first + steps) * 20))
    }

    /// The time the harness was created at: scenario time zero.
    public var scenarioOrigin: MonoTime { .milliseconds(1_000) }
}

/// Cuts a signal into 20 ms frames for a script: frame at time t, silence (low noise) outside `range`.
public struct SpeechScript {
    public let pcm: [Int16]
    public let noise: [Int16]

    public init(_ pcm: [Int16], noiseDbfs: Double = -65, seed: UInt64 = 3) {
        self.pcm = pcm
        self.noise = TestSignal.noise(dbfs: noiseDbfs, seconds: 1, seed: seed)
    }

    /// Speech looping from `start` while t is in `range`, over the room noise; room noise alone otherwise.
    public func frame(at t: Double, speaking range: Range<Double>, start: Double? = nil) -> ArraySlice<Int16> {
        let i = Int((t * 50).rounded())
        let n = i % (noise.count / 960)
        let room = noise[(n * 960)..<((n + 1) * 960)]
        guard range.contains(t), !pcm.isEmpty else { return room }
        let j = Int(((t - (start ?? range.lowerBound)) * 50).rounded())
        let frames = pcm.count / 960
        let k = ((j % frames) + frames) % frames
        return ArraySlice(zip(pcm[(k * 960)..<((k + 1) * 960)], room).map { Int16(clamping: Int($0) + Int($1)) })
    }
}
