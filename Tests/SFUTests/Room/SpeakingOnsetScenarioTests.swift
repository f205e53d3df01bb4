import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// How soon a talker outside a subscriber's list is heard (issue 15). Its audio is forwarded only once the
/// detector counts it as speaking, so besides the loud frames that takes, it waits for the next evaluation:
/// on the 300 ms election tick that wait alone is 0-300 ms, depending on where in the tick the talker
/// starts. media-core.md's target for a new talker is 150 ms p50 and 300 ms p95.
@Suite struct SpeakingOnsetScenarioTests {
    /// With one slot, A talks for 4 s and falls silent; B starts at 6 s plus `phase` (so at another point of
    /// the election tick each time). Returns, per phase, the time from B's first word to the slot map that
    /// gives the listener B's audio, seconds.
    static func delays(speakingInterval: MonoTime.Interval?) throws -> [Double] {
        var out: [Double] = []
        for phase in stride(from: 0.0, to: 0.3, by: 0.06) {
            var config = RoomConfiguration()
            config.maxActiveTalkers = 1
            if let speakingInterval { config.detector.speakingInterval = speakingInterval }
            let h = try RoomHarness(configuration: config)
            let sa = SpeechScript(Voices.a, seed: 1), sb = SpeechScript(Voices.c, seed: 5)
            let onset = 6 + phase
            let a = SimulatedParticipant(try h.join("A")) { sa.frame(at: $0, speaking: 0..<4) }
            let b = SimulatedParticipant(try h.join("B")) { sb.frame(at: $0, speaking: onset..<9) }
            _ = try h.join("S", publishAudio: false, audioSlots: 1)
            h.run([a, b], from: 0, seconds: 9)
            let start = h.scenarioOrigin + .milliseconds(Int64((onset * 1000).rounded()))
            let heard = try #require(h.talkerEvents(for: "S").first { e in
                e.0 >= start && e.2.contains { $0.kind == .audio && $0.participant == "B" }
            })
            out.append((heard.0 - start).seconds)
        }
        return out
    }

    @Test func aNewTalkerIsHeardSoonerWhenSpeakingIsCheckedBetweenElections() throws {
        let between = try Self.delays(speakingInterval: nil)  // the default
        let onTheTick = try Self.delays(speakingInterval: .milliseconds(300))
        let mean = { (d: [Double]) in d.reduce(0, +) / Double(d.count) }
        #expect(between.max()! <= 0.3, "the slowest onset \(between.max()!) s: over the 300 ms target (\(between))")
        #expect(mean(between) + 0.1 <= mean(onTheTick),
                "checked between elections \(between), on the election tick \(onTheTick): no gain of 100 ms on average")
        #expect(onTheTick.max()! - onTheTick.min()! >= 0.2, "on the tick the wait depends on the phase: \(onTheTick)")
    }
}
