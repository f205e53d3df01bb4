import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// A new talker is heard from its first words (issue 28): the detector calls it speaking only after several
/// loud frames, and the audio slot that takes it over then sends what its track kept of the utterance from the
/// first loud frame, rewritten into the slot's stream, before the live packets.
@Suite struct OnsetReplayScenarioTests {
    struct Heard {
        /// Scenario time of the first of B's frames the listener received, seconds.
        var firstFrame: Double
        var frames: Int
        /// The listener's audio slot: (sequence number, timestamp, marker) of every packet, in order.
        var slot: [(seq: UInt16, ts: UInt32, marker: Bool)]
    }

    /// With one slot, A talks for 4 s; B speaks from `onset` to 9 s (A silent). `mute` hard-mutes B over that
    /// range of scenario time. What the listener S received of B: B sends a frame every 20 ms and nothing is
    /// lost on virtual time, so its frames reach S in order and the last one is B's frame at 8.98 s.
    static func heard(replay: MonoTime.Interval, onset: Double = 6, mute: Range<Double>? = nil) throws -> Heard {
        precondition(SlotSender.onsetPreroll == 3, "the expectations below count the preroll's frames")
        var config = RoomConfiguration()
        config.maxActiveTalkers = 1
        config.onsetReplay = replay
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a, seed: 1), sb = SpeechScript(Voices.c, seed: 5)
        _ = try h.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        let a = SimulatedParticipant(try h.join("A")) { sa.frame(at: $0, speaking: 0..<4) }
        let b = SimulatedParticipant(try h.join("B")) { sb.frame(at: $0, speaking: onset..<9) }
        let s = try h.join("S", publishAudio: false, audioSlots: 1)
        if let mute {
            h.run([a, b], from: 0, seconds: mute.lowerBound)
            try h.room.moderation.moderate(.hardMute(target: "B", audio: true, video: nil), by: "M", now: h.now, into: h.batch)
            h.run([a, b], from: mute.lowerBound, seconds: mute.upperBound - mute.lowerBound)
            try h.room.moderation.moderate(.hardMute(target: "B", audio: false, video: nil), by: "M", now: h.now, into: h.batch)
            h.run([a, b], from: mute.upperBound, seconds: 9 - mute.upperBound)
        } else {
            h.run([a, b], from: 0, seconds: 9)
        }
        let packets = h.rtp(to: s.subscribe.connection).filter { $0.header.ssrc == s.audio.ssrc &+ 0xFF }
        let fromB = packets.filter { p in
            h.payloadSenders[Array(p.packet[p.header.payloadRange])]?.contains("B") == true
        }
        return Heard(firstFrame: 8.98 - Double(fromB.count - 1) * 0.02, frames: fromB.count,
                     slot: packets.map { ($0.header.sequenceNumber, $0.header.timestamp, $0.header.marker) })
    }

    @Test func aNewTalkerIsHeardFromItsFirstLoudFrame() throws {
        for onset in [6.0, 6.02, 6.06] {
            let replayed = try Self.heard(replay: .milliseconds(300), onset: onset)
            let live = try Self.heard(replay: .milliseconds(0), onset: onset)
            // Three quiet frames before the first loud one go too (`SlotSender.onsetPreroll`).
            #expect(replayed.firstFrame <= onset + 0.021 && replayed.firstFrame >= onset - 0.081,
                    "B from \(onset) s: first frame heard at \(replayed.firstFrame) s with the onset sent")
            #expect(live.firstFrame >= onset + 0.06, "without it the detector's frames are lost: \(live.firstFrame) s")
            #expect(replayed.frames >= live.frames + 3)
        }
    }

    @Test func theSlotStaysOneContinuousStreamThroughTheReplay() throws {
        let heard = try Self.heard(replay: .milliseconds(300))
        #expect(heard.slot.count > 300)
        for (x, y) in zip(heard.slot, heard.slot.dropFirst()) {
            #expect(y.seq == x.seq &+ 1, "sequence numbers continue without a gap or a repeat: \(x.seq) then \(y.seq)")
            // Timestamps run on across the switch and the burst (RTP time, wrapping).
            #expect(Int32(bitPattern: y.ts &- x.ts) > 0, "timestamps go forward: \(x.ts) then \(y.ts)")
        }
        #expect(heard.slot.dropFirst().filter(\.marker).count >= 1, "the take-over is flagged as a talkspurt's start")
    }

    @Test func nothingSaidBeforeAHardMuteIsSentAfterIt() throws {
        // B speaks from 6 s; it is hard-muted at 6.06 s, before the detector lets it in, and unmuted at 6.2 s
        // while still speaking. What it said before the mute (kept, never sent) must not be sent after it.
        let heard = try Self.heard(replay: .milliseconds(300), onset: 6, mute: 6.06..<6.2)
        #expect(heard.firstFrame >= 6.2 - 0.001, "B's first frame heard at \(heard.firstFrame) s: before the unmute")
        #expect(heard.firstFrame <= 6.26, "and what it said after the unmute is sent from its start: \(heard.firstFrame) s")
    }

    @Test func aTalkerTakenBackWhileSpeakingIsNotSentWhatTheSlotAlreadySent() throws {
        // A and B talk all along; S hears both, drops to one talker at 5 s and takes two again at 5.2 s, while
        // B still speaks: B's slot sends what B said while it was away, not again what S heard before.
        var config = RoomConfiguration()
        config.maxActiveTalkers = 2
        config.onsetPause = .milliseconds(1_000)  // the run reaches back over B's pauses, into what S heard
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a, seed: 1), sb = SpeechScript(Voices.c, seed: 5)
        let a = SimulatedParticipant(try h.join("A")) { sa.frame(at: $0, speaking: 0..<9) }
        let b = SimulatedParticipant(try h.join("B")) { sb.frame(at: $0, speaking: 0.5..<9) }
        let s = try h.join("S", publishAudio: false, audioSlots: 2)
        h.run([a, b], from: 0, seconds: 5)
        try h.room.downlinks.setTalkerCount("S", 1, now: h.now, into: h.batch)
        h.run([a, b], from: 5, seconds: 0.2)
        try h.room.downlinks.setTalkerCount("S", 2, now: h.now, into: h.batch)
        h.run([a, b], from: 5.2, seconds: 1)
        let payloads = h.rtp(to: s.subscribe.connection).map { Array($0.packet[$0.header.payloadRange]) }
            .filter { h.payloadSenders[$0] != nil }
        #expect(Set(payloads).count == payloads.count, "\(payloads.count - Set(payloads).count) frames sent twice")
        #expect(h.room.counters.onsetReplays >= 1, "what B said while away is sent")
    }

    @Test func aTalkerWhoStoppedIsNotReplayedToANewListener() throws {
        var config = RoomConfiguration()
        config.maxActiveTalkers = 2
        let h = try RoomHarness(configuration: config)
        let sa = SpeechScript(Voices.a, seed: 1)
        let a = SimulatedParticipant(try h.join("A")) { sa.frame(at: $0, speaking: 0..<2) }
        h.run([a], from: 0, seconds: 3)
        let s = try h.join("S", publishAudio: false, audioSlots: 1)
        h.run([a], from: 3, seconds: 0.2)
        let fromA = h.rtp(to: s.subscribe.connection).filter { p in
            h.payloadSenders[Array(p.packet[p.header.payloadRange])]?.contains("A") == true
        }
        #expect(fromA.count <= 11, "a listener joining after A stopped gets A's room noise, not its last words: \(fromA.count)")
        #expect(h.room.counters.onsetReplays == 0)
    }
}

@Suite struct OnsetBufferTests {
    static func filled(_ levels: [UInt8], first: Int64 = 100, skipping: Set<Int64> = []) -> OnsetBuffer {
        let b = OnsetBuffer(span: .milliseconds(300))
        for (i, level) in levels.enumerated() where !skipping.contains(first + Int64(i)) {
            let ext = first + Int64(i)
            let packet: [UInt8] = [0x80, 111, 0, UInt8(i)] + [UInt8](repeating: 0, count: 8) + [UInt8(i)]
            packet.withUnsafeBytes {
                b.store(extendedSequence: ext, timestamp: UInt32(truncatingIfNeeded: 1_000 + i * 960), level: level, packet: $0,
                        now: .milliseconds(Int64(i) * 20))
            }
        }
        return b
    }

    static func utterance(_ b: OnsetBuffer, at ms: Int64, preroll: Int = 0) -> ClosedRange<Int64>? {
        b.utterance(now: .milliseconds(ms), span: .milliseconds(300), pause: .milliseconds(200), fresh: .milliseconds(100),
                    threshold: 35, margin: 12, preroll: preroll, clockRate: 48_000)
    }

    @Test func theUtteranceStartsAtTheFirstLoudFrameAfterTheLastLongPause() {
        // Quiet, then loud from index 10 with a 3-frame dip (between words) at 13-15.
        let levels: [UInt8] = Array(repeating: 70, count: 10) + [30, 30, 30, 60, 60, 60, 28, 25]
        let b = Self.filled(levels)
        #expect(Self.utterance(b, at: 17 * 20) == 110...117)
        #expect(Self.utterance(b, at: 17 * 20, preroll: 1) == 109...117)
    }

    @Test func itReachesBackNoFurtherThanTheSpan() {
        let b = Self.filled(Array(repeating: 20, count: 30))  // 600 ms of speech
        let run = Self.utterance(b, at: 29 * 20)!
        #expect(run.upperBound == 129 && run.count == 16, "300 ms of RTP time and the newest frame: \(run)")
    }

    @Test func aLongPauseOrAMissingPacketEndsIt() {
        let pause: [UInt8] = [20, 20] + Array(repeating: 80, count: 12) + [20, 20]
        #expect(Self.utterance(Self.filled(pause), at: 15 * 20) == 114...115)
        let lost = Self.filled(Array(repeating: 20, count: 8), skipping: [104])
        #expect(Self.utterance(lost, at: 7 * 20) == 105...107)
    }

    @Test func nothingWhenTheTalkerStoppedOrWasNeverLoud() {
        let stopped = Self.filled([20, 20, 20] + Array(repeating: 80, count: 12))
        #expect(Self.utterance(stopped, at: 14 * 20) == nil, "loud frames only before a pause longer than between words")
        #expect(Self.utterance(Self.filled([20, 20, 20]), at: 2 * 20 + 200) == nil, "its newest packet is stale")
        #expect(Self.utterance(Self.filled(Array(repeating: 60, count: 10)), at: 9 * 20) == nil)
        #expect(Self.utterance(OnsetBuffer(span: .milliseconds(300)), at: 0) == nil, "an empty buffer holds nothing")
    }

    @Test func aPacketLargerThanASlotIsNotKeptAndBreaksTheRun() {
        let b = Self.filled(Array(repeating: 20, count: 6))
        [UInt8](repeating: 1, count: OnsetBuffer.slotSize + 1).withUnsafeBytes {
            b.store(extendedSequence: 103, timestamp: 1_000 + 3 * 960, level: 20, packet: $0, now: .milliseconds(60))
        }
        #expect(b.packet(103) == nil)
        #expect(Self.utterance(b, at: 5 * 20) == 104...105)
        b.clear()
        #expect(b.packet(105) == nil && Self.utterance(b, at: 5 * 20) == nil)
    }
}
