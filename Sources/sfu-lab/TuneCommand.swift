import ArgumentParser
import Foundation
import LoadGen

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
        let start = Date()
        print("tune: synthesising and encoding speech (espeak-ng, libopus)")
        let media = try ConversationMedia(encodeGains: plan.levelSource == .decode)
        let script = ConversationModel.generate(plan.conversation, voices: media.voiceCount, backchannelFrames: media.backchannelFrames)
        let statistics = ConversationStatistics(script)
        print("tune: \(plan.conversation.participants) participants, \(statistics.talkers) of them talk; running \(String(format: "%.0f", plan.conversation.minutes)) minutes through the room for K = \(plan.ks.map(String.init).joined(separator: ","))")
        let run = TuneRun(plan: plan, script: script, media: media)
        let results = try run.run { print($0) }
        let report = TuneReport(plan: plan, statistics: statistics, results: results, elapsedSeconds: Date().timeIntervalSince(start), script: script)
        print("tune: encoded \(media.framesEncoded) Opus frames once")
        print(report.text, terminator: "")
        if let chart {
            try TuneChart.svg(report).write(toFile: chart, atomically: true, encoding: .utf8)
            print("chart: \(chart)")
        }
        if let json {
            try JSONSerialization.data(withJSONObject: report.json, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: json))
            print("json: \(json)")
        }
    }
}
