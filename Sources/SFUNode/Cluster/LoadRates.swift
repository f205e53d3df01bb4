import SFUBase

/// The datagram and CPU rates a heartbeat reports, from two readings of the workers' counters. Each worker's
/// counters only grow, but the node's sum of them does not: a worker that stops (the node is shutting down) or
/// misses a command's time limit is missing from a reading. So the rates are summed from the workers present in
/// both readings, each difference saturating, and the conversion to an integer cannot trap (issue 40: the
/// wrapped difference of a sum that went down, converted with `Int(Double)`, killed a stopping node).
struct LoadRates: Equatable {
    struct Counts: Equatable, Sendable {
        var datagramsIn: UInt64
        var datagramsOut: UInt64
    }

    /// One reading: when (seconds on a monotonic clock), each worker's counts, the process's CPU seconds.
    struct Reading {
        var at: Double
        var workers: [Int: Counts]
        var cpuSeconds: Double
    }

    var packetsInPerSecond = 0
    var packetsOutPerSecond = 0
    /// Cores used on average between the readings.
    var cpu = 0.0

    init() {}

    init(from earlier: Reading, to later: Reading) {
        let seconds = later.at - earlier.at
        var grewIn: UInt64 = 0, grewOut: UInt64 = 0
        for (worker, now) in later.workers {
            guard let then = earlier.workers[worker] else { continue }
            grewIn &+= now.datagramsIn.growth(since: then.datagramsIn)
            grewOut &+= now.datagramsOut.growth(since: then.datagramsOut)
        }
        packetsInPerSecond = grewIn.perSecond(since: 0, seconds: seconds)
        packetsOutPerSecond = grewOut.perSecond(since: 0, seconds: seconds)
        let used = later.cpuSeconds - earlier.cpuSeconds
        cpu = seconds > 0 && used.isFinite && used > 0 ? used / seconds : 0
    }
}
