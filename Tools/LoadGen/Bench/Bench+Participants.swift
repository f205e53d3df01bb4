import NodeIO
import SFU
import SFUMedia
import WebRTCEdge

/// The bench's simulated participants: who they are, what a publisher sends each frame (its turn's speech, its
/// script, its simulcast layers) and what a subscriber counts of what it receives.
extension Bench {
    /// A simulated participant and what the run needs to know about it.
    final class Member {
        let room: Int
        let index: Int
        let id: String
        let client: LoadClient
        var joinStartedAt: MonoTime?
        var joinedAfter: Double?
        var packetizer = VP8Packetizer(pictureID: UInt16.random(in: 0...0x7FFF))
        var videoFrame = 0
        /// Simulcast layers above the lowest: each its own picture ids and place in its frames.
        var layerPacketizers = (1..<3).map { _ in VP8Packetizer(pictureID: UInt16.random(in: 0...0x7FFF)) }
        var layerFrames = [0, 0]
        /// When this publisher sends its next audio and video frame: publishers are spread over the frame
        /// interval, as independent clients are, instead of all sending at the same instant.
        var nextAudio = MonoTime.zero
        var nextVideo = MonoTime.zero
        let receiver: ReceiverStats?
        /// In a conversation: what this participant's microphone says, and when its frame 0 is sent (the
        /// first send of the measured window; nil before it, while it sends its room noise).
        var voice: ScriptedVoice?
        var scriptStart: MonoTime?
        var audioSent = 0
        /// A subscriber over TCP that stops reading when the measurement starts (`stalled_tcp_readers`).
        var stalls = false

        init(room: Int, index: Int, id: String, client: LoadClient, receiver: ReceiverStats?) {
            self.room = room
            self.index = index
            self.id = id
            self.client = client
            self.receiver = receiver
        }
    }

    /// A subscriber's reception: per slot stream, packets received and the highest sequence number; latency
    /// samples from decrypted packets.
    final class ReceiverStats {
        struct Stream { var first: Int64; var highest: Int64; var received: Int64 }
        var streams: [UInt32: Stream] = [:]
        var bytes: Int64 = 0
        var latencies: [Double] = []
        var videoSeen = 0
        /// Packets on the video slots' RTX streams: with no NACKs from the bench, the node's probe padding.
        var rtxPackets: Int64 = 0
        var rtxBytes: Int64 = 0
        var measuring = false
        let sampleEvery: Int
        /// In a conversation: what reached this subscriber of the script (every packet is decrypted for it).
        var tally: ListenerTally?
        init(sampleEvery: Int) { self.sampleEvery = sampleEvery }

        func reset() {
            streams.removeAll()
            latencies.removeAll()
            bytes = 0
            rtxPackets = 0
            rtxBytes = 0
            measuring = true
        }

        func packet(_ buffer: UnsafeMutableRawBufferPointer, _ length: Int, now: MonoTime, client: LoadClient) {
            guard measuring, length >= 12 else { return }
            let seq = Int64(buffer[2]) << 8 | Int64(buffer[3])
            let ssrc = UInt32(buffer[8]) << 24 | UInt32(buffer[9]) << 16 | UInt32(buffer[10]) << 8 | UInt32(buffer[11])
            let pt = buffer[1] & 0x7F
            if pt == client.rtxPayloadType {
                rtxPackets += 1
                rtxBytes += Int64(length)
                return
            }
            let video = pt == client.videoPayloadType
            bytes += Int64(length)
            if var s = streams[ssrc] {
                // Extend the 16-bit number around the highest seen (RFC 3550 appendix A.1).
                var ext = (s.highest & ~0xFFFF) | seq
                if ext < s.highest - 0x8000 { ext += 0x10000 } else if ext > s.highest + 0x8000 { ext -= 0x10000 }
                s.highest = max(s.highest, ext)
                s.first = min(s.first, ext)
                s.received += 1
                streams[ssrc] = s
            } else {
                streams[ssrc] = Stream(first: seq, highest: seq, received: 1)
            }
            var sampled = true
            if video {
                videoSeen += 1
                sampled = videoSeen % sampleEvery == 0
            }
            guard sampled || tally != nil, let n = client.decrypt(buffer, length: length) else { return }
            let plain = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            tally?.receive(plain)
            guard sampled, case .success(let h) = RTPHeader.parse(plain),
                  let stamp = BenchStamp.read(UnsafeRawBufferPointer(rebasing: buffer[h.payloadRange])) else { return }
            latencies.append(Double(UInt64(now.nanoseconds) &- stamp.sentAt) / 1e6)
        }

        var expected: Int64 { streams.values.reduce(0) { $0 + $1.highest - $1.first + 1 } }
        var received: Int64 { streams.values.reduce(0) { $0 + $1.received } }
    }

    /// A subscribe-only participant with the plan's slots, counting what it receives.
    func newSubscriber(room: Int, index: Int, stalls: Bool = false) throws -> Member {
        var profile = LoadClient.Profile.subscriber(audio: plan.maxActiveTalkers, video: plan.video ? plan.maxActiveTalkers : 0, transportCC: plan.transportCC)
        profile.overTCP = plan.overTCP || stalls
        let c = try LoadClient(certificate: certificate, profile: profile)
        let stats = ReceiverStats(sampleEvery: plan.sampleEvery)
        c.onMedia = { [unowned c] buffer, length, now in stats.packet(buffer, length, now: now, client: c) }
        let m = Member(room: room, index: index, id: stalls ? "stall\(index)" : "sub\(index)", client: c, receiver: stalls ? nil : stats)
        m.stalls = stalls
        return m
    }

    /// The script's frame a conversation publisher sends at `now` (-1 before the meeting starts, while everyone
    /// joins); nil for a publisher taking turns, whose stamps carry no frame.
    func scriptFrame(_ m: Member, at now: MonoTime) -> Int? {
        guard m.voice != nil else { return nil }
        guard let start = m.scriptStart, now >= start else { return -1 }
        return Int((now - start).nanoseconds / 20_000_000)
    }

    /// A conversation publisher's audio frame due at `due`: its script's frame once the meeting started, its
    /// room noise before (stamped with frame -1, outside every script, so listeners only learn the slot's
    /// source from it).
    func sendScriptedAudio(_ m: Member, due: MonoTime) {
        let frame: Int
        let sound: (payload: [UInt8], level: UInt8)
        if let start = m.scriptStart, due >= start {
            frame = Int((due - start).nanoseconds / 20_000_000)
            sound = m.voice!.audio(at: frame)
        } else {
            frame = -1
            sound = m.voice!.noise(at: m.audioSent)
        }
        m.audioSent += 1
        m.client.sendAudio(BenchStamp.opus(sound.payload, sentAt: UInt64(MonoClock.now().nanoseconds), publisher: UInt16(m.index), frame: frame),
                           level: sound.level)
    }

    /// One frame on each of a simulcast publisher's layers (lowest first), each layer restarting at its key
    /// frame when the node asked for one on that layer's SSRC.
    func sendSimulcastFrames(_ m: Member, sentAt: UInt64, frame stampFrame: Int?) {
        let asked = m.client.keyframeRequestedSSRCs
        m.client.keyframeRequestedSSRCs.removeAll()
        m.client.keyframeRequested = false
        for (layer, frames) in media.layers.enumerated() {
            var at = layer == 0 ? m.videoFrame : m.layerFrames[layer - 1]
            if asked.contains(m.client.videoSSRC(layer: layer)) { at = 0 }
            let frame = frames[at % frames.count]
            at += 1
            if at % frames.count == 0 { at = 1 }  // loop past the keyframe
            let packets = layer == 0 ? m.packetizer.packetize(frame) : m.layerPacketizers[layer - 1].packetize(frame)
            m.client.sendVideo(packets.map { BenchStamp.vp8($0, sentAt: sentAt, publisher: UInt16(m.index), frame: stampFrame) },
                               samples: UInt32(90_000 / plan.fps), layer: layer)
            if layer == 0 { m.videoFrame = at } else { m.layerFrames[layer - 1] = at }
        }
    }
}
