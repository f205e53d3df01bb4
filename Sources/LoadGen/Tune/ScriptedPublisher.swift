import SFU
import SFUTestSupport

/// A participant that says what the script says: every 20 ms the encoded frame of its current utterance (or of
/// its room noise), with the level extension computed from the same PCM, and VP8 at 25 frames a second that
/// starts again from a keyframe when the node asks for one. Every payload carries a `BenchStamp` (this
/// publisher, the frame it was sent in) so that listeners can tell exactly what reached them.
final class ScriptedPublisher {
    let index: Int
    var member: RoomHarness.Member
    let person: ConversationScript.Person
    let sound: ConversationMedia.Encoded
    let video: [VP8Frame]
    private var cursor = 0
    private var videoFrame = 0
    private var packetizer: VP8Packetizer
    private var keyframeWanted = true
    private(set) var keyframeRequests = 0

    init(index: Int, member: RoomHarness.Member, person: ConversationScript.Person, sound: ConversationMedia.Encoded, video: [VP8Frame]) {
        self.index = index
        self.member = member
        self.person = person
        self.sound = sound
        self.video = video
        packetizer = VP8Packetizer(pictureID: UInt16(truncatingIfNeeded: index &* 997), tl0PicIdx: UInt8(truncatingIfNeeded: index))
    }

    /// The frame to send at `f`, and its level.
    func audio(at f: Int) -> (payload: [UInt8], level: UInt8) {
        let u = person.utterances
        while cursor < u.count, u[cursor].end <= f { cursor += 1 }
        if cursor < u.count, u[cursor].start <= f {
            let into = f - u[cursor].start
            switch u[cursor].kind {
            case .spurt(_, let offset):
                let i = (offset + into) % sound.speech.count
                return (sound.speech[i], sound.speechLevels[i])
            case .backchannel(let clip):
                let i = min(into, sound.clips[clip].count - 1)
                return (sound.clips[clip][i], sound.clipLevels[clip][i])
            }
        }
        let i = f % sound.noise.count
        return (sound.noise[i], sound.noiseLevels[i])
    }

    /// Sends frame `f`'s audio, and a video frame on even frames.
    func step(_ h: RoomHarness, frame f: Int) {
        if person.publishesAudio {
            let (payload, level) = audio(at: f)
            let stamped = BenchStamp.opus(payload, sentAt: UInt64(f), publisher: UInt16(index))
            let packet = member.audio.packet(stamped, level: level)
            member.audio.timestamp &+= 960
            h.send(packet, from: member.publish)
        }
        guard !video.isEmpty, f % 2 == 0 else { return }
        if keyframeWanted { videoFrame = 0 }
        keyframeWanted = false
        let frame = video[videoFrame]
        videoFrame = videoFrame + 1 < video.count ? videoFrame + 1 : 1  // loop past the keyframe
        let payloads = packetizer.packetize(frame)
        for (i, p) in payloads.enumerated() {
            let packet = member.video.packet(BenchStamp.vp8(p, sentAt: UInt64(f), publisher: UInt16(index)), marker: i == payloads.count - 1)
            h.send(packet, from: member.publish)
        }
        member.video.timestamp &+= 3600
    }

    /// Reads RTCP the node sent this publisher: a PLI or FIR asks for a keyframe.
    func receiveRTCP(_ plain: [UInt8]) {
        plain.withUnsafeBytes { p in
            _ = RTCPCompound.forEach(p) { pkt in
                if pkt.packetType == RTCPPacketType.payloadFeedback.rawValue,
                   pkt.countOrFormat == FeedbackFormat.pli || pkt.countOrFormat == FeedbackFormat.fir {
                    keyframeWanted = true
                    keyframeRequests += 1
                }
            }
        }
    }
}
