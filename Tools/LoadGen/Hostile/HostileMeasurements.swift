import Foundation
import NodeIO
import SFU

/// One scrape of `/metrics`, and differences between two.
struct MetricsSnapshot {
    let text: String
    let drops: [String: Double]

    init(text: String) {
        self.text = text
        drops = MetricsText.drops(text)
    }

    func drop(_ reason: String) -> Int { Int(drops[reason] ?? 0) }
    func sum(_ family: String, label: String? = nil) -> Int { Int(MetricsText.sum(text, family, label: label)) }
    func sumDouble(_ family: String) -> Double { MetricsText.sum(text, family) }

    /// Drops counted since `before`, by reason, non-zero only.
    func dropsSince(_ before: MetricsSnapshot) -> [String: Int] {
        var out: [String: Int] = [:]
        for (reason, v) in drops where Int(v) - before.drop(reason) > 0 { out[reason] = Int(v) - before.drop(reason) }
        return out
    }
}

/// Arrival times of one stream: the longest silence within a window.
struct ArrivalLog {
    private(set) var times: [MonoTime] = []

    mutating func add(_ t: MonoTime) { times.append(t) }

    var count: Int { times.count }

    /// The longest interval in [from, to] without an arrival (the window's edges count as bounds).
    func maxGap(from: MonoTime, to: MonoTime) -> (gap: MonoTime.Interval, packets: Int) {
        var last = from
        var gap = MonoTime.Interval(nanoseconds: 0)
        var packets = 0
        // Arrivals are appended in kernel order; search from the end for the window's start.
        var i = times.count
        while i > 0, times[i - 1] >= from { i -= 1 }
        while i < times.count, times[i] <= to {
            gap = max(gap, times[i] - last)
            last = times[i]
            packets += 1
            i += 1
        }
        return (max(gap, to - last), packets)
    }
}

/// Datagrams the kernel dropped at a local UDP socket because its receive buffer was full (the `drops`
/// column of /proc/net/udp): what a flood costs before the node reads anything.
enum KernelUDPDrops {
    static func count(port: UInt16) -> Int {
        guard let text = ProcFile.read("/proc/net/udp") else { return 0 }
        let suffix = String(format: ":%04X", port)
        var total = 0
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 12, fields[1].hasSuffix(suffix), let drops = Int(fields[fields.count - 1]) else { continue }
            total += drops
        }
        return total
    }
}
