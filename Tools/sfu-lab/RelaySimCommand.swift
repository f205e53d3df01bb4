import ArgumentParser
import Foundation
import SFU
import SFUMedia
import SFUSimulation

/// A room spanning two nodes on virtual time (the engine's relays, docs/cluster.md): what crosses between the
/// nodes as the room grows at a fixed K, against relaying every publisher, and whether listeners on the two
/// nodes see the same talkers.
struct RelaySimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-sim",
        abstract: "Measure a room across two nodes on virtual time: relay packets per second at a fixed K, ranking agreement.",
        discussion: """
            Half the publishers on each node, talking 1.5 s each in turn (a new talker every 0.5 s, in a seeded \
            random order; up to three at once; in a room with more publishers than the run has turns, the rest \
            stay silent), Opus at 50 packets a second with the audio level extension. A \
            listener on each node takes K audio slots. Node B follows node A's ranking (the home) unless \
            --own-ranking. Reports RTP packets per second over the relays (both ways) against relaying every \
            publisher, the share of 100 ms samples at which the two listeners' talker lists were the same, and how \
            much later the remote listener's list showed a new talker than the local one's. The lists compared are \
            the talkers (the entries speaking, in order): the rest of a list is filled with silent participants, and \
            a node can list only those whose media it has.
            """
    )

    @Option(help: "Room sizes (publishers, split over the two nodes), comma-separated.") var publishers = "10,50,100,200"
    @Option(help: "max_active_talkers.") var maxActiveTalkers = 4
    @Option(help: "Virtual seconds per room size.") var seconds = 30.0

    mutating func validate() throws {
        try OptionRanges.require("--seconds", seconds, in: 5...86_400)
        try OptionRanges.require("--max-active-talkers", maxActiveTalkers, in: 1...64)
    }

    @Flag(help: "Node B ranks on its own instead of following node A's ranking.") var ownRanking = false

    func run() throws {
        let sizes = publishers.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !sizes.isEmpty, sizes.allSatisfy({ (2...2000).contains($0) }) else { throw ValidationError("--publishers: sizes of 2-2000") }
        print("relay-sim: K=\(maxActiveTalkers), \(seconds) virtual s per size, node B \(ownRanking ? "ranks on its own" : "follows node A's ranking")")
        print("publishers  relay pkts/s  relaying all  talkers agree  remote list later than local: p50 / p90 / max")
        for n in sizes {
            let r = try Self.measure(publishers: n, k: maxActiveTalkers, seconds: seconds, following: !ownRanking)
            let f = { (x: Double) in String(format: "%.0f", x) }
            print("\(String(n).padding(toLength: 10, withPad: " ", startingAt: 0))  \(f(r.relayPerSecond).padding(toLength: 12, withPad: " ", startingAt: 0))  "
                + "\(f(Double(n) * 50).padding(toLength: 12, withPad: " ", startingAt: 0))  \(String(format: "%5.1f %%", r.agreement * 100))        "
                + "\(r.delays.isEmpty ? "-" : "\(f(r.percentile(0.5))) / \(f(r.percentile(0.9))) / \(f(r.delays.max()!)) ms")")
        }
    }

    struct Result {
        var relayPerSecond: Double
        var agreement: Double
        /// Per turn of a talker on node A: ms between its first listing as speaking on A's listener and on B's.
        var delays: [Double]

        func percentile(_ p: Double) -> Double {
            let s = delays.sorted()
            return s[min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
        }
    }

    static func measure(publishers n: Int, k: Int, seconds: Double, following: Bool) throws -> Result {
        var config = RoomConfiguration()
        config.maxActiveTalkers = k
        config.levelSource = .extension
        let nodes = try RelayedRooms(configuration: config, following: following)
        let (a, b) = (nodes.a, nodes.b)
        a.keepReceived = false
        b.keepReceived = false
        var members = try (0..<n).map { i in try (i % 2 == 0 ? a : b).join("p\(i)", audioSlots: 0) }
        _ = try a.join("LA", publishAudio: false, audioSlots: k)
        _ = try b.join("LB", publishAudio: false, audioSlots: k)
        var rng = SplitMix64(seed: 2611)
        var order = Array(0..<n)
        for i in stride(from: n - 1, to: 0, by: -1) { order.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        var turnStart = [Double](repeating: .infinity, count: n)
        // The first in the order talk in turn; in a room bigger than the run has turns for, the rest are
        // present and silent (what a big meeting is).
        for (slot, who) in order.enumerated() where slot < Int(seconds / 0.5) - 3 { turnStart[who] = 0.5 + Double(slot) * 0.5 }
        func talking(_ i: Int, _ t: Double) -> Bool { t >= turnStart[i] && t < turnStart[i] + 1.5 }
        func speakers(_ h: RoomHarness, _ listener: String) -> [String]? {
            for (_, e) in h.events.reversed() {
                if case .activeTalkers(let s, let talkers, _) = e, s == listener { return talkers.filter(\.speaking).map(\.participant) }
            }
            return nil
        }
        func listedSpeaking(_ h: RoomHarness, _ listener: String, _ who: String) -> Bool {
            for (_, e) in h.events.reversed() {
                if case .activeTalkers(let s, let talkers, _) = e, s == listener { return talkers.contains { $0.participant == who && $0.speaking } }
            }
            return false
        }
        var same = 0, samples = 0
        var seenOnA: [Int: Double] = [:], seenOnB: [Int: Double] = [:]
        let frames = Int(seconds * 50)
        for f in 0..<frames {
            let t = Double(f) * 0.02
            for i in members.indices {
                let packet = members[i].audio.packet([0xF8, 0xFF, 0xFE], level: talking(i, t) ? 10 : 127)
                members[i].audio.timestamp &+= 960
                (i % 2 == 0 ? a : b).send(packet, from: members[i].publish)
            }
            try nodes.step()
            for i in stride(from: 0, to: n, by: 2) where talking(i, t) {
                if seenOnA[i] == nil, listedSpeaking(a, "LA", "p\(i)") { seenOnA[i] = t }
                if seenOnB[i] == nil, listedSpeaking(b, "LB", "p\(i)") { seenOnB[i] = t }
            }
            if f % 5 == 4, t > 1 {
                samples += 1
                if let la = speakers(a, "LA"), la == speakers(b, "LB") { same += 1 }
            }
            // Events are read back only for the newest lists: keep the tail.
            if a.events.count > 4096 { a.trimEvents(keeping: 512) }
            if b.events.count > 4096 { b.trimEvents(keeping: 512) }
        }
        let delays = seenOnA.compactMap { i, ta in seenOnB[i].map { ($0 - ta) * 1000 } }
        return Result(relayPerSecond: Double(nodes.rtpToA + nodes.rtpToB) / seconds, agreement: Double(same) / Double(max(samples, 1)),
                      delays: delays)
    }
}
