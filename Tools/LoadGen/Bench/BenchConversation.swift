import Foundation
import SFU

/// The meeting a conversation-mode `sfu bench` plays over UDP: the same seeded script, voices and join order
/// as `sfu tune` plays on virtual time (`ConversationModel`, `ScriptedVoice`, `ConversationScript.joinOrder`),
/// so that the listener metrics of the two can be set side by side; the bench's subscribers tally what they
/// receive with the tune's `ListenerTally` and `ListenerMetrics`.
public final class BenchConversation: @unchecked Sendable {
    public let parameters: ConversationParameters
    public let script: ConversationScript
    let media: ConversationMedia
    /// Script indices of the participants who publish audio, in the order they join.
    public let joinOrder: [Int]
    /// Utterances shorter than this (frames) that take a slot are intrusions (`TunePlan`'s default, 1 s).
    let intrusionThreshold = Int((TunePlan().intrusionThresholdSeconds / ConversationParameters.frameSeconds).rounded())

    public init(parameters: ConversationParameters, media: ConversationMedia) {
        self.parameters = parameters
        self.media = media
        script = ConversationModel.generate(parameters, voices: media.voiceCount, backchannelFrames: media.backchannelFrames)
        joinOrder = script.joinOrder(seed: parameters.seed)
    }

    /// The microphone of participant `index`.
    func voice(of index: Int) -> ScriptedVoice {
        ScriptedVoice(person: script.participants[index], sound: media.sound(of: script.participants[index]))
    }

    /// How long the measured window lasts: the whole script, and half a second for the last packets to arrive.
    public var seconds: Double { Double(script.frames) * ConversationParameters.frameSeconds + 0.5 }

    /// A tally for a subscriber whose answer named these slots.
    func tally(slots: [(mid: String, kind: String, ssrc: UInt32)]) -> ListenerTally {
        ListenerTally(publishers: script.participants.count, frames: script.frames,
                      audioSlotSSRCs: slots.filter { $0.kind == "audio" }.map(\.ssrc),
                      videoSlotSSRCs: slots.filter { $0.kind == "video" }.map(\.ssrc))
    }

    func metrics(_ tally: ListenerTally) -> ListenerMetrics {
        ListenerMetrics(tally, script: script, intrusionThreshold: intrusionThreshold)
    }

    /// The plan as this meeting makes it: its audio publishers, its talkers, its length.
    func shape(_ plan: BenchPlan) -> BenchPlan {
        var p = plan
        p.publishers = joinOrder.count
        p.speakers = script.talkers
        p.seconds = seconds
        return p
    }
}

extension BenchReport {
    /// What the subscribers missed of the meeting, as `sfu tune` prints it for one K: the median over the
    /// subscribers (they all listen to the same room; they differ only by what the network did), and the
    /// spread of coverage.
    func listenerLines(_ listeners: [ListenerMetrics]) -> [String] {
        func median(_ values: [Double]) -> Double? { ListenerMetrics.percentile(values.sorted(), 0.5) }
        func ms(_ v: Double?) -> String { v.map { String(format: "%.0f", $0) } ?? "-" }
        let coverage = listeners.map(\.coverage)
        let m = listeners[0]
        return [
            String(format: "meeting          %d listeners: coverage %.2f %% (%.2f-%.2f), spurts %.2f %%, clipped onset p50 / p90 / p95 %@ / %@ / %@ ms, missed turns %.0f of %d",
                   listeners.count, median(coverage)! * 100, coverage.min()! * 100, coverage.max()! * 100,
                   median(listeners.map(\.spurtCoverage))! * 100, ms(median(listeners.compactMap(\.clippedOnsetMedianMs))),
                   ms(median(listeners.compactMap(\.clippedOnsetP90Ms))), ms(median(listeners.compactMap(\.clippedOnsetP95Ms))), median(listeners.map { Double($0.missedTurns) })!, m.turns),
            String(format: "                 intrusions %.2f/min, audio switches %.2f/min, video switches %.2f/min, %.0f kbit/s per listener",
                   median(listeners.map(\.intrusionsPerMinute))!, median(listeners.map(\.audioSwitchesPerMinute))!,
                   median(listeners.map(\.videoSwitchesPerMinute))!, median(listeners.map(\.kbps))!),
        ]
    }
}
