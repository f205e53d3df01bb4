import ArgumentParser
import Foundation
import LoadGen
import SFU

/// Tuning max_active_talkers: a simulated meeting through the real room on virtual time, once, measured for
/// each K at listen-only observers; what listeners miss next to what each K costs, and the smallest K that
/// reaches the target coverage.
struct TuneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tune",
        abstract: "Compare max_active_talkers values on a simulated meeting: speech listeners miss against bandwidth.",
        discussion: """
            The meeting starts from --preset (\(ConversationPreset.allCases.map(\.rawValue).joined(separator: ", "))), then \
            --scenario FILE (key = value lines, as for `sfu bench`; a `preset` line applies first), then --set key=value. \
            Keys: \(TunePlan.keys.map(\.key).joined(separator: ", ")). docs/conversation-model.md describes the model and \
            the metrics.
            """
    )

    @Option(help: "A named meeting shape: standup, discussion, lecture or webinar.") var preset: String?
    @Option(help: "A scenario file: key = value lines.") var scenario: String?
    @Option(name: .customLong("set"), help: "One key, e.g. --set participants=50 (repeatable).") var overrides: [String] = []
    @Option(help: "max_active_talkers values, e.g. 1-12 or 1,2,4,6.") var ks: String?
    @Option(help: "Coverage the recommended K must reach, percent.") var targetCoverage: Double?
    @Option(help: "Write the chart (SVG) here.") var chart: String?
    @Option(help: "Write the report as JSON here.") var json: String?
    @Option(help: "key=v1,v2,... : one tune per value (e.g. talkers=2,4,8,16) and a table of the K each recommends; charts go to --chart with the value before the extension.")
    var sweep: String?

    func run() throws {
        var plan = TunePlan()
        do {
            if let preset { try plan.set("preset", preset) }
            try plan.configure(scenario: scenario, overrides: overrides)
            if let ks { try plan.set("ks", ks) }
            if let targetCoverage { try plan.set("target_coverage", String(targetCoverage / 100)) }
            try plan.conversation.validate()
        } catch let e as TunePlan.Invalid {
            throw ValidationError(e.description)
        }
        var runs: [(value: String, plan: TunePlan)] = [("", plan)]
        var sweepKey: String?
        if let sweep {
            do { (sweepKey, runs) = try plan.sweep(sweep) } catch { throw ValidationError(error.description) }
        }
        print("tune: synthesising and encoding speech (espeak-ng, libopus)")
        var media: [LevelSource: ConversationMedia] = [:]
        var reports: [(value: String, report: TuneReport)] = []
        for (value, p) in runs {
            if let sweepKey { print("\n== \(sweepKey) = \(value)") }
            if media[p.levelSource] == nil { media[p.levelSource] = try ConversationMedia(encodeGains: p.levelSource == .decode) }
            let report = try tune(p, media: media[p.levelSource]!)
            print(report.text, terminator: "")
            if let chart {
                let path = sweepKey == nil ? chart : TuneSweep.chartPath(chart, value: value)
                try TuneChart.svg(report).write(toFile: path, atomically: true, encoding: .utf8)
                print("chart: \(path)")
            }
            reports.append((value, report))
        }
        let output: [String: Any]
        if let sweepKey {
            let summary = TuneSweep(key: sweepKey, runs: reports)
            print("\n" + summary.text, terminator: "")
            output = summary.json
        } else {
            output = reports[0].report.json
        }
        if let json {
            try JSONSerialization.data(withJSONObject: output, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: json))
            print("json: \(json)")
        }
    }

    /// One meeting through the room for every K of `plan`.
    private func tune(_ plan: TunePlan, media: ConversationMedia) throws -> TuneReport {
        let start = Date()
        let script = ConversationModel.generate(plan.conversation, voices: media.voiceCount, backchannelFrames: media.backchannelFrames)
        let statistics = ConversationStatistics(script)
        print("tune: \(plan.conversation.participants) participants, \(statistics.talkers) of them talk; running \(String(format: "%.0f", plan.conversation.minutes)) minutes through the room for K = \(plan.ks.map(String.init).joined(separator: ","))")
        let results = try TuneRun(plan: plan, script: script, media: media).run { print($0) }
        print("tune: \(media.framesEncoded) Opus frames encoded so far")
        return TuneReport(plan: plan, statistics: statistics, results: results, elapsedSeconds: Date().timeIntervalSince(start), script: script)
    }
}
