import ArgumentParser
import Foundation
import SFU
import SFUMedia
import SFUSimulation

/// Runs a room through the sans-IO engine on virtual time with simulated clients that send real speech
/// (espeak-ng through libopus) and real VP8 (libvpx), over SRTP, and narrates what the engine decides.
struct ScenarioCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenario",
        abstract: "Run a conference room on virtual time and print what the engine decides."
    )

    @Option(help: "Room size: participants besides the moderator (2-12).")
    var participants = 4

    @Option(help: "max_active_talkers of the room (1-12).")
    var maxActiveTalkers = 3

    @Option(help: "Where levels come from: extension, decode or verify.")
    var levelSource: LevelSource = .extension

    @Flag(help: "Print every event, not only talker and slot changes.")
    var verbose = false

    func validate() throws {
        guard (2...12).contains(participants) else { throw ValidationError("--participants must be 2-12") }
        guard RoomConfiguration.maxActiveTalkersRange.contains(maxActiveTalkers) else {
            throw ValidationError("--max-active-talkers must be 1-12")
        }
    }

    func run() throws {
        var config = RoomConfiguration()
        config.maxActiveTalkers = maxActiveTalkers
        config.levelSource = levelSource
        let h = try RoomHarness(configuration: config, name: "demo")
        let lines = [
            "Good morning everyone, let us begin with the quarterly numbers.",
            "Thanks. I have a question about the marketing budget for next year.",
            "I can answer that, the budget grows by ten percent in the spring.",
            "Could we also talk about hiring in the support team please?",
        ]
        let voices = ["en", "en-us", "en-gb-x-rp", "en-us"]
        print("Synthesising speech with espeak-ng ...")
        let moderatorScript = SpeechScript([], seed: 99)
        var people = [SimulatedParticipant(try h.join("moderator", role: .moderator, audioSlots: maxActiveTalkers,
                                                      videoSlots: min(2, maxActiveTalkers))) { moderatorScript.frame(at: $0, speaking: 0..<0) }]
        for i in 0..<participants {
            let speech = try Speech.say(lines[i % lines.count], voice: voices[i % voices.count])
            let script = SpeechScript(speech, seed: UInt64(i + 1))
            let turn = Double(1 + 4 * (i % 4))..<Double(4 + 4 * (i % 4))  // four speakers take turns
            let m = try h.join("p\(i + 1)", publishVideo: true, audioSlots: maxActiveTalkers, videoSlots: min(2, maxActiveTalkers))
            people.append(SimulatedParticipant(m, video: true, levelExtension: levelSource != .decode, seed: UInt8(i + 1)) {
                i < 4 ? script.frame(at: $0, speaking: turn) : script.frame(at: $0, speaking: 0..<0)
            })
        }
        let origin = h.scenarioOrigin
        func clock(_ t: MonoTime) -> String { String(format: "%6.2fs", (t - origin).seconds) }
        var printed = 0
        func narrate() {
            for (t, e) in h.events[printed...] {
                switch e {
                case .dominantSpeaker(let p): print("\(clock(t))  dominant speaker: \(p ?? "(none)")")
                case .activeTalkers(let s, let talkers, let slots) where s == "moderator" || verbose:
                    let list = talkers.map { "\($0.participant)\($0.speaking ? "*" : "")\($0.video ? "[v]" : "")" }
                    let map = slots.map { "\($0.mid)=\($0.participant ?? "-")" }
                    print("\(clock(t))  talkers for \(s): \(list.joined(separator: " "))   slots: \(map.joined(separator: " "))")
                case .activeTalkers: break
                default: if verbose || !isRoutine(e) { print("\(clock(t))  \(e)") }
                }
            }
            printed = h.events.count
        }
        h.keepReceived = true
        func remb(_ kbps: UInt64) {
            var buf = [UInt8](repeating: 0, count: 32)
            let n = buf.withUnsafeMutableBytes { REMB(senderSSRC: 1, bitrate: kbps * 1000, ssrcs: []).write(into: $0) }!
            h.send(Array(buf[0..<n]), from: people[0].member.subscribe)
        }
        h.run(people, from: 0, seconds: 2)
        print("\(clock(h.now))  moderator's client reports 1500 kbps (REMB); stream_bandwidth is \(config.streamBandwidthKbps) kbps")
        remb(1500)
        h.run(people, from: 2, seconds: 7)
        narrate()
        print("\(clock(h.now))  moderator hard-mutes p2 (audio and video)")
        try h.room.moderation.hardMute(by: "moderator", target: "p2", audio: true, video: true, now: h.now, into: h.batch)
        h.flush()
        h.run(people, from: 9, seconds: 8)
        narrate()
        let c = h.room.counters
        print("""

            After \(String(format: "%.0f", (h.now - origin).seconds)) s of virtual time:
              packets in \(c.packetsIn), out \(c.packetsOut) (\(c.rtcpOut) RTCP), keyframe requests \(c.keyframeRequestsSent), \
            retransmissions \(c.retransmissions), dominant speaker changes \(c.dominantSpeakerChanges)
              drops: \(c.drops.nonZero.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
              every datagram decrypted by its client: \(h.undecryptable == 0 ? "yes" : "no, \(h.undecryptable) failed")
            """)
    }

    func isRoutine(_ e: RoomEvent) -> Bool {
        if case .participantState = e { return true }
        return false
    }
}

extension LevelSource: ExpressibleByArgument {}
