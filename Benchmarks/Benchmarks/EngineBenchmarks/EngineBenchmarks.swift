import Benchmark
import SFU
import SFUTestSupport

// Each benchmark runs `scaledIterations` (1000) operations per measured iteration: read the figures as
// nanoseconds (or mallocs) per 1000 operations. Steady-state forwarding must show 0 mallocs.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 200
    )

    Benchmark("Parse RTP header and find the level extension (1200 B)") { benchmark in
        var w = RTPStreamWriter(ssrc: 1, payloadType: 111, audioLevelExtensionID: 1)
        let packet = w.packet([UInt8](repeating: 0xAB, count: 1180), level: 30)
        packet.withUnsafeBytes { p in
            for _ in benchmark.scaledIterations {
                guard case .success(let h) = RTPHeader.parse(p) else { fatalError() }
                blackHole(h.extensions(in: p).find(1))
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
            for _ in benchmark.scaledIterations {
                _ = RTCPCompound.forEach(p) { pkt in blackHole(pkt.packetType == 206 ? REMB.parse(p, pkt)?.bitrate : nil) }
            }
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
                for _ in benchmark.scaledIterations {
                    b.copyMemory(from: plain.withUnsafeBytes { $0 })  // the per-subscriber copy is part of the cost
                    blackHole(s.protectRTP(b, length: plain.count))
                }
            }
        }
    }

    Benchmark("SRTP unprotect AEAD_AES_128_GCM 1200 B", configuration: .init(maxIterations: 60)) { benchmark in
        let client = SimulatedClient(connection: ConnectionID(1), seed: 1)
        let rx = try! SRTPSession(keys: client.nodeInbound, direction: .inbound)
        var w = RTPStreamWriter(ssrc: 1, payloadType: 96)
        let packets = (0..<benchmark.scaledIterations.count).map { _ in client.protect(w.packet([UInt8](repeating: 1, count: 1188))) }
        var buf = [UInt8](repeating: 0, count: 2048)
        buf.withUnsafeMutableBytes { b in
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
            for i in benchmark.scaledIterations {
                let k = i % packets.count
                packets[k].withUnsafeBytes { blackHole(meter.measure(claimed: claim, opus: infos[k], payload: $0).level) }
            }
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

    for kind in [MediaKind.audio, .video] {
        for nullCipher in [false, true] {
        let crypto = nullCipher ? "null cipher: the engine alone" : "AEAD_AES_128_GCM"
        Benchmark("Forward one \(kind) packet to 10 subscribers (\(crypto))", configuration: .init(maxIterations: 40)) { benchmark in
            let fixture = ForwardingFixture(kind: kind, subscribers: 10, packets: benchmark.scaledIterations.count, nullCipher: nullCipher)
            benchmark.startMeasurement()
            fixture.forwardAll()
            benchmark.stopMeasurement()
            precondition(fixture.forwarded == 10 * benchmark.scaledIterations.count, "forwarded \(fixture.forwarded)")
        }
        }
    }
}

/// One publisher, ten subscribers that all receive it, and fresh SRTP packets made before measuring.
/// The room is warmed up first (keyframe switch done, detector running), so the measured packets are the
/// steady state.
final class ForwardingFixture {
    let room: Room
    let batch = DatagramBatch(capacity: 64)
    let publisher: SimulatedClient
    var packets: [[UInt8]] = []
    var forwarded = 0
    var buffer = [UInt8](repeating: 0, count: 2048)

    init(kind: MediaKind, subscribers: Int, packets count: Int, nullCipher: Bool) {
        let h = try! RoomHarness()
        h.nullCipher = nullCipher
        room = h.room
        let pub = try! h.join("pub", publishVideo: true, audioSlots: 0)
        publisher = pub.publish
        for i in 0..<subscribers { _ = try! h.join("sub\(i)", audioSlots: 1, videoSlots: 1) }
        var writer = kind == .audio ? pub.audio : pub.video
        let opus = speechFrame
        func next(_ i: Int) -> [UInt8] {
            let packet: [UInt8]
            if kind == .audio {
                packet = writer.packet(opus, level: 25)
                writer.timestamp &+= 960
            } else {
                var payload = [UInt8](repeating: UInt8(i & 0xFF), count: 1180)
                payload.replaceSubrange(0..<6, with: [0x90, 0x80, 0x80 | UInt8((i >> 8) & 0x7F), UInt8(i & 0xFF), 0x00, i == 0 ? 0x10 : 0x11])
                packet = writer.packet(payload, marker: true)
                writer.timestamp &+= 3000
            }
            return publisher.protect(packet)
        }
        // Warm-up: a keyframe first so video slots switch; the detector sees the talker.
        for i in 0..<200 { h.sendRaw(next(i), from: publisher.connection); h.advance(by: 20) }
        h.keepReceived = false
        packets = (200..<(200 + count)).map(next)
        if kind == .video { h.advance(by: 20) }
    }

    func forwardAll() {
        buffer.withUnsafeMutableBytes { buf in
            for p in packets {
                buf.copyMemory(from: p.withUnsafeBytes { $0 })
                room.receive(buf, length: p.count, from: publisher.connection, now: .seconds(100), into: batch)
                forwarded += batch.count
                batch.removeAll()
            }
        }
    }
}

let speechFrame: [UInt8] = OpusFrameEncoder().encode(ArraySlice(TestSignal.sine(dbfs: -20, seconds: 0.02)))
