import Benchmark
import Glibc
import SFU
import SFUMedia
import SFUFuzzTargets
import SFUSimulation

// Each benchmark runs `scaledIterations` (1000) operations per measured iteration; the tables show figures
// per operation (marked *), the stored thresholds are per iteration (per 1000 operations). Only the
// operations are measured (startMeasurement/stopMeasurement around them): setup, such as making the packets or
// an SRTP session, is not counted. Steady-state forwarding must show 0 mallocs.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 200
    )

    // The malloc counts in Benchmarks/Thresholds are those of libsrtp2 built on OpenSSL, as the node runs
    // (Debian's NSS-backed one allocates in every SRTP call). scripts/bench-thresholds.sh sets this so that a
    // run on another backend stops here instead of reading as a regression.
    if let wanted = getenv("SFU_BENCH_SRTP_BACKEND").map({ String(cString: $0) }) {
        precondition(SRTPBackend.current.name == wanted,
                     "linked libsrtp2 on \(SRTPBackend.current.name), the thresholds are for \(wanted)")
    }

    Benchmark("Parse RTP header and find the level extension (1200 B)") { benchmark in
        var w = RTPStreamWriter(ssrc: 1, payloadType: 111, audioLevelExtensionID: 1)
        let packet = w.packet([UInt8](repeating: 0xAB, count: 1180), level: 30)
        packet.withUnsafeBytes { p in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                guard case .success(let h) = RTPHeader.parse(p) else { fatalError() }
                blackHole(h.extensions(in: p).find(1))
            }
            benchmark.stopMeasurement()
        }
    }

    // The codec payload parsers work in place: a STAP-A walked unit by unit, a FU-A, and a VP9 key frame's
    // descriptor with its scalability structure, rewritten as forwarding would.
    Benchmark("Parse H.264 and VP9 payloads (STAP-A, FU-A, VP9 with SS)") { benchmark in
        let stapA: [UInt8] = [0x78, 0x00, 0x04, 0x67, 0x42, 0xC0, 0x1F, 0x00, 0x04, 0x68, 0xCE, 0x3C, 0x80,
                              0x00, 0x05, 0x65, 0x88, 0x84, 0x00, 0x33]
        let fuA: [UInt8] = [0x7C, 0x85] + [UInt8](repeating: 0xAB, count: 1100)
        var vp9: [UInt8] = [0xAA, 0x81, 0x23, 0x00, 0x07, 0x58, 0x01, 0x40, 0x00, 0xB4, 0x02, 0x80, 0x01, 0x68,
                            0x05, 0x00, 0x02, 0xD0, 0x02, 0x04, 0x01, 0x34, 0x01] + [UInt8](repeating: 0xAB, count: 1100)
        stapA.withUnsafeBytes { s in
            fuA.withUnsafeBytes { f in
                vp9.withUnsafeMutableBytes { v in
                    benchmark.startMeasurement()
                    for i in benchmark.scaledIterations {
                        guard case .success(let a) = H264Payload.parse(s), case .success(let b) = H264Payload.parse(f),
                              case .success(let d) = VP9Descriptor.parse(UnsafeRawBufferPointer(v)) else { fatalError() }
                        var units = 0
                        a.forEachNALUnit(in: s) { _, _ in units += 1 }
                        d.rewrite(pictureID: UInt16(truncatingIfNeeded: i), tl0PicIdx: UInt8(truncatingIfNeeded: i), in: v)
                        blackHole((units, a.isKeyframeStart, b.isKeyframeStart, d.scalability?.spatialLayers))
                    }
                    benchmark.stopMeasurement()
                }
            }
        }
    }

    Benchmark("Parse RTCP compound (RR + REMB)") { benchmark in
        var buf = [UInt8](repeating: 0, count: 128)
        let rr = ReceiverReport(ssrc: 1, reports: [ReportBlock(ssrc: 2, fractionLost: 0, cumulativeLost: 0, extendedHighestSequence: 9,
                                                                jitter: 1, lastSenderReport: 0, delaySinceLastSenderReport: 0)])
        let n1 = buf.withUnsafeMutableBytes { rr.write(into: $0)! }
        let n2 = buf.withUnsafeMutableBytes { REMB(senderSSRC: 1, bitrate: 1_000_000, ssrcs: [5]).write(into: UnsafeMutableRawBufferPointer(rebasing: $0[n1...]))! }
        let compound = Array(buf[0..<(n1 + n2)])
        compound.withUnsafeBytes { p in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                _ = RTCPCompound.forEach(p) { pkt in blackHole(pkt.packetType == 206 ? REMB.parse(p, pkt)?.bitrate : nil) }
            }
            benchmark.stopMeasurement()
        }
    }

    for (profile, size) in [(SRTPProfile.aeadAES128GCM, 1200), (.aeadAES128GCM, 160), (.aesCM128HmacSHA1_80, 1200), (.aesCM128HmacSHA1_80, 160)] {
        Benchmark("SRTP protect \(profile) \(size) B") { benchmark in
            let keys = SRTPKeyingMaterial(profile: profile, masterKey: .init(repeating: 7, count: profile.masterKeyLength),
                                          masterSalt: .init(repeating: 9, count: profile.masterSaltLength))
            let s = try! SRTPSession(keys: keys, direction: .outbound)
            var w = RTPStreamWriter(ssrc: 1, payloadType: 96)
            let plain = w.packet([UInt8](repeating: 1, count: size - 12))
            var buf = [UInt8](repeating: 0, count: 2048)
            buf.withUnsafeMutableBytes { b in
                // The session's first packet clones libsrtp's per-SSRC stream (ssrc_any_outbound): not per packet.
                b.copyMemory(from: plain.withUnsafeBytes { $0 })
                guard case .success = s.protectRTP(b, length: plain.count) else { fatalError("protect failed") }
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    b.copyMemory(from: plain.withUnsafeBytes { $0 })  // the per-subscriber copy is part of the cost
                    blackHole(s.protectRTP(b, length: plain.count))
                }
                benchmark.stopMeasurement()
            }
        }
    }

    Benchmark("SRTP unprotect AEAD_AES_128_GCM 1200 B", configuration: .init(maxIterations: 60)) { benchmark in
        let client = SimulatedClient(connection: ConnectionID(1), seed: 1)
        let rx = try! SRTPSession(keys: client.nodeInbound, direction: .inbound)
        var w = RTPStreamWriter(ssrc: 1, payloadType: 96)
        let first = client.protect(w.packet([UInt8](repeating: 1, count: 1188)))
        let packets = (0..<benchmark.scaledIterations.count).map { _ in client.protect(w.packet([UInt8](repeating: 1, count: 1188))) }
        var buf = [UInt8](repeating: 0, count: 2048)
        buf.withUnsafeMutableBytes { b in
            // The session's first packet clones libsrtp's per-SSRC stream (ssrc_any_inbound): not per packet.
            b.copyMemory(from: first.withUnsafeBytes { $0 })
            guard case .success = rx.unprotectRTP(b, length: first.count) else { fatalError("unprotect failed") }
            benchmark.startMeasurement()
            for p in packets {
                b.copyMemory(from: p.withUnsafeBytes { $0 })
                blackHole(rx.unprotectRTP(b, length: p.count))
            }
            benchmark.stopMeasurement()
        }
    }

    let speech = try! Speech.say("Level measurement needs real speech: this sentence is encoded with Opus.")
    let speechPackets = OpusFrameEncoder().encodeAll(speech)
    let silencePackets = OpusFrameEncoder().encodeAll(TestSignal.noise(dbfs: -75, seconds: 2))
    for (name, source, packets, claim) in [
        ("extension", LevelSource.extension, speechPackets, AudioLevelExtension(voiceActivity: true, level: 30)),
        ("decode, speech (16 kHz)", .decode, speechPackets, nil),
        ("decode, silence gated by SILK VAD", .decode, silencePackets, nil),
    ] {
        Benchmark("Audio level: \(name)") { benchmark in
            var meter = LevelMeter(source: source)
            let infos = packets.map { p in try! p.withUnsafeBytes { OpusPacketInfo.parse($0) }.get() }
            // The first packet the meter decodes creates its decoder: not per packet.
            packets[0].withUnsafeBytes { blackHole(meter.measure(claimed: claim, opus: infos[0], payload: $0).level) }
            benchmark.startMeasurement()
            for i in benchmark.scaledIterations {
                let k = i % packets.count
                packets[k].withUnsafeBytes { blackHole(meter.measure(claimed: claim, opus: infos[k], payload: $0).level) }
            }
            benchmark.stopMeasurement()
        }
    }

    Benchmark("Dominant speaker decision, 50 speakers", configuration: .init(scalingFactor: .one)) { benchmark in
        var d = DominantSpeakerDetector(now: .zero)
        for i in 0..<50 { d.addSpeaker(i, now: .zero) }
        var t = MonoTime.zero
        for _ in benchmark.scaledIterations {
            for _ in 0..<15 {
                t = t + .milliseconds(20)
                for i in 0..<50 { d.push(i, level: UInt8(20 + (i * 7 + Int(t.milliseconds)) % 60), now: t) }
            }
            benchmark.startMeasurement()
            blackHole(d.decide(now: t))
            benchmark.stopMeasurement()
        }
    }

    // What every room runs every 40 ms: who is speaking, for 50 speakers of whom nobody starts or stops (the
    // usual case: a check that changes nothing; the election is pushed out of the way, it is measured above).
    // Samples are pushed outside the measurement, so the figure is one check, and it must not allocate.
    Benchmark("Talker speaking check, 50 speakers, nothing changes", configuration: .init(scalingFactor: .one)) { benchmark in
        var configuration = DominantSpeakerDetector.Configuration()
        configuration.decisionInterval = .seconds(3600)
        var d = DominantSpeakerDetector(configuration: configuration, now: .zero)
        for i in 0..<50 { d.addSpeaker(i, now: .zero) }
        var t = MonoTime.zero
        for _ in benchmark.scaledIterations {
            // Ten talk steadily, the rest are silent; half the silent ones send nothing (filled with silence).
            for _ in 0..<2 {
                t = t + .milliseconds(20)
                for i in 0..<50 where i < 10 || i % 2 == 0 { d.push(i, level: i < 10 ? 20 : 127, now: t) }
            }
            benchmark.startMeasurement()
            blackHole(d.decideIfDue(now: t))
            benchmark.stopMeasurement()
        }
    }

    // The steady state of forwarding: one fixture per benchmark (set up once, warmed up), and every
    // iteration forwards `scaledIterations.count` (1000) more packets of the same streams, `now` advancing at
    // the streams' packet rate. The room's timers run between iterations, outside the measurement (a worker
    // runs them between receive passes, far more often: here they catch up once per 20 s of audio or 33 s of
    // video). Each iteration must deliver exactly 10 datagrams per packet, so mallocs per iteration / 1000 =
    // mallocs per forwarded packet. Always 40 iterations (about 3 s; the time limit only guards a hang), so the
    // p90 the threshold check reads is over the same samples on a slow machine.
    // Benchmarks/Thresholds holds the malloc count per iteration that `scripts/bench-thresholds.sh` checks.
    /// One steady-state forwarding benchmark: `datagramsPerFourPackets` datagrams must leave for every four
    /// packets forwarded (40 for ten subscribers of everything), or the run stops.
    func forwarding(_ name: String, datagramsPerFourPackets: Int, _ make: @escaping @Sendable () -> ForwardingFixture) {
        Benchmark(name, configuration: .init(maxDuration: .seconds(30), maxIterations: 40)) { benchmark, fixture in
            fixture.prepare(benchmark.scaledIterations.count)
            benchmark.startMeasurement()
            let forwarded = fixture.forwardPrepared()
            benchmark.stopMeasurement()
            precondition(forwarded * 4 == datagramsPerFourPackets * benchmark.scaledIterations.count, "forwarded \(forwarded)")
            fixture.runTimers()
        } setup: {
            make()
        }
    }
    for kind in [MediaKind.audio, .video] {
        for nullCipher in [false, true] {
            let crypto = nullCipher ? "null cipher: the engine alone" : "AEAD_AES_128_GCM"
            forwarding("Forward one \(kind) packet to 10 subscribers (\(crypto))", datagramsPerFourPackets: 40) {
                ForwardingFixture(kind: kind, subscribers: 10, nullCipher: nullCipher)
            }
        }
    }

    // H.264 and VP9 take the same path with their own payload parsing (key frame detection; VP9's picture ID
    // rewritten in place), each subscriber's slot sending them under its payload type for the codec.
    for codec in [Codec.h264, .vp9] {
        forwarding("Forward one \(codec == .h264 ? "H.264" : "VP9") packet to 10 subscribers (null cipher: the engine alone)",
                   datagramsPerFourPackets: 40) {
            ForwardingFixture(kind: .video, codec: codec, subscribers: 10, nullCipher: true)
        }
    }

    // VP9 with three temporal layers (TID 0 2 1 2), half the subscribers capped by their REMB to TL0 + TL1:
    // the per-layer rates, the slots' layer filters and the rewriter closing up over what it leaves out. Per
    // four packets: 5 x 4 to the free subscribers, 5 x 2 (TL2 left out) to the capped ones.
    forwarding("Forward one layered VP9 packet to 10 subscribers, 5 of them capped (null cipher: the engine alone)",
               datagramsPerFourPackets: 30) {
        ForwardingFixture(kind: .video, codec: .vp9, subscribers: 10, nullCipher: true, temporalLayers: true)
    }

    // The same through a whole worker core: the source address finds the transport's row (edge), SRTP
    // decrypts, the room fans out, SRTP encrypts per subscriber. 1,000 packets per iteration at 100 a second.
    Benchmark("Forward one video packet through the worker core to 10 subscribers (AEAD_AES_128_GCM)",
              configuration: .init(maxDuration: .seconds(30), maxIterations: 40)) { benchmark, worker in
        let packets = (0..<benchmark.scaledIterations.count).map { _ in worker.videoPacket() }
        benchmark.startMeasurement()
        var forwarded = 0
        for p in packets { forwarded += worker.receive(p) }
        benchmark.stopMeasurement()
        precondition(forwarded >= 10 * packets.count, "forwarded \(forwarded) for \(packets.count) packets")
        worker.runTimers()
    } setup: {
        ConnectedWorker(subscribers: 10)
    }

    // One transport-cc feedback from a subscriber, handled by the room (SRTCP with the null cipher, parse,
    // match with the send history, GCC update, video count): what the worker pays ~10 times a second per
    // subscriber that sends transport-cc. Only the feedback is measured; the media it reports is forwarded
    // between measurements.
    for packets in [20, 100] {
        Benchmark("Handle one transport-cc feedback of \(packets) packets for a subscriber",
                  configuration: .init(scalingFactor: .one, maxDuration: .seconds(3), maxIterations: 2000)) { benchmark in
            let fixture = FeedbackFixture(packetsPerFeedback: packets)
            for _ in benchmark.scaledIterations {
                fixture.forwardAndRecord()
                benchmark.startMeasurement()
                fixture.handleFeedback()
                benchmark.stopMeasurement()
                fixture.settle()
            }
            precondition(fixture.empty == 0, "\(fixture.empty) rounds had no feedback: the video stopped")
        }
    }
}

/// One publisher, ten subscribers that all receive it, and a stream that goes on across iterations: each
/// iteration's SRTP packets are made before measuring (`prepare`), forwarded with `now` advancing by one
/// packet interval each (`forwardPrepared`), then the room's timers catch up (`runTimers`). The room is
/// warmed up first (keyframe switch done, detector running), so the measured packets are the steady state.
final class ForwardingFixture {
    let harness: RoomHarness
    let room: Room
    let batch = DatagramBatch(capacity: 64)
    let publisher: SimulatedClient
    let kind: MediaKind
    let codec: Codec
    /// VP9 packets carry TID 0 2 1 2 (with TL0PICIDX and switching-up points).
    let temporalLayers: Bool
    var writer: RTPStreamWriter
    /// Packets sent so far (sets the VP8 picture id).
    var sent = 0
    /// Audio: a 20 ms Opus frame per packet. Video: a 30 fps frame per packet.
    let interval: MonoTime.Interval
    var packets: [[UInt8]] = []
    var buffer = [UInt8](repeating: 0, count: 2048)
    let opus = speechFrame

    init(kind: MediaKind, codec: Codec = .vp8, subscribers: Int, nullCipher: Bool, temporalLayers: Bool = false) {
        let h = try! RoomHarness()
        h.nullCipher = nullCipher
        harness = h
        room = h.room
        self.kind = kind
        self.codec = kind == .audio ? .opus : codec
        self.temporalLayers = temporalLayers
        let pub: RoomHarness.Member
        var subs: [RoomHarness.Member] = []
        if kind == .video, codec != .vp8 {
            // Subscribers whose slots take all three video codecs, each under its own payload type.
            let formats = [PayloadFormat(codec: .vp8, payloadType: 98), PayloadFormat(codec: .vp9, payloadType: 100),
                           PayloadFormat(codec: .h264, payloadType: 102, h264: .absent)]
            pub = try! h.join("pub", video: PayloadFormat(codec: codec, payloadType: 96, h264: codec == .h264 ? .absent : nil), audioSlots: 0)
            for i in 0..<subscribers { subs.append(try! h.join("sub\(i)", video: nil, videoSlots: 1, slotFormats: formats)) }
        } else {
            pub = try! h.join("pub", publishVideo: true, audioSlots: 0)
            for i in 0..<subscribers { _ = try! h.join("sub\(i)", audioSlots: 1, videoSlots: 1) }
        }
        publisher = pub.publish
        writer = kind == .audio ? pub.audio : pub.video
        interval = kind == .audio ? .milliseconds(20) : .init(nanoseconds: 1_000_000_000 / 30)
        // Warm-up: a keyframe first so video slots switch; the detector sees the talker.
        for _ in 0..<200 { h.sendRaw(next(), from: publisher.connection); h.advance(to: h.now + interval) }
        if temporalLayers {
            // Half the subscribers' downlinks fit TL0 + TL1 (about 150 of 300 kbit/s) and not TL2; then a
            // second of the stream so that their slots have moved to the caps.
            for sub in subs.prefix(subscribers / 2) {
                var buf = [UInt8](repeating: 0, count: 32)
                let n = buf.withUnsafeMutableBytes { REMB(senderSSRC: 0xB0B, bitrate: 250_000, ssrcs: [1]).write(into: $0) }!
                h.send(Array(buf[0..<n]), from: sub.subscribe)
            }
            for _ in 0..<40 { h.sendRaw(next(), from: publisher.connection); h.advance(to: h.now + interval) }
        }
        h.keepReceived = false
        h.clearEvents()
    }

    /// The next packet of the stream, protected by the publisher.
    func next() -> [UInt8] {
        let i = sent
        sent += 1
        let packet: [UInt8]
        if kind == .audio {
            packet = writer.packet(opus, level: 25)
            writer.timestamp &+= 960
        } else {
            var payload = [UInt8](repeating: UInt8(i & 0xFF), count: 1180)
            switch codec {
            case .h264:
                // A single NAL unit per frame: an IDR slice first, then non-IDR slices (RFC 6184 section 5.6).
                payload[0] = i == 0 ? 0x65 : 0x41
            case .vp9 where temporalLayers:
                // I, L, B and E (P after the first), a 15-bit picture ID, TID 0 2 1 2 with U above 0, TL0PICIDX.
                let tid = UInt8([0, 2, 1, 2][i % 4])
                payload.replaceSubrange(0..<5, with: [i == 0 ? 0xAC : 0xEC, 0x80 | UInt8((i >> 8) & 0x7F), UInt8(i & 0xFF),
                                                      tid << 5 | (tid > 0 ? 0x10 : 0), UInt8((i / 4) & 0xFF)])
            case .vp9:
                // I, B and E (P after the first), a 15-bit picture ID (RFC 9628 section 4.2).
                payload.replaceSubrange(0..<3, with: [i == 0 ? 0x8C : 0xCC, 0x80 | UInt8((i >> 8) & 0x7F), UInt8(i & 0xFF)])
            default:
                payload.replaceSubrange(0..<6, with: [0x90, 0x80, 0x80 | UInt8((i >> 8) & 0x7F), UInt8(i & 0xFF), 0x00, i == 0 ? 0x10 : 0x11])
            }
            packet = writer.packet(payload, marker: true)
            writer.timestamp &+= 3000
        }
        return publisher.protect(packet)
    }

    func prepare(_ count: Int) { packets = (0..<count).map { _ in next() } }

    /// Hands the prepared packets to the room, the i-th at `now + (i + 1) * interval`; returns the datagrams
    /// it produced.
    func forwardPrepared() -> Int {
        var forwarded = 0
        var now = harness.now
        buffer.withUnsafeMutableBytes { buf in
            for p in packets {
                now = now + interval
                buf.copyMemory(from: p.withUnsafeBytes { $0 })
                room.receive(buf, length: p.count, from: publisher.connection, now: now, into: batch)
                forwarded += batch.count
                batch.removeAll()
            }
        }
        return forwarded
    }

    /// Moves the harness's clock to the last packet's arrival, running the room's timers that fell due.
    func runTimers() {
        harness.advance(to: harness.now + .init(nanoseconds: interval.nanoseconds * Int64(packets.count)))
        harness.clearEvents()
    }
}

let speechFrame: [UInt8] = OpusFrameEncoder().encode(ArraySlice(TestSignal.sine(dbfs: -20, seconds: 0.02)))

/// A publisher's video forwarded to one subscriber that negotiated transport-cc; the subscriber's end
/// records what arrives (20 ms after it left) and sends a feedback every `packetsPerFeedback` packets (a
/// browser sends one every 50-250 ms). Warmed up first, so the estimator and the tables are in steady state.
final class FeedbackFixture {
    let h: RoomHarness
    var pub: RoomHarness.Member
    let sub: RoomHarness.Member
    let packetsPerFeedback: Int
    var recorder = TransportFeedbackRecorder()
    var frame = 0
    var feedback: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 2048)
    var feedbackBuffer = [UInt8](repeating: 0, count: 1500)

    init(packetsPerFeedback: Int) {
        h = try! RoomHarness()
        h.nullCipher = true
        self.packetsPerFeedback = packetsPerFeedback
        let tcc = RoomHarness.FeedbackOptions(transportCC: true)
        pub = try! h.join("pub", publishVideo: true, audioSlots: 0, options: tcc)
        sub = try! h.join("sub", audioSlots: 1, videoSlots: 1, options: tcc)
        h.keepReceived = false
        let subscriber = sub.subscribe.connection
        h.network = { [unowned self] dest, datagram in
            guard dest == subscriber else { return true }
            datagram.withUnsafeBytes { p in
                if !isRTCP(p), case .success(let hdr) = RTPHeader.parse(p), let r = hdr.extensions(in: p).find(5), r.count == 2 {
                    recorder.record(sequence: UInt16(p[r.lowerBound]) << 8 | UInt16(p[r.lowerBound + 1]), arrival: h.now + .milliseconds(20))
                }
            }
            return false
        }
        for _ in 0..<100 { forwardAndRecord(); handleFeedback(); settle() }
        empty = 0
        let stats = h.room.stats().first { $0.participant == "sub" }
        precondition(stats?.bandwidthEstimateBps != nil && (stats?.slots.last?.packetsSent ?? 0) > 0, "no estimate or no video")
    }

    /// The publisher sends `packetsPerFeedback` one-packet video frames 5 ms apart (a keyframe first), the
    /// room forwards them, and the subscriber's feedback about them is made ready. Small packets (~150 B,
    /// ~240 kbit/s) keep the video well under the estimate, so the room never takes it away.
    func forwardAndRecord() {
        for _ in 0..<packetsPerFeedback {
            var payload = [UInt8](repeating: UInt8(frame & 0xFF), count: 120)
            payload.replaceSubrange(0..<6, with: [0x90, 0x80, 0x80 | UInt8((frame >> 8) & 0x7F), UInt8(frame & 0xFF), 0x00, frame == 0 ? 0x10 : 0x11])
            h.send(pub.video.packet(payload, marker: true), from: pub.publish)
            pub.video.timestamp &+= 450
            frame += 1
            h.advance(by: 5)
        }
        h.advance(by: 20)
        let n = feedbackBuffer.withUnsafeMutableBytes { recorder.writeFeedback(sender: 0xFEED, media: 1, now: h.now, into: $0) }
        feedback = n.map { sub.subscribe.protect(Array(feedbackBuffer[0..<$0])) } ?? []
    }

    /// Rounds with nothing to report since the warm-up (the room stopped forwarding the video).
    var empty = 0

    func handleFeedback() {
        guard !feedback.isEmpty else { empty += 1; return }
        buffer.withUnsafeMutableBytes { buf in
            buf.copyMemory(from: feedback.withUnsafeBytes { $0 })
            h.room.receive(buf, length: feedback.count, from: sub.subscribe.connection, now: h.now, into: h.batch)
        }
    }

    /// Delivers what the room sent in answer and drains its events (not measured).
    func settle() { h.flush() }
}
