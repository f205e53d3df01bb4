import SFUTestSupport
import Testing
@testable import SFU

/// Every fuzz entry point survives deterministic mutations of valid inputs (the libFuzzer build in
/// `Fuzz/` explores further, for a bounded time in CI). A parser that crashes fails the run.
@Suite struct FuzzSmokeTests {
    @Test(arguments: FuzzTarget.allCases)
    func parserSurvivesMutatedInput(_ target: FuzzTarget) {
        var m = Mutator(seed: 42)
        let iterations = target == .room || target == .sdp ? 3_000 : 30_000
        for i in 0..<iterations {
            let seed = target.seeds[i % target.seeds.count]
            let input = m.mutate(seed)
            input.withUnsafeBytes { target.run($0) }
        }
    }

    @Test func garbageFromOneClientNeitherCrashesNorDisturbsAnother() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a, seed: 1), quiet = SpeechScript([], seed: 2)
        let a = SimulatedParticipant(try h.join("A")) { sa.frame(at: $0, speaking: 0..<30) }
        let b = SimulatedParticipant(try h.join("B")) { quiet.frame(at: $0, speaking: 0..<0) }
        let bad = try h.join("X", publishVideo: true)
        h.run([a, b], from: 0, seconds: 1)
        let before = h.audio(to: b.member, from: a).count
        var rng = SplitMix64(seed: 9)
        var m = Mutator(seed: 10)
        var valid = RTPStreamWriter(ssrc: bad.audio.ssrc, payloadType: 111, audioLevelExtensionID: 1)
        for i in 0..<3000 {
            switch i % 6 {
            case 0: h.sendRaw((0..<Int(rng.next() % 1500)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, from: bad.publish.connection)
            case 1:
                if let p = bad.publish.tryProtect(valid.packet([0x78, 0x80, 1], level: 20)) { h.sendRaw(m.mutate(p), from: bad.publish.connection) }
            case 2: h.send(m.mutate(valid.packet([0x78, 0x80, 1], level: 20)), from: bad.publish)  // valid SRTP, broken RTP
            case 3: h.send(m.mutate([0x81, 0xC9, 0, 1, 0, 0, 0, 1]), from: bad.subscribe)
            case 4: h.sendRaw([0x80, 0x60, 0, 1], from: ConnectionID(999))
            default: h.send(valid.packet(m.mutate([0x78, 0x80, 1, 2]), level: 20), from: bad.publish)  // broken Opus
            }
        }
        h.run([a, b], from: 1, seconds: 1)
        #expect(h.audio(to: b.member, from: a).count - before > 40, "A still reaches B")
        let drops = h.room.counters.drops
        #expect(drops[.unknownConnection] == 500)
        print("garbage drops: \(drops.nonZero.map { "\($0.0)=\($0.1)" }.joined(separator: " "))")
        // Random bytes (500) and unknown connections (500) can never pass; mangled SRTP almost never.
        #expect(drops.total >= 1000)
        #expect(drops[.srtpAuthFailed] > 0 && drops[.badCodecPayload] > 0 && drops[.badRTCP] + drops[.badLength] + drops[.truncated] > 0)
    }
}
