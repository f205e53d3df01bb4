import Foundation

/// The sweep's outcome: per K what listeners missed and what it cost, and the smallest K that reaches the
/// target coverage.
public struct TuneReport: @unchecked Sendable {
    public var plan: TunePlan
    public var statistics: ConversationStatistics
    public var results: [TuneRun.Result]
    /// Seconds of wall-clock time the sweep took (reported, never asserted).
    public var elapsedSeconds: Double?
    /// Who was in the meeting: id, microphone gain, noise, seconds of speech (for the JSON).
    public var people: [[String: Any]] = []

    public init(plan: TunePlan, statistics: ConversationStatistics, results: [TuneRun.Result], elapsedSeconds: Double? = nil,
                script: ConversationScript? = nil) {
        people = (script?.participants ?? []).map {
            ["id": $0.id, "gain_db": $0.gainStep * 3, "noise_dbov": $0.noiseDbov, "publishes_audio": $0.publishesAudio,
             "speech_seconds": Double($0.utterances.reduce(0) { $0 + $1.count }) * ConversationParameters.frameSeconds]
        }
        self.plan = plan
        self.statistics = statistics
        self.results = results.sorted { $0.k < $1.k }
        self.elapsedSeconds = elapsedSeconds
    }

    /// The smallest K whose listener heard at least the target share of the speech.
    public var recommended: TuneRun.Result? { results.first { $0.metrics.coverage >= plan.targetCoverage } }

    public var text: String {
        let s = statistics
        let c = plan.conversation
        var out = String(format: "meeting: %@, %d participants (%d talk), %.0f min; %d turns, talkspurt %.2f s, pause %.2f s, overlap %.0f %% of turn changes (%.0f %% interruptions), %d backchannels, double talk %.1f %% of the time\n",
                         plan.preset.rawValue, c.participants, s.talkers, c.minutes, s.turns, s.meanTalkspurtSeconds, s.meanPauseSeconds,
                         s.overlapShare * 100, s.interruptionShare * 100, s.backchannels, s.doubleTalkShare * 100)
        out += "levels from the \(plan.levelSource.rawValue); video \(plan.video ? "\(plan.videoKbps) kbit/s VP8, up to \(plan.maxVideos) per listener" : "off"); "
        out += plan.roomPerK ? "one room per K" : "one room, one observer per K"
        out += plan.nullCipher ? "; SRTP null cipher" : "; SRTP AES-GCM"
        let d = plan.detector
        out += String(format: "; detector: elections every %.0f ms, speaking checked every %.0f ms at %d samples louder than -%d dBov in 400 ms, floor after %.0f ms; onset replay %.0f ms (pause %.0f ms)\n",
                      d.decisionInterval.seconds * 1000, d.speakingInterval.seconds * 1000, d.speakingMinSamples, Int(d.speakingThreshold),
                      plan.sustainedSpeech.seconds * 1000, plan.onsetReplay.seconds * 1000,
                      plan.onsetPause.seconds * 1000)
        out += "K | coverage % | spurts % | worst talker % | clipped onset p50 / p90 / p95 ms | missed turns | intrusions/min | audio switches/min | video switches/min | keyframe requests | kbit/s per subscriber | packets/s per subscriber\n"
        for r in results {
            let m = r.metrics
            out += String(format: "%d | %.2f | %.2f | %.1f | %@ / %@ / %@ | %d of %d | %.2f | %.2f | %.2f | %d | %.0f | %.0f\n", r.k, m.coverage * 100,
                          m.spurtCoverage * 100, m.worstTalkerCoverage * 100, ms(m.clippedOnsetMedianMs), ms(m.clippedOnsetP90Ms),
                          ms(m.clippedOnsetP95Ms), m.missedTurns, m.turns, m.intrusionsPerMinute, m.audioSwitchesPerMinute, m.videoSwitchesPerMinute,
                          r.roomKeyframeRequests, m.kbps, m.packetsPerSecond)
        }
        if let r = recommended {
            out += String(format: "recommended max_active_talkers: %d (smallest K with coverage >= %.1f %%: %.2f %%, %.0f kbit/s per subscriber)\n",
                          r.k, plan.targetCoverage * 100, r.metrics.coverage * 100, r.metrics.kbps)
        } else if let best = results.max(by: { $0.metrics.coverage < $1.metrics.coverage }) {
            out += String(format: "no K reaches %.1f %% coverage; the best is K = %d with %.2f %%\n", plan.targetCoverage * 100, best.k, best.metrics.coverage * 100)
        }
        if let e = elapsedSeconds { out += String(format: "took %.1f s\n", e) }
        return out
    }

    func ms(_ v: Double?) -> String { v.map { String(format: "%.0f", $0) } ?? "-" }

    public var json: [String: Any] {
        [
            "preset": plan.preset.rawValue,
            "participants": plan.conversation.participants,
            "minutes": plan.conversation.minutes,
            "target_coverage": plan.targetCoverage,
            "recommended_k": recommended.map(\.k) as Any,
            "detector": [
                "decision_interval_ms": plan.detector.decisionInterval.seconds * 1000,
                "speaking_interval_ms": plan.detector.speakingInterval.seconds * 1000,
                "speaking_threshold": Int(plan.detector.speakingThreshold), "speaking_min_samples": plan.detector.speakingMinSamples,
                "hold_min_samples": plan.detector.holdMinSamples,
                "sustained_speech_ms": plan.sustainedSpeech.seconds * 1000,
                "onset_replay_ms": plan.onsetReplay.seconds * 1000,
                "onset_pause_ms": plan.onsetPause.seconds * 1000,
            ],
            "elapsed_seconds": elapsedSeconds as Any,
            "participants_detail": people,
            "results": results.map { r -> [String: Any] in
                let m = r.metrics
                return [
                    "k": r.k, "coverage": m.coverage, "spurt_coverage": m.spurtCoverage, "worst_talker_coverage": m.worstTalkerCoverage,
                    "clipped_onset_p50_ms": m.clippedOnsetMedianMs as Any, "clipped_onset_p90_ms": m.clippedOnsetP90Ms as Any,
                    "clipped_onset_p95_ms": m.clippedOnsetP95Ms as Any,
                    "turns": m.turns, "missed_turns": m.missedTurns, "intrusions_per_minute": m.intrusionsPerMinute,
                    "audio_switches_per_minute": m.audioSwitchesPerMinute, "video_switches_per_minute": m.videoSwitchesPerMinute,
                    "keyframe_requests": r.roomKeyframeRequests, "kbps_per_subscriber": m.kbps, "packets_per_second_per_subscriber": m.packetsPerSecond,
                    "talker_coverage": m.talkerCoverage,
                ]
            },
        ]
    }
}
