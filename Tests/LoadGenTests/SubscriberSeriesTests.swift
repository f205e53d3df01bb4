import Foundation
@testable import LoadGen
import SFU
import Testing
import WebRTCEdge

/// What the bench reports beside throughput (issue 13 and 12): the subscribers' estimates and number_of_videos
/// over time, the node's SRTP backend, how long the node waited for a CPU, and the plan keys for transport-cc.
@Suite struct SubscriberSeriesTests {
    func sample(_ mbps: Double?, _ videos: Int?) -> SubscriberSample { SubscriberSample(estimate: mbps.map { $0 * 1e6 }, videos: videos) }

    @Test func theSummaryTakesTheLastSampleAndCountsChanges() {
        var s = SubscriberSeries()
        s.append(at: 0, ["r/a": sample(1, 1), "r/b": sample(2, 1)])
        s.append(at: 1, ["r/a": sample(3, 4), "r/b": sample(2, 1), "r/c": sample(9, 4)])
        s.append(at: 2, ["r/a": sample(3, 3), "r/b": sample(5, 2), "r/c": sample(9, 4)])
        s.append(at: 3, ["r/a": sample(4, 4), "r/b": sample(6, 2)])  // c left (churn)
        #expect(s.seconds == [0, 1, 2, 3])
        #expect(s.subscribers["r/c"]?.estimates == [nil, 9e6, 9e6, nil], "absent before it joined and after it left")
        let m = s.summary
        #expect(m.subscribers == 2)
        #expect(m.estimateMin == 4e6 && m.estimateMax == 6e6 && m.estimateMedian == 5e6)
        #expect(m.videosAtEnd == [4: 1, 2: 1])
        // a: 1 -> 4 -> 3 -> 4 (3 changes), b: 1 -> 1 -> 2 -> 2 (1), c: none.
        #expect(m.changesMax == 3 && m.subscribersThatChanged == 2 && abs(m.changesMean - 4.0 / 3) < 1e-12)
        #expect(m.medianEstimateBySample == [1.5e6, 3e6, 5e6, 5e6])
        #expect(m.meanVideosBySample == [1, 3, 3, 3])
        #expect(s.text.first == "estimates        at the end, 2 subscribers: min 4.00, median 5.00, max 6.00 Mbit/s")
        #expect(s.text[2].hasPrefix("number_of_videos at the end: 4 x 1, 2 x 1; changes per subscriber: mean 1.33, max 3 (2 of 3 changed)"))
    }

    @Test func anEmptySeriesHasNoFigures() {
        let m = SubscriberSeries().summary
        #expect(m.subscribers == 0 && m.estimateMedian == nil && m.videosAtEnd.isEmpty && SubscriberSeries().text.isEmpty)
        #expect(SubscriberSeries.median([1, 2, 3, 10]) == 2.5 && SubscriberSeries.median([]) == nil)
    }

    @Test func theLayersShownAreCountedPerSubscriberAndByREMBFigure() {
        let reply: [String: Any] = ["result": 0, "participants": [
            ["participant": "sub0", "bandwidth_estimate": 300_000, "number_of_videos": 2,
             "slots": [["kind": "audio", "layer": NSNull()], ["kind": "video", "layer": 0], ["kind": "video", "layer": 0]]],
            ["participant": "sub1", "bandwidth_estimate": 5_000_000, "number_of_videos": 2,
             "slots": [["kind": "video", "layer": 2], ["kind": "video", "layer": NSNull()]]],
        ]]
        var series = SubscriberSeries()
        series.append(at: 0, NodeServer.subscriberSamples(reply, room: "bench-0"))
        series.append(at: 1, NodeServer.subscriberSamples(reply, room: "bench-0"))
        #expect(series.layerCounts() == [0: 4, 2: 2], "slots without a simulcast source are not counted")
        var plan = BenchPlan()
        try? plan.set("simulcast", "true")
        try? plan.set("transport_cc", "false")
        try? plan.set("remb_kbps", "300/5000")
        #expect(plan.rembKbps(subscriber: 0) == 300 && plan.rembKbps(subscriber: 1) == 5000 && plan.rembKbps(subscriber: 2) == 300)
        var report = BenchReport(plan: plan)
        report.subscriberSeries = series
        let lines = report.layerShares ?? []
        #expect(lines.contains { $0.contains("REMB   300 kbit/s: layer 0 100 %") }, "\(lines)")
        #expect(lines.contains { $0.contains("REMB  5000 kbit/s: layer 2 100 %") }, "\(lines)")
        #expect(throws: BenchPlan.Invalid.self) { try plan.set("remb_kbps", "300/x") }
    }

    @Test func theNodesStatsReplyGivesTheBenchsSubscribers() {
        let reply: [String: Any] = ["result": 0, "participants": [
            ["participant": "pub0", "bandwidth_estimate": NSNull(), "number_of_videos": NSNull()],
            ["participant": "sub0", "bandwidth_estimate": 3_500_000, "number_of_videos": 4],
            ["participant": "sub1", "bandwidth_estimate": NSNull(), "number_of_videos": 1],
        ]]
        let samples = NodeServer.subscriberSamples(reply, room: "bench-0")
        #expect(samples == ["bench-0/sub0": SubscriberSample(estimate: 3_500_000, videos: 4),
                            "bench-0/sub1": SubscriberSample(estimate: nil, videos: 1)])
    }

    @Test func theReportShowsTheSeriesAndTheSRTPBackend() throws {
        var r = BenchReport(plan: BenchPlan())
        r.measuredSeconds = 10
        r.srtpBackend = "openssl (libsrtp2 2.5.0)"
        r.srtpProtectNanoseconds = 430
        r.transportFeedbackSent = 1000
        var s = SubscriberSeries()
        s.append(at: 0, ["r/a": sample(3, 4)])
        r.subscriberSeries = s
        #expect(r.text.contains("node SRTP        libsrtp on openssl (libsrtp2 2.5.0), 430 ns per protect"))
        #expect(r.text.contains("transport-cc     subscribers sent 100 feedback/s"))
        #expect(r.text.contains("number_of_videos at the end: 4 x 1"))
        #expect(r.text.hasPrefix("== sfu:") && r.text.components(separatedBy: "\n")[0].hasSuffix(", transport-cc"))
        let json = r.json
        let summary = try #require(json["subscriber_summary"] as? [String: Any])
        #expect((summary["estimateMedian"] as? NSNumber)?.doubleValue == 3e6)
        let series = try #require(json["subscriberSeries"] as? [String: Any])
        #expect((series["subscribers"] as? [String: Any])?["r/a"] != nil)
        // Round trip: the JSON report keeps the full series.
        let data = try JSONSerialization.data(withJSONObject: json)
        #expect(try JSONDecoder().decode(BenchReport.self, from: data).subscriberSeries == s)
    }

    @Test func theReportSaysHowLongTheNodeWaitedForACPU() {
        let t = ProcessProbe.schedstat("8123400000 567800000 9\n")
        #expect(t?.cpu == 8.1234 && t?.wait == 0.5678)
        #expect(ProcessProbe.schedstat("81234") == nil)
        var r = BenchReport(plan: BenchPlan())
        r.measuredSeconds = 10
        #expect(!r.text.contains("waiting for CPU"), "nothing said when it was not measured")
        r.nodeRunQueueWaitSeconds = 1.5
        r.generatorRunQueueWaitSeconds = 0.2
        #expect(r.text.contains("waiting for CPU  node 150 ms/s, generator 20 ms/s"))
        #expect((r.json["node_wait_ms_per_second"] as? Double) == 150)
    }

    @Test func theMediaWorkersCostIsShownApartFromTheControlAPIs() {
        var r = BenchReport(plan: BenchPlan())
        r.measuredSeconds = 10
        r.packetsOut = 1_000_000
        r.nodeCPUSeconds = 5
        #expect(!r.text.contains("media workers"), "a server without named worker threads (Janus) has no such line")
        r.workerCPUSeconds = 4
        #expect(r.text.contains("media workers    0.40 cores; 250000 packets out per worker core-second"))
        #expect((r.json["packets_out_per_worker_core_second"] as? Double) == 250_000 && (r.json["packets_out_per_core_second"] as? Double) == 200_000)
    }

    @Test func metricsLabelsAndValuesAreRead() {
        let text = """
            # TYPE sfu_srtp_backend gauge
            sfu_srtp_backend{backend="openssl",version="libsrtp2 2.5.0"} 1
            sfu_srtp_protect_nanoseconds 431.5
            """
        #expect(MetricsText.label(text, "sfu_srtp_backend", "backend") == "openssl")
        #expect(MetricsText.label(text, "sfu_srtp_backend", "version") == "libsrtp2 2.5.0")
        #expect(MetricsText.value(text, "sfu_srtp_protect_nanoseconds") == 431.5)
        #expect(MetricsText.value(text, "sfu_missing") == nil)
    }
}

extension BenchPlanTests {
    @Test func transportCCIsOnByDefaultAndAKeyOfItsOwn() throws {
        var plan = BenchPlan()
        #expect(plan.transportCC && plan.settleSeconds == 0)
        try plan.set("transport_cc", "false")
        #expect(!plan.transportCC)
        try plan.apply(scenario: "transport_cc = yes\nsettle_seconds = 8")
        #expect(plan.transportCC && plan.settleSeconds == 8)
        #expect(throws: BenchPlan.Invalid(description: "transport_cc must be true or false, got 'maybe'")) { try plan.set("transport_cc", "maybe") }
        #expect(try BenchPlan.sweep("transport_cc=false,true") == ("transport_cc", ["false", "true"]))
        #expect(BenchPlan.keys.contains { $0.key == "transport_cc" } && BenchPlan.keys.contains { $0.key == "settle_seconds" })
    }
}
