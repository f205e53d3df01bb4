import SFU
import SFUMedia
import SFUSimulation

/// A participant that says what the script says: every 20 ms the encoded frame of its current utterance (or of
/// its room noise), with the level extension computed from the same PCM, and VP8 at 25 frames a second that
/// starts again from a keyframe when the node asks for one. Every payload carries a `BenchStamp` (this
/// publisher, the frame it was sent in) so that listeners can tell exactly what reached them.
final class ScriptedPublisher {
    let index: Int
    var member: RoomHarness.Member
    let person: ConversationScript.Person
    private var voice: ScriptedVoice
    let video: [VP8Frame]
    private var videoFrame = 0
    private var packetizer: VP8Packetizer
    private var keyframeWanted = true
    private(set) var keyframeRequests = 0

    init(index: Int, member: RoomHarness.Member, person: ConversationScript.Person, sound: ConversationMedia.Encoded, video: [VP8Frame]) {
        self.index = index
        self.member = member
        self.person = person
        voice = ScriptedVoice(person: person, sound: sound)
        self.video = video
        packetizer = VP8Packetizer(pictureID: UInt16(truncatingIfNeeded: index &* 997), tl0PicIdx: UInt8(truncatingIfNeeded: index))
    }

    /// Sends frame `f`'s audio, and a video frame on even frames.
    func step(_ h: RoomHarness, frame f: Int) {
        if person.publishesAudio {
            let (payload, level) = voice.audio(at: f)
            let stamped = BenchStamp.opus(payload, sentAt: Self.sentAt(f), publisher: UInt16(index), frame: f)
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
            let packet = member.video.packet(BenchStamp.vp8(p, sentAt: Self.sentAt(f), publisher: UInt16(index), frame: f), marker: i == payloads.count - 1)
            h.send(packet, from: member.publish)
        }
        member.video.timestamp &+= 3600
    }

    /// Virtual send time of frame `f`, ns from the meeting's start.
    static func sentAt(_ f: Int) -> UInt64 { UInt64(f) * 20_000_000 }

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
