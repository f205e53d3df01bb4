import Foundation

/// The node against a peer SFU under one plan in one session: packets the subscribers received per server
/// CPU-second (counted by the generator for both, so neither server's own bookkeeping decides), loss,
/// latency and memory, side by side.
public struct BenchComparison: Sendable {
    public var ours: BenchReport
    public var theirs: BenchReport

    public init(ours: BenchReport, theirs: BenchReport) {
        self.ours = ours
        self.theirs = theirs
    }

    /// How many times the peer's delivered packets per CPU-second the node reached.
    public var efficiencyRatio: Double? {
        guard let a = ours.deliveredPerCoreSecond, let b = theirs.deliveredPerCoreSecond, b > 0 else { return nil }
        return a / b
    }

    /// The node lost no more than the peer (to within one packet in ten thousand).
    public var noMoreLoss: Bool { ours.lossFraction <= theirs.lossFraction + 0.0001 }

    public var text: String {
        var l = ["server | delivered packets/s | server CPU (cores) | delivered per CPU-second | loss % | latency p50 / p99 ms | memory MiB"]
        for r in [ours, theirs] {
            let delivered = r.measuredSeconds > 0 ? r.receivedPackets / r.measuredSeconds : 0
            l.append(String(format: "%@ | %.0f | %.3f | %@ | %.3f | %@ / %@ | %@", r.label, delivered, r.nodeCores,
                            r.deliveredPerCoreSecond.map { String(format: "%.0f", $0) } ?? "-", r.lossFraction * 100,
                            r.latencyMilliseconds.p50.map { String(format: "%.2f", $0) } ?? "-",
                            r.latencyMilliseconds.p99.map { String(format: "%.2f", $0) } ?? "-",
                            r.nodeMemoryBytes.map { String(format: "%.1f", Double($0) / 1_048_576) } ?? "-"))
        }
        if let ratio = efficiencyRatio {
            l.append(String(format: "%@ delivers %.1fx %@'s packets per CPU-second, with %@ loss", ours.label, ratio, theirs.label,
                            noMoreLoss ? "no more" : "MORE"))
        }
        return l.joined(separator: "\n")
    }
}
