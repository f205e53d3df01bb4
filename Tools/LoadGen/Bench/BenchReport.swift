import Foundation

/// p50 / p99 / p99.9 of a set of samples (nearest rank), and how many there were.
public struct Percentiles: Codable, Sendable, Equatable {
    public var samples: Int
    public var p50: Double?
    public var p99: Double?
    public var p999: Double?

    public init(_ values: [Double]) {
        let sorted = values.sorted()
        samples = sorted.count
        func rank(_ q: Double) -> Double? {
            guard !sorted.isEmpty else { return nil }
            let i = Int((q * Double(sorted.count)).rounded(.up)) - 1
            return sorted[min(max(i, 0), sorted.count - 1)]
        }
        p50 = rank(0.5)
        p99 = rank(0.99)
        p999 = rank(0.999)
    }

    var text: String {
        guard let p50, let p99, let p999 else { return "no samples" }
        return String(format: "p50 %.2f  p99 %.2f  p99.9 %.2f  (%d samples)", p50, p99, p999, samples)
    }
}

/// What one run measured. Rates are per second of the measured window (after the ramp).
public struct BenchReport: Codable, Sendable {
    public var label = "sfu"
    public var plan: BenchPlan
    public var measuredSeconds = 0.0
    public var participants = 0
    public var connected = 0
    public var joinMilliseconds = Percentiles([])
    /// The server's CPU over the window: the scheduler's nanosecond count over its threads (see
    /// `ProcessProbe.cpuSecondsBetween`), or clock ticks when that cannot be read.
    public var nodeCPUSeconds = 0.0
    /// Server threads that ended during the window: their time in it is missing from `nodeCPUSeconds`.
    public var nodeThreadsEnded: Int?
    /// The same from `/proc/<pid>/stat` clock ticks, kept for comparison: at 1 % of a core it is off by 10-30 %.
    public var nodeCPUTickSeconds: Double?
    public var packetsIn: Double = 0
    public var packetsOut: Double = 0
    public var bytesOut: Double = 0
    public var latencyMilliseconds = Percentiles([])
    public var switchDelayMilliseconds = Percentiles([])
    public var expectedPackets: Double = 0
    public var receivedPackets: Double = 0
    public var receivedBytes: Double = 0
    /// The server has no counters of its own (Janus): packets in and out are what the generator sent and
    /// received.
    public var countedByGenerator = false
    /// The SRTP profile the generator's DTLS handshakes chose.
    public var srtpProfile: String?
    public var subscribers = 0
    public var nodeMemoryBytes: Int?
    public var nodeMemoryBeforeBytes: Int?
    public var drops: [String: Double] = [:]
    public var generatorCPUSeconds = 0.0
    /// Subscribers replaced while measuring (churn).
    public var churned = 0
    /// The host's raw UDP send capacity per core at this run's mean packet size (`Baseline`).
    public var baseline: Baseline.Result?
    /// Every datagram the node sent (forwarded RTP, RTCP, probe padding, ICE) and the RTCP it received.
    public var datagramsOut: Double = 0
    public var rtcpIn: Double = 0
    /// The node's libsrtp backend ("openssl (libsrtp2 2.5.0 ...)") and its cost of one protect, ns.
    public var srtpBackend: String?
    public var srtpProtectNanoseconds: Double?
    /// With `record`: the streams the node records at the end, and what it wrote and refused in the window.
    public var recording: Recording?
    public struct Recording: Codable, Sendable {
        public var streams: Double
        public var bytes: Double
        public var refused: Double
    }
    /// Transport-cc feedback packets the subscribers sent, and the probe padding (packets on the video
    /// slots' RTX streams) they received, in the measured window.
    public var transportFeedbackSent = 0
    public var probePacketsReceived: Double = 0
    public var probeBytesReceived: Double = 0
    /// Seconds the node's and the generator's threads were ready but waited for a CPU, over the window: on a
    /// shared machine, how much other work held them back (the node's queues grow meanwhile).
    public var nodeRunQueueWaitSeconds: Double?
    public var generatorRunQueueWaitSeconds: Double?
    /// CPU seconds of the node's media worker threads alone: the forwarding path without the control API,
    /// which here also answers the bench's once-a-second stats requests.
    public var workerCPUSeconds: Double?
    /// The same per worker (worker 0 first), when the node runs more than one.
    public var workerCPUSecondsEach: [Double]?
    /// The subscribers' estimates and number_of_videos, one sample a second (servers that report them).
    public var subscriberSeries: SubscriberSeries?
    /// In a conversation (`BenchPlan.conversation`): what each subscriber missed of the meeting, the metrics
    /// `sfu tune` reports on virtual time.
    public var listeners: [ListenerMetrics]?

    public init(plan: BenchPlan) { self.plan = plan }

    /// Mean size of a forwarded datagram.
    public var meanPacketBytes: Int { packetsOut > 0 ? Int(bytesOut / packetsOut) : 0 }
    /// Packets out per node core-second as a share of the raw UDP sends per core-second.
    public var shareOfBaseline: Double? {
        guard let b = baseline, b.sentPerCoreSecond > 0, let p = packetsOutPerCoreSecond else { return nil }
        return p / b.sentPerCoreSecond
    }

    public var packetsInPerSecond: Double { rate(packetsIn) }
    public var packetsOutPerSecond: Double { rate(packetsOut) }
    public var bitsOutPerSecond: Double { rate(bytesOut * 8) }
    public var nodeCores: Double { rate(nodeCPUSeconds) }
    /// Node CPU seconds per million forwarded packets.
    public var cpuSecondsPerMillionPackets: Double? { packetsOut > 0 ? nodeCPUSeconds / packetsOut * 1e6 : nil }
    public var packetsOutPerCoreSecond: Double? { nodeCPUSeconds > 0 ? packetsOut / nodeCPUSeconds : nil }
    /// Forwarded packets per CPU-second of the media workers alone.
    public var packetsOutPerWorkerCoreSecond: Double? { workerCPUSeconds.flatMap { $0 > 0 ? packetsOut / $0 : nil } }
    /// Packets the subscribers received per server CPU-second: the figure that compares servers, counted the
    /// same way whatever the server says about itself.
    public var deliveredPerCoreSecond: Double? { nodeCPUSeconds > 0 ? receivedPackets / nodeCPUSeconds : nil }
    public var lossFraction: Double { expectedPackets > 0 ? max(0, 1 - receivedPackets / expectedPackets) : 0 }
    public var downstreamKbpsPerSubscriber: Double { subscribers > 0 ? bitsOutPerSecond / Double(subscribers) / 1000 : 0 }
    public var memoryPerParticipantBytes: Double? {
        guard let after = nodeMemoryBytes, let before = nodeMemoryBeforeBytes, participants > 0 else { return nil }
        return Double(after - before) / Double(participants)
    }
    /// The generator used most of its one thread: the node may have been idle for want of load.
    public var generatorWasBottleneck: Bool { measuredSeconds > 0 && generatorCPUSeconds / measuredSeconds > 0.9 }

    func rate(_ v: Double) -> Double { measuredSeconds > 0 ? v / measuredSeconds : 0 }

    /// The report for people.
    public var text: String {
        var l: [String] = []
        l.append("== \(label): \(plan.rooms) room(s) x \(plan.publishers) publishers (\(plan.speakers) talking) + \(plan.subscribers) subscribers, max_active_talkers \(plan.maxActiveTalkers), \(plan.video ? "audio + VP8 \(plan.videoKbps) kbps \(plan.width)x\(plan.height)@\(plan.fps)\(plan.simulcast ? " in 3 simulcast layers" : "")" : "audio only")\(plan.levelExtension ? "" : ", no level extension"), \(plan.transportCC ? "transport-cc" : "REMB \(plan.rembKbpsEach.map { $0.map(String.init).joined(separator: "/") } ?? String(plan.rembKbps)) kbps")")
        if let backend = srtpBackend {
            l.append("node SRTP        libsrtp on \(backend)" + (srtpProtectNanoseconds.map { String(format: ", %.0f ns per protect (1200 B, AEAD_AES_128_GCM)", $0) } ?? ""))
        }
        l.append(String(format: "connected        %d / %d participants; join %@ ms%@", connected, participants, joinMilliseconds.text,
                        churned > 0 ? String(format: "; %d subscribers replaced while measuring", churned) : ""))
        l.append(String(format: "packets          in %.0f/s, out %.0f/s, %.2f Mbit/s out (%.0f kbit/s per subscriber)%@",
                        packetsInPerSecond, packetsOutPerSecond, bitsOutPerSecond / 1e6, downstreamKbpsPerSubscriber,
                        countedByGenerator ? "; as sent and received by the generator" : ""))
        l.append(String(format: "node CPU         %.3f cores; %@ s per million forwarded packets; %@ packets out per core-second",
                        nodeCores, cpuSecondsPerMillionPackets.map { String(format: "%.2f", $0) } ?? "-",
                        packetsOutPerCoreSecond.map { String(format: "%.0f", $0) } ?? "-"))
        if let worker = workerCPUSeconds, let perCore = packetsOutPerWorkerCoreSecond {
            l.append(String(format: "media workers    %.2f cores; %.0f packets out per worker core-second (without the control API)", rate(worker), perCore))
            if let each = workerCPUSecondsEach {
                l.append("                 by worker: " + each.enumerated().map { String(format: "%d: %.2f", $0, rate($1)) }.joined(separator: ", ") + " cores")
            }
        }
        if let b = baseline, let share = shareOfBaseline {
            l.append(String(format: "vs raw UDP       %.0f %% of the host's %.0f sends per core-second at %d bytes (sendmmsg)", share * 100,
                            b.sentPerCoreSecond, b.packetSize))
        }
        l.append("latency (ms)     \(latencyMilliseconds.text)" + (srtpProfile.map { "; SRTP \($0)" } ?? ""))
        l.append(String(format: "loss             %.3f %% (%.0f of %.0f packets)", lossFraction * 100, max(0, expectedPackets - receivedPackets), expectedPackets))
        l.append("talker switch    \(switchDelayMilliseconds.text) ms (speech onset to dominant speaker event)")
        if let m = nodeMemoryBytes {
            l.append(String(format: "node memory      %.1f MiB%@", Double(m) / 1_048_576,
                            memoryPerParticipantBytes.map { String(format: ", %.1f KiB per participant", $0 / 1024) } ?? ""))
        }
        if let r = recording {
            l.append(String(format: "recording        %.0f streams, %.2f Mbit/s written, %.0f packets refused (queue full)",
                            r.streams, rate(r.bytes * 8) / 1e6, r.refused))
        }
        if datagramsOut > 0 {
            l.append(String(format: "node datagrams   out %.0f/s (forwarded RTP plus RTCP, probes, ICE); RTCP in %.0f/s", rate(datagramsOut), rate(rtcpIn)))
        }
        if transportFeedbackSent > 0 || probePacketsReceived > 0 {
            l.append(String(format: "transport-cc     subscribers sent %.0f feedback/s; received %.0f probe packets/s (%.0f kbit/s, %.1f kbit/s per subscriber)",
                            rate(Double(transportFeedbackSent)), rate(probePacketsReceived), rate(probeBytesReceived * 8) / 1000,
                            subscribers > 0 ? rate(probeBytesReceived * 8) / 1000 / Double(subscribers) : 0))
        }
        if let listeners, !listeners.isEmpty { l += listenerLines(listeners) }
        if let series = subscriberSeries { l += series.text }
        if let layers = layerShares { l += layers }
        l.append("drops            " + (drops.isEmpty ? "none" : drops.sorted { $0.key < $1.key }.map { "\($0.key)=\(Int($0.value))" }.joined(separator: " ")))
        if let node = nodeRunQueueWaitSeconds {
            l.append(String(format: "waiting for CPU  node %.0f ms/s, generator %@ (runnable but not running: other work on their cores)",
                            rate(node) * 1000, generatorRunQueueWaitSeconds.map { String(format: "%.0f ms/s", rate($0) * 1000) } ?? "-"))
        }
        l.append(String(format: "generator CPU    %.2f cores%@", rate(generatorCPUSeconds), generatorWasBottleneck ? " - THE GENERATOR WAS THE BOTTLENECK: the node was not loaded to its limit" : ""))
        return l.joined(separator: "\n")
    }

    /// Which simulcast layers subscribers were shown (share of video slot samples, lowest layer first): for all
    /// of them, and by REMB figure when the plan gives subscribers several.
    var layerShares: [String]? {
        guard plan.simulcast, let series = subscriberSeries else { return nil }
        func line(_ counts: [Int: Int]) -> String {
            let total = max(1, counts.values.reduce(0, +))
            return counts.sorted { $0.key < $1.key }.map { String(format: "layer %d %.0f %%", $0.key, Double($0.value) * 100 / Double(total)) }
                .joined(separator: ", ") + " (\(counts.values.reduce(0, +)) slot samples)"
        }
        var l = ["simulcast        layers shown: " + line(series.layerCounts())]
        if !plan.transportCC, let each = plan.rembKbpsEach {
            for kbps in Set(each).sorted() {
                // Subscriber ids are "room/subN"; the Nth subscriber of a room sends `rembKbps(subscriber: N)`.
                let counts = series.layerCounts { id in
                    id.split(separator: "/").last.flatMap { Int($0.dropFirst(3)) }.map { plan.rembKbps(subscriber: $0) == kbps } ?? false
                }
                l.append(String(format: "                 REMB %5d kbit/s: ", kbps) + line(counts))
            }
        }
        return l
    }

    /// The report as JSON, with the derived figures next to the raw ones.
    public var json: [String: Any] {
        let encoded = (try? JSONSerialization.jsonObject(with: JSONEncoder().encode(self))) as? [String: Any] ?? [:]
        var out = encoded
        out["packets_in_per_second"] = packetsInPerSecond
        out["packets_out_per_second"] = packetsOutPerSecond
        out["bits_out_per_second"] = bitsOutPerSecond
        out["node_cores"] = nodeCores
        out["cpu_seconds_per_million_packets"] = cpuSecondsPerMillionPackets ?? NSNull()
        out["packets_out_per_core_second"] = packetsOutPerCoreSecond ?? NSNull()
        out["delivered_per_core_second"] = deliveredPerCoreSecond ?? NSNull()
        out["loss_fraction"] = lossFraction
        out["downstream_kbps_per_subscriber"] = downstreamKbpsPerSubscriber
        out["memory_per_participant_bytes"] = memoryPerParticipantBytes ?? NSNull()
        out["generator_was_bottleneck"] = generatorWasBottleneck
        out["mean_packet_bytes"] = meanPacketBytes
        out["share_of_baseline"] = shareOfBaseline ?? NSNull()
        out["worker_cores"] = workerCPUSeconds.map { rate($0) } ?? NSNull()
        out["worker_cores_each"] = workerCPUSecondsEach.map { $0.map(rate) } ?? NSNull()
        out["packets_out_per_worker_core_second"] = packetsOutPerWorkerCoreSecond ?? NSNull()
        out["node_wait_ms_per_second"] = nodeRunQueueWaitSeconds.map { rate($0) * 1000 } ?? NSNull()
        out["generator_wait_ms_per_second"] = generatorRunQueueWaitSeconds.map { rate($0) * 1000 } ?? NSNull()
        if let series = subscriberSeries,
           let summary = (try? JSONSerialization.jsonObject(with: JSONEncoder().encode(series.summary))) {
            out["subscriber_summary"] = summary
        }
        if plan.simulcast, let series = subscriberSeries {
            out["simulcast_layer_samples"] = Dictionary(uniqueKeysWithValues: series.layerCounts().map { (String($0.key), $0.value) })
        }
        return out
    }
}

/// Line charts of a sweep as one SVG: one panel per figure, the swept values along x.
public enum SweepChart {
    public static func svg(key: String, values: [String], series: [(title: String, points: [Double])]) -> String {
        let panelW = 360.0, panelH = 220.0, margin = 50.0
        let width = Double(series.count) * (panelW + margin) + margin, height = panelH + 2 * margin
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        for (i, serie) in series.enumerated() {
            let x0 = margin + Double(i) * (panelW + margin), y0 = margin
            let top = max(serie.points.max() ?? 1, 1e-9) * 1.1
            func px(_ j: Int) -> Double { x0 + (values.count > 1 ? Double(j) / Double(values.count - 1) * panelW : panelW / 2) }
            func py(_ v: Double) -> Double { y0 + panelH - v / top * panelH }
            s += "<text x=\"\(x0)\" y=\"\(y0 - 12)\" font-weight=\"bold\">\(escape(serie.title))</text>\n"
            s += "<line x1=\"\(x0)\" y1=\"\(y0 + panelH)\" x2=\"\(x0 + panelW)\" y2=\"\(y0 + panelH)\" stroke=\"black\"/>\n"
            s += "<line x1=\"\(x0)\" y1=\"\(y0)\" x2=\"\(x0)\" y2=\"\(y0 + panelH)\" stroke=\"black\"/>\n"
            s += "<text x=\"\(x0 - 4)\" y=\"\(y0 + 4)\" text-anchor=\"end\">\(format(top))</text>\n"
            s += "<text x=\"\(x0 - 4)\" y=\"\(y0 + panelH)\" text-anchor=\"end\">0</text>\n"
            let path = serie.points.enumerated().map { "\(String(format: "%.1f", px($0.offset))),\(String(format: "%.1f", py($0.element)))" }.joined(separator: " ")
            s += "<polyline fill=\"none\" stroke=\"#1f6feb\" stroke-width=\"2\" points=\"\(path)\"/>\n"
            for (j, v) in serie.points.enumerated() {
                s += "<circle cx=\"\(String(format: "%.1f", px(j)))\" cy=\"\(String(format: "%.1f", py(v)))\" r=\"3\" fill=\"#1f6feb\"><title>\(escape(values[j])): \(format(v))</title></circle>\n"
                s += "<text x=\"\(String(format: "%.1f", px(j)))\" y=\"\(y0 + panelH + 16)\" text-anchor=\"middle\">\(escape(values[j]))</text>\n"
            }
            s += "<text x=\"\(x0 + panelW / 2)\" y=\"\(y0 + panelH + 34)\" text-anchor=\"middle\">\(escape(key))</text>\n"
        }
        return s + "</svg>\n"
    }

    static func format(_ v: Double) -> String { v >= 100 ? String(format: "%.0f", v) : String(format: "%.2f", v) }
    static func escape(_ s: String) -> String { s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;") }
}
