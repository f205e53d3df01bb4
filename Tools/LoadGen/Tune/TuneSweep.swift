import Foundation

/// `sfu tune --sweep key=v1,v2,...`: one tune per value of a key - the number of people who talk, the
/// meeting's size, a detector parameter - and one table of what each value recommends, so an operator sees how
/// the right K moves with the meeting's shape rather than reading one meeting's table at a time.
public struct TuneSweep: @unchecked Sendable {
    public var key: String
    public var runs: [(value: String, report: TuneReport)]

    public init(key: String, runs: [(value: String, report: TuneReport)]) {
        self.key = key
        self.runs = runs
    }

    public var text: String {
        var out = "\(key) | people (who talk) | recommended K | coverage there % | clipped onset p50 there ms | kbit/s per subscriber there | best coverage % (K)\n"
        for (value, report) in runs {
            let people = "\(report.plan.conversation.participants) (\(report.statistics.talkers))"
            let best = report.results.max { $0.metrics.coverage < $1.metrics.coverage }
            let bestText = best.map { String(format: "%.2f (%d)", $0.metrics.coverage * 100, $0.k) } ?? "-"
            if let r = report.recommended {
                out += String(format: "%@ | %@ | %d | %.2f | %@ | %.0f | %@\n", value, people, r.k, r.metrics.coverage * 100,
                              report.ms(r.metrics.clippedOnsetMedianMs), r.metrics.kbps, bestText)
            } else {
                out += "\(value) | \(people) | none reaches \(String(format: "%.1f", report.plan.targetCoverage * 100)) % | - | - | - | \(bestText)\n"
            }
        }
        return out
    }

    public var json: [String: Any] {
        ["sweep": key, "runs": runs.map { ["value": $0.value, "report": $0.report.json] as [String: Any] }]
    }

    /// Where a run's chart goes: `path` with the value before the extension (`talkers.svg` -> `talkers-8.svg`).
    public static func chartPath(_ path: String, value: String) -> String {
        let url = URL(fileURLWithPath: path)
        let ext = url.pathExtension
        let base = ext.isEmpty ? path : String(path.dropLast(ext.count + 1))
        let safe = value.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" }
        return base + "-" + String(safe) + (ext.isEmpty ? "" : "." + ext)
    }
}
