import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// One fuzz entry point per parser, plus the state machines behind them. Each takes arbitrary bytes and
/// checks its promises: no crash, and on success every range a parser reports lies inside the input; the
/// stateful targets check theirs against a model (see `FuzzICE`, `FuzzEdge`, `FuzzSession`).
/// Used by the in-process mutation tests and by the libFuzzer build in `Fuzz/`.
///
/// - `h264`, `vp9`: a payload parser each, plus its own promise: the STAP-A walker reports the units `parse`
///   counted; a VP9 rewrite changes the picture ID and TL0PICIDX and nothing else;
/// - `stun`: raw STUN bytes (an input starting as STUN does), or a sequence of signed checks, restarts and
///   consent ticks against one ICE-lite agent (`FuzzICE`);
/// - `room`: RTP/RTCP through SRTP into a room with a publisher and a subscriber (`FuzzRoom`);
/// - `edge`: datagram sequences per connection into a `WorkerCore` with connected transports (`FuzzEdge`);
/// - `session`: publish / subscribe / re-offer / remove / re-admit / moderation sequences through a
///   `WorkerCore`'s session API with real SDP (`FuzzSession`).
public enum FuzzTarget: String, CaseIterable, Sendable {
    case rtp, rtcp, vp8, h264, vp9, opus, stun, sdp, room, edge, session

    public func run(_ data: UnsafeRawBufferPointer) {
        switch self {
        case .rtp: Self.rtp(data)
        case .rtcp: Self.rtcp(data)
        case .vp8: Self.vp8(data)
        case .h264: Self.h264(data)
        case .vp9: Self.vp9(data)
        case .opus: _ = OpusPacketInfo.parse(data)
        case .stun: Self.stun(data)
        case .sdp: Self.sdp(data)
        case .room: FuzzRoom.shared.feed(data)
        case .edge: FuzzEdge.shared.feed(data)
        case .session: FuzzSession.run(data)
        }
    }

    static func within(_ r: Range<Int>, _ n: Int) -> Bool { r.lowerBound >= 0 && r.upperBound <= n }

    static func rtp(_ p: UnsafeRawBufferPointer) {
        guard case .success(let h) = RTPHeader.parse(p) else { return }
        precondition(within(h.payloadRange, p.count) && within(h.extensionRange, p.count))
        for e in h.extensions(in: p) { precondition(within(e.range, p.count)) }
    }

    static func rtcp(_ p: UnsafeRawBufferPointer) {
        _ = RTCPCompound.forEach(p) { pkt in
            precondition(within(pkt.range, p.count))
            _ = SenderReport.parse(p, pkt)
            _ = ReceiverReport.parse(p, pkt)
            _ = SourceDescription.parse(p, pkt)
            _ = Goodbye.parse(p, pkt)
            _ = GenericNACK.forEachLost(p, pkt) { _ in }
            _ = FullIntraRequest.parse(p, pkt)
            _ = REMB.parse(p, pkt)
            _ = TransportCCFeedback.parse(p, pkt)
        }
    }

    /// An input whose first byte could start a STUN message (top two bits zero) is one raw message for the
    /// parser and an agent with the seed's credentials; any other is a program for `FuzzICE`.
    static func stun(_ p: UnsafeRawBufferPointer) {
        guard let first = p.first, first & 0xC0 == 0 else {
            FuzzICE.run(UnsafeRawBufferPointer(rebasing: p.dropFirst()))
            return
        }
        guard case .success(let m) = STUNMessage.parse(p) else { return }
        _ = m.verifyFingerprint(p)
        _ = m.verifyIntegrity(p, key: [1, 2, 3])
        _ = m.mappedAddress(in: p)
        _ = m.usernameString(in: p)
        let local = ICECredentials(ufrag: "evtj", password: "VOkJxbRl1RmTxUk/WvJxBt")
        let agent = ICELiteAgent(local: local)
        _ = agent.handle(m, p, from: TransportAddress(ip: .v4(0x7F00_0001), port: 9), now: .zero)
        if agent.selected != nil {
            promise(m.useCandidate && m.verifyFingerprint(p) && m.verifyIntegrity(p, key: Array(local.password.utf8)),
                    "raw bytes selected an address without a valid nomination")
        }
    }

    static let sdpLocal = LocalTransport(ice: ICECredentials(ufrag: "fuzz", password: "fuzzfuzzfuzzfuzzfuzzfuzz"),
                                         fingerprint: DTLSFingerprint(bytes: [UInt8](repeating: 1, count: 32)),
                                         candidates: [TransportAddress(ip: .v4(0x7F00_0001), port: 10000)])

    static func sdp(_ p: UnsafeRawBufferPointer) {
        let text = String(decoding: p, as: UTF8.self)
        if let d = try? SessionDescription.parse(text) { _ = try? SessionDescription.parse(d.text) }
        _ = try? OfferAnswer.answerPublish(text, local: sdpLocal)
        _ = try? OfferAnswer.answerSubscribe(text, local: sdpLocal) { _, _, i in UInt32(i + 1) }
    }

    static func vp8(_ p: UnsafeRawBufferPointer) {
        guard case .success(let d) = VP8Descriptor.parse(p) else { return }
        precondition(d.size <= p.count)
        var copy = Array(p)
        copy.withUnsafeMutableBytes { d.rewrite(pictureID: 1, tl0PicIdx: 2, keyIndex: 3, in: $0) }
    }

    /// The NAL units the walker reports lie inside the input and are the ones `parse` counted.
    static func h264(_ p: UnsafeRawBufferPointer) {
        guard case .success(let h) = H264Payload.parse(p) else { return }
        var units = 0
        var started: UInt32 = 0
        h.forEachNALUnit(in: p) { unit, r in
            precondition(within(r, p.count) && !r.isEmpty && p[r.lowerBound] == unit.byte)
            units += 1
            started |= 1 << UInt32(unit.type)
        }
        switch h.packet {
        case .single: promise(units == 1 && started == h.startedNALTypes, "a single NAL unit walked as \(units)")
        case .stapA(let n): promise(units == n && started == h.startedNALTypes, "STAP-A of \(n) units walked as \(units)")
        case .fuA(let s, let e):
            promise(units == 0 && !(s && e) && (s || h.startedNALTypes == 0), "FU-A misread: \(h) from \(Array(p))")
        }
    }

    /// Rewriting the picture ID and TL0PICIDX changes those two fields and nothing else of the descriptor.
    static func vp9(_ p: UnsafeRawBufferPointer) {
        guard case .success(let d) = VP9Descriptor.parse(p) else { return }
        precondition(d.size <= p.count)
        if let ss = d.scalability { precondition(ss.offset + ss.size <= d.size) }
        var copy = Array(p)
        copy.withUnsafeMutableBytes { d.rewrite(pictureID: 0x1ABC, tl0PicIdx: 0x5A, in: $0) }
        var expected = d
        if d.pictureID != nil { expected.pictureID = 0x1ABC % d.pictureIDModulus }
        if d.tl0PicIdx != nil { expected.tl0PicIdx = 0x5A }
        let again = copy.withUnsafeBytes { VP9Descriptor.parse($0) }
        promise(again == .success(expected), "rewrite changed more than the picture ID and TL0PICIDX: \(again)")
    }

    /// Seeds: valid inputs the mutators start from.
    public var seeds: [[UInt8]] {
        switch self {
        case .rtp: return [[0x90, 0x6F, 0x12, 0x34, 0, 0, 0x10, 0, 0xDE, 0xAD, 0xBE, 0xEF, 0xBE, 0xDE, 0, 2, 0x10, 0x9E, 0x22, 1, 2, 3, 0, 0, 0xAA]]
        case .rtcp: return [[0x81, 0xC9, 0, 7, 0, 0, 0, 1, 0, 0, 0, 2, 5, 0, 0, 1, 0, 0, 0x10, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0,
                             0x8F, 0xCE, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0, 0x52, 0x45, 0x4D, 0x42, 1, 0x13, 0xC8, 0xE8, 0x12, 0x34, 0x56, 0x78]]
        case .vp8: return [[0x90, 0xF0, 0x92, 0x34, 0x07, 0xB5, 0x10, 0x02, 0x00]]
        case .h264:
            return [[0x65, 0x88, 0x84, 0x00, 0x33],  // single NAL unit: IDR slice
                    [0x78, 0x00, 0x04, 0x67, 0x42, 0xC0, 0x1F, 0x00, 0x04, 0x68, 0xCE, 0x3C, 0x80,
                     0x00, 0x03, 0x65, 0x88, 0x84],  // STAP-A: SPS, PPS, IDR slice
                    [0x7C, 0x85, 0x88, 0x84, 0x00], [0x5C, 0x41, 0x9A, 0x02]]  // FU-A: IDR start, slice end
        case .vp9:
            return [[0xAA, 0x81, 0x23, 0x00, 0x07, 0x58, 0x01, 0x40, 0x00, 0xB4, 0x02, 0x80, 0x01, 0x68, 0x05, 0x00,
                     0x02, 0xD0, 0x02, 0x04, 0x01, 0x34, 0x01, 0x00],  // non-flexible key frame with SS (3 layers)
                    [0xFD, 0x05, 0x23, 0x03, 0x05, 0x08, 0x00]]  // flexible, three P_DIFFs
        case .stun:
            let c = ICEControllingClient(local: ICECredentials(ufrag: "h6vY", password: "x"),
                                         remote: ICECredentials(ufrag: "evtj", password: "VOkJxbRl1RmTxUk/WvJxBt"))
            return [c.bindingRequest(nominate: true, transactionID: Array(repeating: 7, count: 12))] + FuzzICE.seeds
        case .opus: return [[0x78, 0x80, 1, 2], [0xFB, 0x83, 1, 1, 0xAA, 0xBB, 0xCC], [0x7A, 0x01, 0x55, 0x66]]
        case .sdp:
            let offer = """
                v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n\
                a=fingerprint:sha-256 \((0..<32).map { _ in "AB" }.joined(separator: ":"))\r\n\
                a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwxyz\r\n\
                m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=sendonly\r\na=rtcp-mux\r\n\
                a=rtpmap:111 opus/48000/2\r\na=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\na=ssrc:1 cname:x\r\n\
                m=video 9 UDP/TLS/RTP/SAVPF 96 97\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=recvonly\r\na=rtcp-mux\r\n\
                a=rtpmap:96 VP8/90000\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\na=ssrc-group:FID 2 3\r\n\
                a=ssrc:2 cname:x\r\na=ssrc:3 cname:x\r\n
                """
            return [Array(offer.utf8)]
        case .room: return FuzzRoom.seeds
        case .edge: return FuzzEdge.seeds
        case .session: return FuzzSession.seeds
        }
    }
}

/// A room with one publisher and one subscriber, and an H.264 and a VP9 publisher whose video reaches the
/// subscriber's slot that takes all three codecs. Fuzz input is taken as a plain RTP/RTCP packet that one of
/// them protects (so it reaches the parsers behind SRTP), or as a raw datagram.
public final class FuzzRoom {
    nonisolated(unsafe) public static let shared = FuzzRoom()
    let harness: RoomHarness
    let publisher: RoomHarness.Member
    let subscriber: RoomHarness.Member
    let h264: RoomHarness.Member
    let vp9: RoomHarness.Member

    init() {
        harness = try! RoomHarness()
        harness.keepReceived = false
        publisher = try! harness.join("P", role: .moderator, publishVideo: true, audioSlots: 1, videoSlots: 1)
        let formats = [PayloadFormat(codec: .vp8, payloadType: 98, rtxPayloadType: 99),
                       PayloadFormat(codec: .h264, payloadType: 100, rtxPayloadType: 101, h264: .absent),
                       PayloadFormat(codec: .vp9, payloadType: 102)]
        subscriber = try! harness.join("S", video: nil, audioSlots: 1, videoSlots: 2, slotFormats: formats)
        h264 = try! harness.join("H", video: PayloadFormat(codec: .h264, payloadType: 96, rtxPayloadType: 97, h264: .absent))
        vp9 = try! harness.join("V", video: PayloadFormat(codec: .vp9, payloadType: 96, rtxPayloadType: 97))
    }

    /// First byte picks the route: 0-1 protected by the VP8 publisher, 2 by the subscriber, 3 raw, 4-5 by the
    /// H.264 publisher, 6-7 by the VP9 one.
    public func feed(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 1 else { return }
        let body = Array(data[1...].prefix(1400))
        switch data[0] & 7 {
        case 0, 1:
            guard body.count >= 4 else { return }
            harness.send(body, from: publisher.publish)
        case 2:
            guard body.count >= 4 else { return }
            harness.send(body, from: subscriber.subscribe)
        case 4, 5:
            guard body.count >= 4 else { return }
            harness.send(body, from: h264.publish)
        case 6, 7:
            guard body.count >= 4 else { return }
            harness.send(body, from: vp9.publish)
        default:
            harness.sendRaw(body, from: publisher.publish.connection)
        }
        harness.advance(by: 5)
        harness.clearEvents()
    }

    static var seeds: [[UInt8]] {
        var audio = RTPStreamWriter(ssrc: 0x5001, payloadType: 111, audioLevelExtensionID: 1)
        var video = RTPStreamWriter(ssrc: 0x5002, payloadType: 96)
        var h264 = RTPStreamWriter(ssrc: shared.h264.video.ssrc, payloadType: 96)
        var vp9 = RTPStreamWriter(ssrc: shared.vp9.video.ssrc, payloadType: 96)
        return [[0] + audio.packet([0x78, 0x80, 1, 2, 3], level: 30),
                [1] + video.packet([0x90, 0xC0, 0x80, 0x01, 0x00, 0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A], marker: true),
                [2, 0x81, 0xCE, 0, 2, 0, 0, 0, 1, 0, 0, 0x72, 0x00],
                [4] + h264.packet(CraftedVideoSender.h264Frame(keyframe: true, index: 0, packets: 1)[0]),
                [5] + h264.packet(CraftedVideoSender.h264Frame(keyframe: true, index: 0, packets: 1)[1], marker: true),
                [6] + vp9.packet(CraftedVideoSender.vp9Frame(keyframe: true, pictureID: 9, tl0PicIdx: 1, packets: 1)[0], marker: true)]
    }
}

/// Deterministic byte mutations (flip, set, insert, delete, truncate, splice a length field) for the
/// in-process fuzz run.
public struct Mutator {
    var rng: SplitMix64
    public init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    public mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var b = input
        for _ in 0..<(1 + Int(rng.next() % 4)) {
            let i = b.isEmpty ? 0 : Int(rng.next() % UInt64(b.count))
            switch rng.next() % 7 {
            case 0 where !b.isEmpty: b[i] ^= UInt8(1 << (rng.next() % 8))
            case 1 where !b.isEmpty: b[i] = [0, 0xFF, 0x7F, 0x80, 1][Int(rng.next() % 5)]
            case 2: b.insert(UInt8(truncatingIfNeeded: rng.next()), at: min(i, b.count))
            case 3 where !b.isEmpty: b.remove(at: i)
            case 4: b = Array(b.prefix(Int(rng.next() % UInt64(b.count + 1))))
            case 5 where b.count > 3: b[i] = UInt8(truncatingIfNeeded: rng.next()); b[(i + 1) % b.count] = 0xFF
            default: b += (0..<Int(rng.next() % 8)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            }
        }
        return b
    }
}
