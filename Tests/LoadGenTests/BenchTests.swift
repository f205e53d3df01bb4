import COpus
import Foundation
@testable import LoadGen
import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge
import Testing

@Suite struct BenchPlanTests {
    @Test func aScenarioFileSetsKeysAndItsErrorsNameTheLine() throws {
        var plan = BenchPlan()
        try plan.apply(scenario: """
            # a video room
            rooms = 2
            publishers = 6   # six cameras
            speakers = 3
            video = true
            video_kbps = "800"
            """)
        #expect(plan.rooms == 2 && plan.publishers == 6 && plan.speakers == 3 && plan.video && plan.videoKbps == 800)
        #expect(plan.participants == 2 * (6 + 10))
        var bad = BenchPlan()
        #expect(throws: BenchPlan.Invalid(description: "line 2: max_active_talkers must be a whole number 1-12, got '13'")) {
            try bad.apply(scenario: "rooms = 1\nmax_active_talkers = 13\n")
        }
        #expect(throws: BenchPlan.Invalid.self) { try bad.apply(scenario: "colour = blue") }
        #expect(throws: BenchPlan.Invalid.self) { try bad.apply(scenario: "rooms 2") }
    }

    @Test func observingTheNodeIsAKeyThatDefaultsOn() throws {
        var plan = BenchPlan()
        #expect(plan.observe)
        try plan.set("observe", "false")
        #expect(!plan.observe)
        #expect(throws: BenchPlan.Invalid.self) { try plan.set("observe", "sometimes") }
    }

    @Test func speakersNeverExceedPublishers() throws {
        var plan = BenchPlan()
        try plan.set("speakers", "9")
        #expect(plan.speakers == plan.publishers)
    }

    @Test func aSweepNamesOneKeyAndValuesThatAreEachValid() throws {
        let (key, values) = try BenchPlan.sweep("max_active_talkers=1,2,4, 6,9,12")
        #expect(key == "max_active_talkers" && values == ["1", "2", "4", "6", "9", "12"])
        #expect(throws: BenchPlan.Invalid.self) { try BenchPlan.sweep("max_active_talkers=1,99") }
        #expect(throws: BenchPlan.Invalid.self) { try BenchPlan.sweep("max_active_talkers=") }
        #expect(throws: BenchPlan.Invalid.self) { try BenchPlan.sweep("1,2,3") }
    }
}

@Suite struct BenchReportTests {
    @Test func percentilesAreNearestRank() {
        let p = Percentiles((1...1000).map(Double.init))
        #expect(p.samples == 1000 && p.p50 == 500 && p.p99 == 990 && p.p999 == 999)
        let few = Percentiles([3, 1, 2])
        #expect(few.p50 == 2 && few.p99 == 3 && few.p999 == 3)
        #expect(Percentiles([]).p50 == nil)
    }

    @Test func ratesCostAndLossComeFromTheMeasuredWindow() {
        var r = BenchReport(plan: BenchPlan())
        r.measuredSeconds = 10
        r.packetsIn = 50_000
        r.packetsOut = 2_000_000
        r.bytesOut = 2_000_000 * 1000
        r.nodeCPUSeconds = 8
        r.subscribers = 20
        r.expectedPackets = 10_000
        r.receivedPackets = 9_990
        r.participants = 24
        r.nodeMemoryBeforeBytes = 50 << 20
        r.nodeMemoryBytes = (50 << 20) + 24 * 40_960
        r.generatorCPUSeconds = 9.5
        #expect(r.packetsOutPerSecond == 200_000 && r.packetsInPerSecond == 5_000)
        #expect(r.nodeCores == 0.8)
        #expect(r.cpuSecondsPerMillionPackets == 4)
        #expect(r.packetsOutPerCoreSecond == 250_000)
        #expect(abs(r.lossFraction - 0.001) < 1e-12)
        #expect(r.downstreamKbpsPerSubscriber == 80_000)
        #expect(r.memoryPerParticipantBytes == 40_960)
        #expect(r.generatorWasBottleneck, "95 % of one thread")
        #expect(r.meanPacketBytes == 1000)
        r.baseline = Baseline.Result(packetSize: 1000, gso: false, seconds: 1, sent: 500_000, received: 500_000,
                                     senderCPUSeconds: 1, receiverCPUSeconds: 1)
        #expect(r.shareOfBaseline == 0.5)
        #expect(r.text.contains("50 % of the host's"))
        #expect(r.json["packets_out_per_core_second"] as? Double == 250_000)
    }

    @Test func theSweepChartHasOnePanelPerFigureAndOnePointPerValue() {
        let svg = SweepChart.svg(key: "max_active_talkers", values: ["1", "2", "4"], series: [
            ("kbit/s", [100, 200, 400]), ("cores", [0.1, 0.2, 0.35]),
        ])
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n"))
        #expect(svg.components(separatedBy: "<circle").count - 1 == 6)
        #expect(svg.components(separatedBy: "<polyline").count - 1 == 2)
    }
}

@Suite struct BenchStampTests {
    @Test func anOpusPacketCarriesTheStampAsPaddingThatDecodersIgnore() throws {
        let encoder = OpusFrameEncoder()
        let frame = encoder.encode(TestSignal.sine(dbfs: -20, seconds: 0.02)[...])
        #expect(frame[0] & 0x03 == 0, "the encoder makes code 0 packets")
        let stamped = BenchStamp.opus(frame, sentAt: 0x0102_0304_0506_0708, publisher: 7)
        #expect(stamped.count == frame.count + 2 + BenchStamp.size)
        let read = stamped.withUnsafeBytes { BenchStamp.read($0) }
        #expect(read?.sentAt == 0x0102_0304_0506_0708 && read?.publisher == 7)
        // libopus decodes both to the same samples: the stamp is padding (RFC 6716 section 3.2.5).
        let plain = try #require(OpusPacketCheck.decode(frame))
        let padded = try #require(OpusPacketCheck.decode(stamped))
        #expect(plain == padded)
    }

    @Test func aVP8PayloadCarriesTheStampAtItsEnd() {
        let payload: [UInt8] = [0x90, 0x80, 0x81, 0x02, 0x03, 0x9D, 0x01, 0x2A]
        let stamped = BenchStamp.vp8(payload, sentAt: 42, publisher: 3)
        #expect(Array(stamped.prefix(payload.count)) == payload)
        #expect(stamped.withUnsafeBytes { BenchStamp.read($0) }.map { [$0.sentAt, UInt64($0.publisher)] } == [42, 3])
        #expect(payload.withUnsafeBytes { BenchStamp.read($0) } == nil)
    }

    @Test func aStampCanCarryTheScriptFrameAPacketBelongsTo() throws {
        let frame: [UInt8] = [0x78, 1, 2, 3]
        let stamped = BenchStamp.opus(frame, sentAt: 77, publisher: 513, frame: 70_000)
        #expect(stamped.count == frame.count + 2 + BenchStamp.framedSize)
        let read = try #require(stamped.withUnsafeBytes { BenchStamp.read($0) })
        #expect(read == BenchStamp.Stamp(sentAt: 77, publisher: 513, frame: 70_000))
        #expect(read.size == BenchStamp.framedSize)
        let before = BenchStamp.vp8([0x10, 0x00], sentAt: 1, publisher: 2, frame: -1)
        #expect(before.withUnsafeBytes { BenchStamp.read($0) }?.frame == Int(UInt32.max), "frame -1: outside every script")
    }
}

@Suite struct BenchConversationPlanTests {
    @Test func aPresetMakesTheBenchPlayAMeetingAndAppliesFirst() throws {
        var plan = BenchPlan()
        try plan.apply(scenario: """
            participants = 6
            subscribers = 3
            preset = standup
            """)
        #expect(plan.preset == "standup")
        #expect(plan.conversation?.participants == 6, "the preset applied first, then the file's participants")
        #expect(plan.conversation?.spurtsPerTurnMean == ConversationPreset.standup.parameters.spurtsPerTurnMean)
        #expect(plan.subscribers == 3)
    }

    @Test func aMeetingKeyAloneStartsFromTheDiscussionAndBadValuesNameTheLine() throws {
        var plan = BenchPlan()
        #expect(plan.conversation == nil, "without meeting keys, publishers take turns at one sentence")
        try plan.set("minutes", "0.5")
        #expect(plan.conversation?.minutes == 0.5)
        #expect(plan.conversation?.participants == ConversationPreset.discussion.parameters.participants)
        #expect(throws: BenchPlan.Invalid(description: "line 2: overlap_share must be a number 0.0-1.0, got '2'")) {
            try plan.apply(scenario: "preset = lecture\noverlap_share = 2\n")
        }
    }
}

/// libopus decoding to PCM, to compare packets.
enum OpusPacketCheck {
    static func decode(_ packet: [UInt8]) -> [Int16]? {
        var error: Int32 = 0
        guard let decoder = opus_decoder_create(48_000, 1, &error), error == OPUS_OK else { return nil }
        defer { opus_decoder_destroy(decoder) }
        var pcm = [Int16](repeating: 0, count: 960)
        let n = packet.withUnsafeBufferPointer { p in opus_decode(decoder, p.baseAddress, Int32(p.count), &pcm, 960, 0) }
        return n > 0 ? Array(pcm[0..<Int(n)]) : nil
    }
}

@Suite struct BenchComparisonTests {
    func report(_ label: String, cpu: Double, received: Double, expected: Double) -> BenchReport {
        var r = BenchReport(plan: BenchPlan())
        r.label = label
        r.measuredSeconds = 10
        r.nodeCPUSeconds = cpu
        r.receivedPackets = received
        r.expectedPackets = expected
        return r
    }

    @Test func serversCompareByWhatTheSubscribersReceivedPerCPUSecond() {
        let ours = report("sfu", cpu: 2, received: 500_000, expected: 500_000)
        let theirs = report("janus", cpu: 5, received: 250_000, expected: 250_500)
        let c = BenchComparison(ours: ours, theirs: theirs)
        #expect(ours.deliveredPerCoreSecond == 250_000 && theirs.deliveredPerCoreSecond == 50_000)
        #expect(c.efficiencyRatio == 5)
        #expect(c.noMoreLoss)
        #expect(c.text.contains("sfu delivers 5.0x janus's packets per CPU-second, with no more loss"))
        #expect(c.text.contains("janus | 25000 | 0.500 | 50000 | 0.200 |"))
    }

    @Test func moreLossThanThePeerIsSaid() {
        let c = BenchComparison(ours: report("sfu", cpu: 1, received: 990, expected: 1000),
                                theirs: report("janus", cpu: 1, received: 1000, expected: 1000))
        #expect(!c.noMoreLoss)
        #expect(c.text.hasSuffix("with MORE loss"))
        #expect(BenchComparison(ours: c.ours, theirs: report("janus", cpu: 0, received: 0, expected: 0)).efficiencyRatio == nil)
    }
}

@Suite struct LoadClientSignallingTests {
    /// What Janus VideoRoom offers a subscriber of one publisher (trimmed from a real offer).
    static let janusOffer = """
        v=0\r
        o=- 1 1 IN IP4 127.0.0.1\r
        s=VideoRoom 1000\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=ice-lite\r
        a=fingerprint:sha-256 B0:60:F4:BB:20:11:C2:0E:E5:CC:C0:59:9A:8D:4C:5D:C6:CE:A6:CD:92:8B:90:48:F2:23:FD:15:44:FE:51:38\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r
        c=IN IP4 127.0.0.1\r
        a=sendonly\r
        a=mid:0\r
        a=rtcp-mux\r
        a=ice-ufrag:4MpG\r
        a=ice-pwd:/cAmfq+4cCIBdJOKTZqzfw\r
        a=setup:actpass\r
        a=rtpmap:111 opus/48000/2\r
        a=candidate:1 1 udp 2015363327 127.0.0.1 59537 typ host\r
        a=end-of-candidates\r
        m=video 9 UDP/TLS/RTP/SAVPF 100 101\r
        c=IN IP4 127.0.0.1\r
        a=sendonly\r
        a=mid:1\r
        a=rtcp-mux\r
        a=ice-ufrag:4MpG\r
        a=ice-pwd:/cAmfq+4cCIBdJOKTZqzfw\r
        a=setup:actpass\r
        a=rtpmap:100 VP8/90000\r
        a=rtpmap:101 rtx/90000\r
        a=fmtp:101 apt=100\r

        """

    @Test func anOfferFromTheServerIsAnsweredRecvonlyWithItsPayloadTypesAsDTLSClient() throws {
        let client = try LoadClient(certificate: DTLSCertificate(commonName: "t"), profile: .subscriber(audio: 1, video: 1))
        let answer = try SessionDescription.parse(client.answer(offer: Self.janusOffer, now: .zero))
        #expect(answer.attribute("group") == "BUNDLE 0 1")
        #expect(answer.media.map(\.kind) == ["audio", "video"])
        #expect(answer.media.map(\.formats) == [["111"], ["100"]])
        #expect(client.videoPayloadType == 100, "the receivers tell video by the offered payload type")
        for m in answer.media {
            #expect(m.has("recvonly") && m.has("rtcp-mux"))
            #expect(m.attribute("setup") == "active")
            #expect(m.values("candidate").first?.contains("127.0.0.1 \(client.socket.local.port) typ host") == true)
        }
        #expect(client.state == .checking)  // ICE started towards 127.0.0.1:59537
    }

    @Test func theServersOwnCheckIsAnsweredWithTheClientsPasswordAndOthersAreNot() throws {
        let client = ICEControllingClient(local: ICECredentials(ufrag: "mine", password: "my-password-of-22-chars"),
                                          remote: ICECredentials(ufrag: "srv", password: "server-password-22chars"))
        // The server checks the client as a controlling client would check the server: USERNAME "mine:srv".
        let server = ICEControllingClient(local: ICECredentials(ufrag: "srv", password: "server-password-22chars"),
                                          remote: ICECredentials(ufrag: "mine", password: "my-password-of-22-chars"))
        let from = TransportAddress("127.0.0.1:40000")!
        let tid = ICEControllingClient.randomTransactionID()
        let request = server.bindingRequest(nominate: false, transactionID: tid)
        let reply = try #require(request.withUnsafeBytes { client.answer(request: $0, from: from) })
        #expect(server.check(response: reply, transactionID: tid) == .success(mapped: from))
        let stranger = ICEControllingClient(local: ICECredentials(ufrag: "srv", password: "server-password-22chars"),
                                            remote: ICECredentials(ufrag: "other", password: "another-password-22chr"))
        #expect(stranger.bindingRequest(nominate: false).withUnsafeBytes { client.answer(request: $0, from: from) } == nil)
    }
}
