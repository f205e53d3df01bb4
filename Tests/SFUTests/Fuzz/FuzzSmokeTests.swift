@testable import SFUFuzzTargets
import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// Every fuzz entry point survives deterministic mutations of valid inputs (the libFuzzer build in
/// `Fuzz/` explores further, for a bounded time in CI). A parser that crashes fails the run.
@Suite struct FuzzSmokeTests {
    @Test(arguments: FuzzTarget.allCases)
    func parserSurvivesMutatedInput(_ target: FuzzTarget) {
        var m = Mutator(seed: 42)
        let iterations = switch target {
        case .room, .sdp: 3_000
        case .edge, .session: 600  // each input is a sequence of datagrams or offers: a few seconds in debug
        default: 30_000
        }
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

/// The stateful targets' seeds reach what they are meant to fuzz (a harness that quietly stopped
/// authenticating, connecting or negotiating would fuzz only its own refusals).
@Suite struct FuzzReachTests {
    @Test func stunProgramsAuthenticateSelectReplayAndExpire() {
        let program = FuzzTarget.stun.seeds.first { $0.first! & 0xC0 != 0 }!
        let m = program.withUnsafeBytes { FuzzICE.run(UnsafeRawBufferPointer(rebasing: $0.dropFirst())) }
        #expect(m.agent.checksAnswered >= 2, "signed checks authenticate")
        #expect(m.agent.checksRefused >= 1, "the replay from another address is refused")
        #expect(m.agent.state == .failed, "consent expires after 31 s without a check")
    }

    @Test func edgeSeedsCarryMediaAndFeedbackThroughTheCore() {
        let edge = FuzzEdge()
        FuzzTarget.edge.seeds[0].withUnsafeBytes { edge.feed($0) }
        #expect(edge.net.core.transportCounters.dtlsHandshakes == 4)
        #expect(edge.clients[2].rtpReceived > 0 && edge.clients[3].rtpReceived > 0, "both subscribers receive forwarded media")
        #expect(edge.clients[0].rtcpReceived > 0, "the publisher gets feedback (PLI, receiver reports)")
        #expect(edge.clients.allSatisfy { $0.undecryptable == 0 })
        FuzzTarget.edge.seeds[1].withUnsafeBytes { edge.feed($0) }
        #expect(edge.net.core.edge.drops.first { $0.reason == "stun_replay" }!.count >= 1)
    }

    @Test func sessionSeedsCreateRenegotiateRestartReplaceAndRemove() {
        let s = FuzzTarget.session.seeds[0].withUnsafeBytes { FuzzSession.run($0) }
        let t = s.net.core.transportCounters
        #expect(t.created >= 2 && t.renegotiated >= 1 && t.iceRestarts >= 1 && t.replaced >= 1, "\(t)")
        #expect(t.dtlsHandshakes >= 2, "connect completes ICE and DTLS")
        #expect(t.handshakeTimeouts >= 1, "a handshake left half done times out")
        #expect(s.room?.contains(participant: "B") == true, "B was re-admitted")
    }

    @Test func moderationSeedSilencesMutedAndFloorlessPublishers() throws {
        let s = FuzzTarget.session.seeds[1].withUnsafeBytes { FuzzSession.run($0) }
        let room = try #require(s.room)
        let b = try #require(room.stats().first { $0.participant == "B" })
        print("moderation seed: B's slots sent \(b.slots.map(\.packetsSent)), drops \(room.counters.drops.nonZero)")
        #expect(room.counters.drops[.hardMuted] == 5, "A's three packets while it muted itself, C's two under the room mute")
        #expect(room.counters.drops[.noFloor] == 2, "C's two packets without the floor")
        #expect(b.slots.count == 2 && b.slots.reduce(0) { $0 + $1.packetsSent } > 0, "B hears A when A may be heard")
    }

    @Test func continuitySeedWrapsAStreamAndRenegotiatesAroundIt() throws {
        // The seed must reach what the stream promise is about: a run that wraps, then renegotiations of both
        // directions, with every packet still taken in (the promise would have stopped the run otherwise).
        let s = FuzzTarget.session.seeds[2].withUnsafeBytes { FuzzSession.run($0) }
        let room = try #require(s.room)
        #expect(s.net.core.transportCounters.renegotiated >= 3, "\(s.net.core.transportCounters)")
        #expect(s.streams.values.contains { $0 > 200 && $0 < 1000 }, "a stream wrapped past 65535: \(s.streams)")
        #expect(room.counters.drops[.srtpAuthFailed] == 0)
        let b = try #require(room.stats().first { $0.participant == "B" })
        #expect(b.slots.reduce(0) { $0 + $1.packetsSent } == 320, "B's slot carried all 320 packets A sent, through both renegotiations")
    }
}
