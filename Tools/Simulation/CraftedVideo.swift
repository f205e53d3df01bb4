import SFU
import SFUMedia

/// Video for codecs the harness has no encoder for, built by hand from the payload formats' figures: H.264 in
/// packetization-mode 1 (RFC 6184: a key frame is a STAP-A of SPS and PPS then FU-A fragments of an IDR slice,
/// other frames FU-A fragments of a non-IDR slice) and VP9 (RFC 9628: non-flexible mode, one spatial and one
/// temporal layer, a 15-bit picture ID, TL0PICIDX, and the scalability structure on key frames). The bytes after
/// the headers are not a decodable picture: the node never decodes video, it reads only these headers.
///
/// A sender answers the node's PLIs with a key frame, as a browser does.
public final class CraftedVideoSender {
    public let codec: Codec
    public var writer: RTPStreamWriter
    private let client: SimulatedClient
    public private(set) var pictureID: UInt16
    public private(set) var tl0PicIdx: UInt8
    public var packetsPerFrame = 3
    /// VP9 scalability: temporal layers in the L1T3 pattern (TID 0 2 1 2, a switching-up point on every
    /// upper-layer picture) when 3, (0 1) when 2; spatial layers, each its own layer frame in every picture.
    public var temporalLayers = 1
    public var spatialLayers = 1
    /// Bytes after the descriptor in each packet.
    public var packetBytes = 40
    /// False to stop sending (a camera turned off).
    public var sending = true
    public private(set) var keyframesSent = 0
    public private(set) var plisReceived = 0
    private var seenRTCP = 0
    private var keyframePending = true
    private var frames = 0

    public init(_ member: RoomHarness.Member, codec: Codec, payloadType: UInt8, pictureID: UInt16 = 0, tl0PicIdx: UInt8 = 0) {
        self.codec = codec
        self.client = member.publish
        writer = RTPStreamWriter(ssrc: member.video.ssrc, payloadType: payloadType, timestamp: 90_000 &* UInt32(pictureID % 7 + 1))
        self.pictureID = pictureID & 0x7FFF
        self.tl0PicIdx = tl0PicIdx
    }

    /// Sends the next frame (25 a second when called every 40 ms): a key frame first and after each PLI.
    public func sendFrame(_ h: RoomHarness) {
        readFeedback(h)
        guard sending else { return }
        let keyframe = keyframePending
        keyframePending = false
        if keyframe { keyframesSent += 1 }
        let payloads: [[UInt8]]
        switch codec {
        case .h264: payloads = Self.h264Frame(keyframe: keyframe, index: frames, packets: packetsPerFrame)
        case .vp9:
            let tid: UInt8 = temporalLayers >= 3 ? [0, 2, 1, 2][frames % 4] : temporalLayers == 2 ? UInt8(frames % 2) : 0
            if tid == 0, frames > 0 { tl0PicIdx &+= 1 }  // TL0PICIDX counts base-layer pictures
            payloads = (0..<spatialLayers).flatMap { sid in
                Self.vp9Frame(keyframe: keyframe, pictureID: pictureID, tl0PicIdx: tl0PicIdx, packets: packetsPerFrame,
                              temporal: tid, spatial: UInt8(sid), spatialLayers: spatialLayers, bytes: packetBytes)
            }
        default: preconditionFailure("crafted video is H.264 or VP9; VP8 has a real encoder (SimulatedParticipant)")
        }
        for (i, p) in payloads.enumerated() {
            h.send(writer.packet(p, marker: i == payloads.count - 1), from: client)
        }
        writer.timestamp &+= 3600
        pictureID = (pictureID &+ 1) & 0x7FFF
        if codec != .vp9 { tl0PicIdx &+= 1 }
        frames += 1
    }

    /// RFC 6184 payloads of one frame: a key frame's STAP-A (section 5.7.1) with SPS (Baseline, level 3.1) and
    /// PPS, then `packets` FU-A fragments (section 5.8) of an IDR slice (type 5); otherwise `packets`
    /// fragments of a non-IDR slice (type 1).
    public static func h264Frame(keyframe: Bool, index: Int, packets: Int) -> [[UInt8]] {
        var out: [[UInt8]] = []
        if keyframe {
            let sps: [UInt8] = [0x67, 0x42, 0x00, 0x1F, 0xE9, 0x02, 0x80, 0xF6]
            let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
            out.append([0x78] + [0x00, UInt8(sps.count)] + sps + [0x00, UInt8(pps.count)] + pps)
        }
        let type: UInt8 = keyframe ? 5 : 1
        let indicator: UInt8 = (keyframe ? 0x60 : 0x40) | 28  // NRI 3 for IDR, 2 otherwise; FU-A
        for i in 0..<packets {
            var fu = type
            if i == 0 { fu |= 0x80 }  // S
            if i == packets - 1 { fu |= 0x40 }  // E
            out.append([indicator, fu] + (0..<40).map { UInt8(truncatingIfNeeded: index &+ $0 &+ i) })
        }
        return out
    }

    /// RFC 9628 payloads of one layer frame of a picture in `packets` packets: I (15-bit picture ID), L
    /// (`temporal`, U when above 0, `spatial`, D when above 0) and TL0PICIDX; P on all but key frames; B on the
    /// first packet, E on the last; on the base layer's first packet of a key frame V and a scalability
    /// structure of `spatialLayers` layers from 640x480 up, doubling (section 4.2.1).
    public static func vp9Frame(keyframe: Bool, pictureID: UInt16, tl0PicIdx: UInt8, packets: Int, temporal: UInt8 = 0,
                                spatial: UInt8 = 0, spatialLayers: Int = 1, bytes: Int = 40) -> [[UInt8]] {
        (0..<packets).map { i in
            var b0: UInt8 = 0x80 | 0x20  // I, L
            if !keyframe { b0 |= 0x40 }  // P
            if i == 0 { b0 |= 0x08 }  // B
            if i == packets - 1 { b0 |= 0x04 }  // E
            let ss = keyframe && i == 0 && spatial == 0
            if ss { b0 |= 0x02 }  // V
            let layers = temporal << 5 | (temporal > 0 ? 0x10 : 0) | spatial << 1 | (spatial > 0 ? 1 : 0)
            var p: [UInt8] = [b0, 0x80 | UInt8(pictureID >> 8), UInt8(pictureID & 0xFF), layers, tl0PicIdx]
            if ss {
                p.append(UInt8(spatialLayers - 1) << 5 | 0x10)  // N_S, Y
                for l in 0..<spatialLayers { p += [UInt8((640 << l) >> 8), UInt8((640 << l) & 0xFF), UInt8((480 << l) >> 8), UInt8((480 << l) & 0xFF)] }
            }
            return p + (0..<bytes).map { UInt8(truncatingIfNeeded: Int(pictureID) &+ $0) }
        }
    }

    private func readFeedback(_ h: RoomHarness) {
        let rtcp = h.rtcp(to: client.connection)
        if rtcp.count < seenRTCP { seenRTCP = 0 }  // the harness's received packets were cleared
        guard rtcp.count > seenRTCP else { return }
        for p in rtcp[seenRTCP...] {
            var pkts: [RTCPPacket] = []
            _ = p.withUnsafeBytes { RTCPCompound.forEach($0) { pkts.append($0) } }
            for pkt in pkts where pkt.packetType == RTCPPacketType.payloadFeedback.rawValue && pkt.countOrFormat == FeedbackFormat.pli {
                plisReceived += 1
                keyframePending = true
            }
        }
        seenRTCP = rtcp.count
    }
}

extension RoomHarness {
    /// Admits a participant that publishes Opus and video in `video` (nil: none), and subscribes to
    /// `audioSlots` audio slots and `videoSlots` video slots that take `slotFormats` (slot SSRCs as `join`
    /// makes them). Payload types are the caller's; RTX in a format gets the track's RTX SSRC.
    public func join(_ id: String, video: PayloadFormat?, h264: H264ProfileLevelID? = nil, audioSlots: Int = 1, videoSlots: Int = 0,
                     slotFormats: [PayloadFormat] = [PayloadFormat(codec: .vp8, payloadType: 98)], options: FeedbackOptions = .init()) throws -> Member {
        // Joined with as many slots as it will have: a subscription's first video count comes from its first
        // slots (one video at most until an estimate), and the harness sends no estimate.
        var m = try join(id, audioSlots: audioSlots, videoSlots: videoSlots, options: options)
        let base = m.audio.ssrc - 1
        var tracks = [TrackDescription(codec: .opus, ssrc: base + 1, payloadType: 111, audioLevelExtensionID: 1)]
        if let video {
            var t = TrackDescription(codec: video.codec, ssrc: base + 2, rtxSSRC: video.rtxPayloadType.map { _ in base + 3 },
                                   payloadType: video.payloadType, rtxPayloadType: video.rtxPayloadType, nack: true)
            t.h264 = h264 ?? video.h264
            tracks.append(t)
        }
        try room.sessions.attachPublisher(id, connection: m.publish.connection, tracks: tracks, now: now)
        var slots: [SlotDescription] = []
        for i in 0..<audioSlots {
            slots.append(SlotDescription(codec: .opus, mid: "a\(i)", ssrc: base + 0x100 + UInt32(i), payloadType: 109, audioLevelExtensionID: 3))
        }
        for i in 0..<videoSlots {
            var d = SlotDescription(codec: .vp8, mid: "v\(i)", ssrc: base + 0x200 + UInt32(i), payloadType: 0,
                                    rtxSSRC: slotFormats.contains { $0.rtxPayloadType != nil } ? base + 0x300 + UInt32(i) : nil)
            d.formats = slotFormats
            slots.append(d)
        }
        try room.sessions.attachSubscriber(id, connection: m.subscribe.connection, slots: slots, now: now, into: batch)
        flush()
        m.video = RTPStreamWriter(ssrc: base + 2, payloadType: video?.payloadType ?? 96, timestamp: 90_000)
        return m
    }

    /// Runs `seconds` of 20 ms steps as `run` does, crafted video senders sending a frame every other step.
    public func run(_ people: [SimulatedParticipant], crafted: [CraftedVideoSender], from start: Double, seconds: Double) {
        let origin = scenarioOrigin
        let first = Int((start * 50).rounded())
        for k in first..<(first + Int((seconds * 50).rounded())) {
            advance(to: origin + .milliseconds(Int64(k) * 20))
            for p in people { p.step(self, t: Double(k) / 50, stepIndex: k) }
            if k % 2 == 0 { for c in crafted { c.sendFrame(self) } }
        }
        advance(to: origin + .milliseconds(Int64(first + Int((seconds * 50).rounded())) * 20))
    }
}
