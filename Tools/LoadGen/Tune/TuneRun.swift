import Foundation
import SFU
import SFUMedia
import SFUSimulation

/// Plays one scripted meeting through the real `Room` on virtual time and measures, for each K, what a
/// listener received.
///
/// Who listens: one listen-only observer per K (it publishes nothing, so it is never a talker candidate and
/// changes no decision). By default all observers share one room whose max_active_talkers is the largest K,
/// each asking for K talkers (the per-subscriber talker count of the control API): the room's talker lists are
/// built from one recency order and one detector for every subscriber, and a subscriber's list length is
/// min(max_active_talkers, its own count, its slots) - so an observer asking for K hears exactly what it would
/// hear in a room set to K. What is shared is the keyframe requests (one per source for every subscriber
/// switching to it), so the room's keyframe count is per run, not per K; `roomPerK` runs a room per K instead
/// (slower by the number of K values) when that count matters. The meeting's own participants publish but
/// subscribe to nothing: every subscriber's list comes from the same order, so observers suffice.
public final class TuneRun {
    public let plan: TunePlan
    public let script: ConversationScript
    let media: ConversationMedia
    let video: [VP8Frame]

    public struct Result: Sendable {
        public var k: Int
        public var metrics: ListenerMetrics
        /// Keyframe requests the room sent publishers in the room this K ran in (shared by all K unless
        /// `roomPerK`).
        public var roomKeyframeRequests: Int
    }

    public init(plan: TunePlan, script: ConversationScript, media: ConversationMedia) {
        self.plan = plan
        self.script = script
        self.media = media
        if plan.video {
            let encoder = VP8FrameEncoder(width: 640, height: 360, bitrateKbps: plan.videoKbps, fps: 25)
            video = (0..<50).map { encoder.next(keyframe: $0 == 0) }
        } else {
            video = []
        }
    }

    public func run(progress: (String) -> Void = { _ in }) throws -> [Result] {
        if plan.roomPerK {
            return try plan.ks.flatMap { k in try runRoom(maxActiveTalkers: k, observers: [k], progress: progress) }
        }
        return try runRoom(maxActiveTalkers: plan.ks.max()!, observers: plan.ks, progress: progress)
    }

    /// Receives what the harness delivers: observers' packets into their tallies, RTCP to publishers.
    final class Collector {
        var tallies: [ListenerTally] = []
        var observerOf: [ConnectionID: Int] = [:]
        var publisherOf: [ConnectionID: ScriptedPublisher] = [:]

        func receive(_ connection: ConnectionID, _ plain: [UInt8]) {
            if let i = observerOf[connection] {
                tallies[i].receive(plain)
            } else if let p = publisherOf[connection], plain.withUnsafeBytes({ isRTCP($0) }) {
                p.receiveRTCP(plain)
            }
        }
    }

    func runRoom(maxActiveTalkers: Int, observers ks: [Int], progress: (String) -> Void) throws -> [Result] {
        var config = RoomConfiguration()
        config.maxActiveTalkers = maxActiveTalkers
        config.levelSource = plan.levelSource
        config.detector = plan.detector
        config.sustainedSpeech = plan.sustainedSpeech
        config.onsetReplay = plan.onsetReplay
        config.onsetPause = plan.onsetPause
        let h = try RoomHarness(configuration: config, name: "tune")
        h.keepReceived = false
        h.nullCipher = plan.nullCipher
        let collector = Collector()
        h.onReceive = collector.receive
        var publishers: [ScriptedPublisher] = []
        for i in script.joinOrder(seed: plan.conversation.seed) {
            let person = script.participants[i]
            let m = try h.join(person.id, publishVideo: plan.video, levelExtension: plan.levelSource == .extension, audioSlots: 0)
            let p = ScriptedPublisher(index: i, member: m, person: person, sound: media.sound(of: person), video: video)
            publishers.append(p)
            collector.publisherOf[m.publish.connection] = p
        }
        var listeners: [RoomHarness.Member] = []
        for k in ks {
            let videos = plan.video ? min(k, plan.maxVideos) : 0
            let m = try h.join("observer-k\(k)", publishAudio: false, audioSlots: k, videoSlots: videos,
                               talkerCount: ks.count > 1 ? k : nil)
            let base = m.audio.ssrc - 1
            collector.observerOf[m.subscribe.connection] = listeners.count
            collector.tallies.append(ListenerTally(publishers: script.participants.count, frames: script.frames,
                                                   audioSlotSSRCs: (0..<k).map { base + 0x100 + UInt32($0) },
                                                   videoSlotSSRCs: (0..<videos).map { base + 0x200 + UInt32($0) }))
            listeners.append(m)
        }
        var remb = [UInt8](repeating: 0, count: 64)
        let rembLength = remb.withUnsafeMutableBytes {
            REMB(senderSSRC: 0x5EE, bitrate: UInt64(plan.downlinkKbps) * 1000, ssrcs: []).write(into: $0)
        }!
        let origin = h.scenarioOrigin
        let minute = Int(60 / ConversationParameters.frameSeconds)
        for f in 0..<script.frames {
            h.advance(to: origin + .milliseconds(Int64(f) * 20))
            if f % 50 == 0 {
                for l in listeners { h.send(Array(remb[0..<rembLength]), from: l.subscribe) }
            }
            for p in publishers { p.step(h, frame: f) }
            if f > 0, f % (10 * minute) == 0 { progress("  K \(ks.map(String.init).joined(separator: ",")): \(f / minute) of \(script.frames / minute) minutes") }
        }
        h.advance(to: origin + .milliseconds(Int64(script.frames) * 20 + 500))
        let threshold = Int((plan.intrusionThresholdSeconds / ConversationParameters.frameSeconds).rounded())
        let keyframes = Int(h.room.counters.keyframeRequestsSent)
        return ks.indices.map { i in
            Result(k: ks[i], metrics: ListenerMetrics(collector.tallies[i], script: script, intrusionThreshold: threshold),
                   roomKeyframeRequests: keyframes)
        }
    }
}
