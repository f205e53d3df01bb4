import Foundation

/// The tuning chart as one SVG: what each K buys against what it costs. Two panels share the x axis, the
/// bandwidth per subscriber; the left shows speech coverage (with the target as a dashed line), the right the
/// clipped onset (median and 90th percentile). Each point is labelled with its K; the recommended one is red.
public enum TuneChart {
    public static func svg(_ report: TuneReport) -> String {
        let results = report.results
        let panelW = 420.0, panelH = 260.0, margin = 60.0
        let width = 2 * panelW + 3 * margin, height = panelH + 2 * margin + 20
        let xs = results.map(\.metrics.kbps)
        let xMax = max(xs.max() ?? 1, 1) * 1.05
        let recommended = report.recommended?.k
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        let c = report.plan.conversation
        s += "<text x=\"\(margin)\" y=\"20\" font-weight=\"bold\">\(escape("\(report.plan.preset.rawValue): \(c.participants) participants (\(report.statistics.talkers) talk), \(Int(c.minutes)) min; max_active_talkers = K"))</text>\n"
        let coverage = results.map { $0.metrics.coverage * 100 }
        let yMinCoverage = max(0, floor((min(coverage.min() ?? 0, report.plan.targetCoverage * 100) - 5) / 10) * 10)
        let onsetTop = max(results.compactMap(\.metrics.clippedOnsetP90Ms).max() ?? 1, 1) * 1.1
        let panels: [(title: String, lo: Double, hi: Double, series: [(String, String, [Double?])], target: Double?)] = [
            ("speech coverage, %", yMinCoverage, 100, [("coverage", "#1f6feb", coverage.map { $0 })], report.plan.targetCoverage * 100),
            ("clipped onset, ms", 0, onsetTop, [("p50", "#1f6feb", results.map(\.metrics.clippedOnsetMedianMs)),
                                               ("p90", "#8250df", results.map(\.metrics.clippedOnsetP90Ms))], nil),
        ]
        for (i, panel) in panels.enumerated() {
            let x0 = margin + Double(i) * (panelW + margin), y0 = margin
            func px(_ v: Double) -> Double { x0 + v / xMax * panelW }
            func py(_ v: Double) -> Double { y0 + panelH - (v - panel.lo) / max(panel.hi - panel.lo, 1e-9) * panelH }
            s += "<text x=\"\(x0)\" y=\"\(y0 - 12)\" font-weight=\"bold\">\(escape(panel.title))</text>\n"
            s += "<line x1=\"\(x0)\" y1=\"\(y0 + panelH)\" x2=\"\(x0 + panelW)\" y2=\"\(y0 + panelH)\" stroke=\"black\"/>\n"
            s += "<line x1=\"\(x0)\" y1=\"\(y0)\" x2=\"\(x0)\" y2=\"\(y0 + panelH)\" stroke=\"black\"/>\n"
            s += "<text x=\"\(x0 - 4)\" y=\"\(y0 + 4)\" text-anchor=\"end\">\(format(panel.hi))</text>\n"
            s += "<text x=\"\(x0 - 4)\" y=\"\(y0 + panelH)\" text-anchor=\"end\">\(format(panel.lo))</text>\n"
            s += "<text x=\"\(x0 + panelW)\" y=\"\(y0 + panelH + 16)\" text-anchor=\"end\">\(format(xMax))</text>\n"
            s += "<text x=\"\(x0)\" y=\"\(y0 + panelH + 16)\">0</text>\n"
            s += "<text x=\"\(x0 + panelW / 2)\" y=\"\(y0 + panelH + 34)\" text-anchor=\"middle\">kbit/s per subscriber</text>\n"
            if let target = panel.target, target >= panel.lo {
                s += "<line x1=\"\(x0)\" y1=\"\(f(py(target)))\" x2=\"\(x0 + panelW)\" y2=\"\(f(py(target)))\" stroke=\"#cf222e\" stroke-dasharray=\"4 4\"/>\n"
                s += "<text x=\"\(x0 + panelW - 4)\" y=\"\(f(py(target) - 4))\" text-anchor=\"end\" fill=\"#cf222e\">target \(format(target)) %</text>\n"
            }
            for (j, serie) in panel.series.enumerated() {
                let points = zip(xs, serie.2).compactMap { x, y in y.map { (x, $0) } }
                let path = points.map { "\(f(px($0.0))),\(f(py($0.1)))" }.joined(separator: " ")
                s += "<polyline fill=\"none\" stroke=\"\(serie.1)\" stroke-width=\"2\" points=\"\(path)\"/>\n"
                s += "<text x=\"\(x0 + 8)\" y=\"\(y0 + 14 + Double(j) * 14)\" fill=\"\(serie.1)\">\(escape(serie.0))</text>\n"
                for (r, y) in zip(results, serie.2) {
                    guard let y else { continue }
                    let colour = r.k == recommended ? "#cf222e" : serie.1
                    s += "<circle cx=\"\(f(px(r.metrics.kbps)))\" cy=\"\(f(py(y)))\" r=\"3.5\" fill=\"\(colour)\"><title>K = \(r.k): \(format(y)) at \(format(r.metrics.kbps)) kbit/s</title></circle>\n"
                    if j == 0 { s += "<text x=\"\(f(px(r.metrics.kbps)))\" y=\"\(f(py(y) - 8))\" text-anchor=\"middle\" fill=\"\(colour)\">\(r.k)</text>\n" }
                }
            }
        }
        return s + "</svg>\n"
    }

    static func f(_ v: Double) -> String { String(format: "%.1f", v) }
    static func format(_ v: Double) -> String { v >= 100 ? String(format: "%.0f", v) : String(format: "%.1f", v) }
    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
