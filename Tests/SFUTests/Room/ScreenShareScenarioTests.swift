@testable import SFU
@testable import SFUBase
import SFUMedia
import SFUSimulation
import Testing

/// Screen share on virtual time (issue 14): a participant publishes a second video source marked as a screen
/// share; a subscriber's screen slots show it while it is present, whoever talks; it takes its share of the
/// subscriber's number_of_videos before the cameras do; hard mute and the floor stop it at ingress as they
/// stop a camera.
@Suite struct ScreenShareScenarioTests {
    /// Screen slot i's SSRC offset in the harness.
    static func screenSlot(_ i: UInt32) -> UInt32 { 0x280 + i }

    func screenMaps(_ h: RoomHarness, _ subscriber: String, mid: String = "s0") -> [RoomEvent.SlotAssignment] {
        h.talkerEvents(for: subscriber).compactMap { $0.2.first { $0.mid == mid } }
    }

    func remb(_ h: RoomHarness, _ m: RoomHarness.Member, _ bps: UInt64) {
        var buf = [UInt8](repeating: 0, count: 64)
        let n = buf.withUnsafeMutableBytes { REMB(senderSSRC: 0xB0B, bitrate: bps, ssrcs: [1]).write(into: $0) }!
        h.send(Array(buf[0..<n]), from: m.subscribe)
    }

    /// Runs the scenario with `subscriber` reporting a downlink estimate of `bps` every 100 ms (before any
    /// estimate a subscriber is shown one video, and the screen share takes it).
    func run(_ h: RoomHarness, _ people: [SimulatedParticipant], from start: Double, seconds: Double, estimate bps: UInt64,
             of subscriber: SimulatedParticipant) {
        for step in 0..<Int(seconds * 10) {
            remb(h, subscriber.member, bps)
            h.run(people, from: start + Double(step) / 10, seconds: 0.1)
        }
    }

    @Test func aScreenShareKeepsItsSlotWhileSpeakersChange() throws {
        let h = try RoomHarness()
        let sa = SpeechScript(Voices.a), sc = SpeechScript(Voices.c, seed: 5), quiet = SpeechScript([])
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0.2..<4) }
        let c = SimulatedParticipant(try h.join("C", publishVideo: true), video: true, seed: 2) { sc.frame(at: $0, speaking: 4.5..<9) }
        let s = SimulatedParticipant(try h.join("S", publishScreen: true)) { quiet.frame(at: $0, speaking: 0..<0) }
        s.sendsScreen = true
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 1, screenSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        run(h, [a, c, s, b], from: 0, seconds: 9, estimate: 5_000_000, of: b)

        let cameras = h.talkerEvents(for: "B").compactMap { $0.2.first { $0.mid == "v0" }?.participant }
        #expect(cameras.contains("A") && cameras.last == "C", "the camera slot follows the talkers: \(cameras)")
        let screens = screenMaps(h, "B")
        let first = try #require(screens.firstIndex { $0.participant == "S" }, "the screen slot shows S's share")
        #expect(screens[first...].allSatisfy { $0.participant == "S" && $0.source == .screen }, "and keeps it through both speaker changes")
        #expect(h.talkerEvents(for: "B").last?.2.first { $0.mid == "v0" }?.source == .camera)

        let out = h.slotPackets(b.member, ssrcOffset: Self.screenSlot(0))
        #expect(out.count >= 40, "about 5 frames a second for 9 s: \(out.count) packets")
        let seqs = out.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "one continuous stream")
        // The camera slot carried cameras only: libvpx decodes it cleanly (the share is stand-in bytes).
        let checker = VP8StreamChecker()
        for p in h.slotPackets(b.member, ssrcOffset: SlotSSRC.video(0)) { checker.receive(p.packet) }
        #expect(checker.errors.isEmpty && checker.decodedFrames > 150, "\(checker.errors), \(checker.decodedFrames) frames")
    }

    @Test func aSubscriberWithoutScreenSlotsIsSentNoScreenShare() throws {
        let h = try RoomHarness()
        let quiet = SpeechScript([])
        let s = SimulatedParticipant(try h.join("S", publishScreen: true)) { quiet.frame(at: $0, speaking: 0..<0) }
        s.sendsScreen = true
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, videoSlots: 2)) { quiet.frame(at: $0, speaking: 0..<0) }
        run(h, [s, b], from: 0, seconds: 3, estimate: 5_000_000, of: b)
        #expect(h.talkerEvents(for: "B").last?.2.filter { $0.kind == .video }.allSatisfy { $0.participant == nil } == true,
                "camera slots never show a screen")
        #expect(h.rtp(to: b.member.subscribe.connection).allSatisfy { $0.header.payloadType != 98 }, "no video is sent")
        #expect(h.room.snapshot().participants.first { $0.id == "S" }.map { $0.publishesScreen && !$0.publishesVideo } == true)
    }

    /// B can take one video at 700 kbit/s (each video measures ~310 kbit/s once its first key frames are out
    /// of the meter's window) and two at 1.1 Mbit/s: the share comes first.
    @Test func theScreenShareTakesTheSubscribersVideosBeforeCameras() throws {
        var config = RoomConfiguration()
        config.videoCount = VideoCountPolicy.Parameters()  // the pure rule: the first estimate counts at once
        config.streamBandwidthKbps = 300
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a), quiet = SpeechScript([])
        let a = SimulatedParticipant(try h.join("A", publishVideo: true), video: true, seed: 1) { sa.frame(at: $0, speaking: 0.2..<16) }
        a.videoKbps = 300
        let s = SimulatedParticipant(try h.join("S", publishScreen: true)) { quiet.frame(at: $0, speaking: 0..<0) }
        s.sendsScreen = true
        let b = SimulatedParticipant(try h.join("B", audioSlots: 2, videoSlots: 2, screenSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, s, b], from: 0, seconds: 3)
        for step in 0..<30 {
            if step % 5 == 0 { remb(h, b.member, 700_000) }
            h.run([a, s, b], from: 3 + Double(step) / 10, seconds: 0.1)
        }
        var last = try #require(h.talkerEvents(for: "B").last?.2)
        #expect(last.first { $0.mid == "s0" }?.participant == "S", "one video: the screen share")
        #expect(last.filter { $0.kind == .video && $0.source == .camera }.allSatisfy { $0.participant == nil }, "and no camera: \(last)")
        for step in 0..<100 {
            if step % 5 == 0 { remb(h, b.member, 1_100_000) }
            h.run([a, s, b], from: 6 + Double(step) / 10, seconds: 0.1)
        }
        last = try #require(h.talkerEvents(for: "B").last?.2)
        #expect(last.first { $0.mid == "s0" }?.participant == "S")
        #expect(last.first { $0.mid == "v0" }?.participant == "A", "two videos: the share, then the talker's camera: \(last)")
        #expect(last.first { $0.mid == "v1" }?.participant == nil)
        let alerts = h.events.compactMap { e -> Int? in if case .bandwidthAlert("B", _, _, let n) = e.1 { n } else { nil } }
        #expect(alerts == [2], "one video from the start (no alert), then two, the share counted among them: \(alerts)")
    }

    @Test func hardMutingThePresentersVideoStopsItsShareAtIngress() throws {
        let h = try RoomHarness()
        let quiet = SpeechScript([])
        let mod = SimulatedParticipant(try h.join("M", role: .moderator)) { quiet.frame(at: $0, speaking: 0..<0) }
        let s = SimulatedParticipant(try h.join("S", publishScreen: true)) { quiet.frame(at: $0, speaking: 0..<0) }
        s.sendsScreen = true
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, screenSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([mod, s, b], from: 0, seconds: 2)
        #expect(screenMaps(h, "B").last?.participant == "S")
        try h.room.moderation.hardMute(by: "M", target: "S", audio: nil, video: true, now: h.now, into: h.batch)
        h.flush()
        h.clearReceived()
        h.run([mod, s, b], from: 2, seconds: 3)
        #expect(screenMaps(h, "B").last?.participant == nil, "the slot map takes it away")
        #expect(h.slotPackets(b.member, ssrcOffset: Self.screenSlot(0)).isEmpty, "and not one packet of it leaves the node")
        #expect(h.room.counters.drops[.hardMuted] > 0)
    }

    /// The share that began first keeps the slot, whoever joined the room first: "late" joined after "early"
    /// but shares before it.
    @Test func underTheAlwaysRuleTheOlderShareKeepsTheOnlyScreenSlotUntilItEnds() throws {
        let h = try RoomHarness()
        let sx = SpeechScript(Voices.a), quiet = SpeechScript([])
        let early = SimulatedParticipant(try h.join("early", publishScreen: true)) { sx.frame(at: $0, speaking: 1..<8) }
        let late = SimulatedParticipant(try h.join("late", publishScreen: true)) { quiet.frame(at: $0, speaking: 0..<0) }
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, screenSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        late.sendsScreen = true
        h.run([early, late, b], from: 0, seconds: 1)
        early.sendsScreen = true  // early starts sharing and talking: late's share stays
        h.run([early, late, b], from: 1, seconds: 3)
        #expect(screenMaps(h, "B").last?.participant == "late")
        late.sendsScreen = false  // late stops: after the stale time early's share takes the slot
        h.run([early, late, b], from: 4, seconds: 3)
        #expect(screenMaps(h, "B").last?.participant == "early")
    }

    @Test func underTheTalkerRuleAShareIsShownOnlyWhileItsPresenterIsATalker() throws {
        var config = RoomConfiguration()
        config.screenShare = .talker
        config.maxActiveTalkers = 1
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a), ss = SpeechScript(Voices.c, seed: 5), quiet = SpeechScript([])
        let a = SimulatedParticipant(try h.join("A")) { sa.frame(at: $0, speaking: 4..<9) }
        let s = SimulatedParticipant(try h.join("S", publishScreen: true)) { ss.frame(at: $0, speaking: 0.2..<3.5) }
        s.sendsScreen = true
        let b = SimulatedParticipant(try h.join("B", audioSlots: 1, screenSlots: 1)) { quiet.frame(at: $0, speaking: 0..<0) }
        h.run([a, s, b], from: 0, seconds: 3)
        #expect(screenMaps(h, "B").last?.participant == "S", "S talks: its share is shown")
        h.run([a, s, b], from: 3, seconds: 6)
        #expect(screenMaps(h, "B").last?.participant == nil, "A took the only talker place: S's share goes with it")
    }
}
