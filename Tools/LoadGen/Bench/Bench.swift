import Foundation
import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import Synchronization
import WebRTCEdge

/// One benchmark run against a server (`BenchServer`: this node or Janus): rooms of simulated participants
/// join over the ramp, publishers replay encoded speech (taking turns) and video, subscribers receive their
/// talker slots; then the server's counters (when it has them), CPU and memory and the receivers' samples
/// make the report.
///
/// Receivers count every packet from its clear RTP header (sequence numbers give loss), decrypt every audio
/// packet and one video packet in `sampleEvery` to read the sender's stamp (latency; see `BenchStamp`), and
/// never decode. One thread drives everything; the report says when that thread was the bottleneck.
public struct Bench {
    public let plan: BenchPlan
    public let server: any BenchServer
    let media: MediaLibrary
    let certificate: DTLSCertificate
    /// A simulated meeting the publishers play instead of taking turns (`BenchPlan.conversation`).
    public let conversation: BenchConversation?

    public init(plan: BenchPlan, server: any BenchServer, media: MediaLibrary, conversation: BenchConversation? = nil) throws {
        self.plan = conversation?.shape(plan) ?? plan
        self.server = server
        self.media = media
        self.conversation = conversation
        certificate = try DTLSCertificate(commonName: "bench")
    }

    /// The node's resident memory before the run (set by the caller when it started the node).
    public var baselineRSS: Int?

    public func run(progress: @escaping (String) -> Void) async throws -> BenchReport {
        var report = BenchReport(plan: plan)
        report.label = server.name
        try await server.prepare(plan: plan, rooms: plan.rooms)
        let dominance = Dominance()
        let events = plan.observe ? Task { [server, dominance] in
            await server.watchDominantSpeaker { room, p, ms in dominance.events.withLock { $0.append((room, p, ms)) } }
        } : nil
        defer { events?.cancel() }

        // Who joins, in order, spread over the ramp.
        var members: [Member] = []
        for r in 0..<plan.rooms {
            // A meeting's publishers are its participants, numbered as in its script, joining in its order.
            for p in conversation?.joinOrder ?? Array(0..<plan.publishers) {
                let layers = plan.video && plan.simulcast && !media.layers.isEmpty ? media.layers.count : 0
                var profile = LoadClient.Profile.publisher(audio: true, video: plan.video, levelExtension: plan.levelExtension, simulcastLayers: layers)
                profile.overTCP = plan.overTCP
                let c = try LoadClient(certificate: certificate, profile: profile)
                let m = Member(room: r, index: p, id: conversation.map { $0.script.participants[p].id } ?? "pub\(p)", client: c, receiver: nil)
                m.voice = conversation?.voice(of: p)
                members.append(m)
            }
            for s in 0..<plan.subscribers { members.append(try newSubscriber(room: r, index: s)) }
            for s in 0..<plan.stalledTCPReaders { members.append(try newSubscriber(room: r, index: 10_000 + s, stalls: true)) }
        }
        report.participants = members.count
        report.subscribers = plan.rooms * plan.subscribers
        let start = MonoClock.now()
        let wallStart = Date().timeIntervalSince1970
        var nextJoin = 0
        var joinRetryAt = MonoTime.zero
        var rembTick = start
        let publishers = members.filter { $0.client.publishes }
        let videoInterval = MonoTime.Interval(nanoseconds: 1_000_000_000 / Int64(plan.fps))
        for (k, m) in publishers.enumerated() {
            let phase = Double(k) / Double(max(1, publishers.count))
            m.nextAudio = start + .seconds(0.02 * phase)
            m.nextVideo = start + .seconds(videoInterval.seconds * phase)
        }
        /// Every subscriber that took part (churned ones stay, for their counts).
        var subscribers = members.filter { !$0.client.publishes && !$0.stalls }
        /// Set when the measurement starts: the stalling subscribers are polled no more.
        var stalled = false
        var nextSubscriberIndex = plan.subscribers
        var nextChurn = MonoTime.never
        var churned = 0

        /// Media and polling for everyone connected, until `until`.
        func drive(until: MonoTime, onSecond: ((Double) -> Void)? = nil) async throws {
            var secondTick = MonoClock.now() + .seconds(1)
            while MonoClock.now() < until {
                let now = MonoClock.now()
                if nextJoin < members.count, now >= joinRetryAt, now >= start + .seconds(plan.rampSeconds * Double(nextJoin) / Double(members.count)) {
                    let m = members[nextJoin]
                    m.joinStartedAt = MonoClock.now()
                    do {
                        try await server.join(m.client, id: m.id, room: m.room)
                        nextJoin += 1
                    } catch is BenchServerNotReady {
                        joinRetryAt = now + .milliseconds(50)  // keep the connected clients going meanwhile
                    }
                }
                var busy = false
                let turn = Int(Double((now - start).milliseconds) / 1000 / plan.turnSeconds)
                for m in publishers where now >= m.nextAudio {
                    let due = m.nextAudio
                    m.nextAudio = m.nextAudio + .milliseconds(20)
                    guard m.client.state == .connected else { continue }
                    if m.voice != nil {
                        sendScriptedAudio(m, due: due)
                        busy = true
                        continue
                    }
                    let frame = Int((now - start).milliseconds / 20)
                    let talking = plan.speakers > 0 && m.index < plan.speakers && (turn + m.room) % plan.speakers == m.index
                    let i = frame % (talking ? media.speech.count : media.silence.count)
                    let opus = talking ? media.speech[i] : media.silence[i]
                    let level = talking ? media.speechLevels[min(i, media.speechLevels.count - 1)] : 110
                    m.client.sendAudio(BenchStamp.opus(opus, sentAt: UInt64(MonoClock.now().nanoseconds), publisher: UInt16(m.index)), level: level)
                    busy = true
                }
                if plan.video {
                    for m in publishers where now >= m.nextVideo {
                        m.nextVideo = m.nextVideo + videoInterval
                        guard m.client.state == .connected else { continue }
                        let sentAt = UInt64(MonoClock.now().nanoseconds)
                        let stampFrame = scriptFrame(m, at: now)
                        if m.client.profile.simulcastLayers > 1 {
                            sendSimulcastFrames(m, sentAt: sentAt, frame: stampFrame)
                            busy = true
                            continue
                        }
                        if m.client.keyframeRequested { m.videoFrame = 0; m.client.keyframeRequested = false }
                        let frame = media.video[m.videoFrame % media.video.count]
                        m.videoFrame += 1
                        if m.videoFrame % media.video.count == 0 { m.videoFrame = 1 }  // loop past the keyframe
                        let payloads = m.packetizer.packetize(frame).map { BenchStamp.vp8($0, sentAt: sentAt, publisher: UInt16(m.index), frame: stampFrame) }
                        m.client.sendVideo(payloads, samples: UInt32(90_000 / plan.fps))
                        busy = true
                    }
                }
                if now >= nextChurn {
                    // Churn: a random connected subscriber leaves, a new one joins its room.
                    nextChurn = nextChurn + .seconds(1 / plan.churnPerSecond)
                    if let i = members.indices.filter({ !members[$0].client.publishes && !members[$0].stalls && members[$0].client.state == .connected }).randomElement() {
                        let leaving = members[i]
                        leaving.receiver?.tally = nil
                        await server.leave(leaving.client, id: leaving.id, room: leaving.room)
                        let joining = try newSubscriber(room: leaving.room, index: nextSubscriberIndex)
                        nextSubscriberIndex += 1
                        joining.receiver?.measuring = true
                        members[i] = joining
                        subscribers.append(joining)
                        churned += 1
                        joining.joinStartedAt = MonoClock.now()
                        try await server.join(joining.client, id: joining.id, room: joining.room)
                    }
                }
                if now >= rembTick {
                    rembTick = rembTick + .seconds(1)
                    // Subscribers with transport-cc send its feedback instead (from `poll`, every 100 ms).
                    for m in subscribers where m.client.state == .connected && m.client.transportCCExtensionID == nil {
                        m.client.sendREMB(bitsPerSecond: UInt64(plan.rembKbps(subscriber: m.index)) * 1000)
                    }
                }
                for m in members where m.joinStartedAt != nil && !(stalled && m.stalls) {
                    m.client.poll(now: MonoClock.now())
                    if m.joinedAfter == nil, m.client.state == .connected, let t = m.joinStartedAt {
                        m.joinedAfter = (MonoClock.now() - t).seconds * 1000
                    }
                }
                if let onSecond, MonoClock.now() >= secondTick {
                    secondTick = secondTick + .seconds(1)
                    onSecond((MonoClock.now() - start).seconds)
                }
                if !busy { try await Task.sleep(for: .microseconds(200)) }
            }
        }

        // Ramp: everyone joins; wait up to 10 s more for the last connections.
        try await drive(until: start + .seconds(plan.rampSeconds + 0.5))
        let rampDeadline = MonoClock.now() + .seconds(10)
        while members.contains(where: { $0.client.state != .connected }) && MonoClock.now() < rampDeadline {
            try await drive(until: MonoClock.now() + .milliseconds(100))
        }
        report.connected = members.filter { $0.client.state == .connected }.count
        report.joinMilliseconds = Percentiles(members.compactMap(\.joinedAfter))
        if plan.settleSeconds > 0 { try await drive(until: MonoClock.now() + .seconds(plan.settleSeconds)) }

        // Measure. The subscribers' estimates and number_of_videos are sampled now, then once a second from a
        // task of its own (a request never holds up the media loop), and once more at the end.
        let rooms = plan.rooms
        let firstSample = plan.observe ? await server.subscriberStats(rooms: rooms) : nil
        let before = try await snapshot(countersFirst: true)
        let sentBefore = publishers.reduce(0) { $0 + $1.client.mediaPacketsSent }
        let feedbackBefore = subscribers.reduce(0) { $0 + $1.client.transportFeedbackSent }
        for m in subscribers { m.receiver?.reset() }
        stalled = true
        let measureStart = MonoClock.now()
        if let conversation {
            // Frame 0 of the script is each publisher's next send; each subscriber tallies from now.
            for m in publishers { m.scriptStart = m.nextAudio }
            for m in subscribers { m.receiver?.tally = conversation.tally(slots: m.client.answeredSlots) }
        }
        let recorder = SubscriberSeriesRecorder()
        var poller: Task<Void, Never>?
        if let first = firstSample {
            recorder.series.withLock { $0.append(at: 0, first) }
            let origin = measureStart
            // The last sample is taken at the end, after the window: the poller stops half a second before.
            poller = recorder.run(start: 0, until: plan.seconds - 0.5, clock: { (MonoClock.now() - origin).seconds }) { [server] in
                await server.subscriberStats(rooms: rooms)
            }
        }
        if plan.churnPerSecond > 0 { nextChurn = measureStart + .seconds(1 / plan.churnPerSecond) }
        let measureWallMs = Int64(Date().timeIntervalSince1970 * 1000)
        try await drive(until: measureStart + .seconds(plan.seconds)) { elapsed in
            let got = subscribers.reduce(0) { $0 + ($1.receiver?.received ?? 0) }
            let connected = members.filter { $0.client.state == .connected }.count
            progress(String(format: "  %5.1f s  %d/%d connected  subscribers received %lld packets", elapsed, connected, members.count, got))
        }
        nextChurn = .never
        let after = try await snapshot(countersFirst: false)
        let sent = publishers.reduce(0) { $0 + $1.client.mediaPacketsSent } - sentBefore
        let measured = (MonoClock.now() - measureStart).seconds
        if let poller {
            recorder.stop()
            await poller.value
            if let last = await server.subscriberStats(rooms: rooms) {
                recorder.series.withLock { $0.append(at: (MonoClock.now() - measureStart).seconds, last) }
            }
            report.subscriberSeries = recorder.series.withLock { $0 }
        }
        report.transportFeedbackSent = subscribers.reduce(0) { $0 + $1.client.transportFeedbackSent } - feedbackBefore
        report.probePacketsReceived = Double(subscribers.reduce(0) { $0 + ($1.receiver?.rtxPackets ?? 0) })
        report.probeBytesReceived = Double(subscribers.reduce(0) { $0 + ($1.receiver?.rtxBytes ?? 0) })
        report.churned = churned
        if let conversation {
            // Those who listened to the whole meeting (churn drops the tally of those who leave, and those who
            // join part way never had one).
            report.listeners = subscribers.compactMap { $0.receiver?.tally }.map(conversation.metrics)
        }
        report.joinMilliseconds = Percentiles(subscribers.compactMap(\.joinedAfter) + publishers.compactMap(\.joinedAfter))
        report.measuredSeconds = measured
        report.nodeCPUTickSeconds = after.cpu.flatMap { a in before.cpu.map { a - $0 } }
        if let a = after.threadCPU, let b = before.threadCPU {
            let (seconds, lost) = ProcessProbe.cpuSecondsBetween(b, a)
            report.nodeCPUSeconds = seconds
            report.nodeThreadsEnded = lost
        } else {
            report.nodeCPUSeconds = (after.cpu ?? 0) - (before.cpu ?? 0)
        }
        report.expectedPackets = Double(subscribers.reduce(0) { $0 + ($1.receiver?.expected ?? 0) })
        report.receivedPackets = Double(subscribers.reduce(0) { $0 + ($1.receiver?.received ?? 0) })
        report.receivedBytes = Double(subscribers.reduce(0) { $0 + ($1.receiver?.bytes ?? 0) })
        if let a = after.counters, let b = before.counters {
            report.packetsIn = a.packetsIn - b.packetsIn
            report.packetsOut = a.packetsOut - b.packetsOut
            report.bytesOut = a.bytesOut - b.bytesOut
            report.datagramsOut = a.datagramsOut - b.datagramsOut
            report.rtcpIn = a.rtcpIn - b.rtcpIn
            report.srtpBackend = a.srtpBackend.map { backend in a.srtpVersion.map { "\(backend) (\($0))" } ?? backend }
            report.srtpProtectNanoseconds = a.srtpProtectNanoseconds
            if plan.record {
                report.recording = .init(streams: a.recordingStreams, bytes: a.recordingBytes - b.recordingBytes,
                                         refused: a.recordingRefused - b.recordingRefused)
            }
            report.drops = a.drops.reduce(into: [:]) { acc, kv in
                let d = kv.value - (b.drops[kv.key] ?? 0)
                if d > 0 { acc[kv.key] = d }
            }
        } else {
            // A server without counters: what the publishers sent and the subscribers received.
            report.countedByGenerator = true
            report.packetsIn = Double(sent)
            report.packetsOut = report.receivedPackets
            report.bytesOut = report.receivedBytes
        }
        report.nodeMemoryBytes = after.rss
        report.nodeMemoryBeforeBytes = baselineRSS
        report.generatorCPUSeconds = (after.generatorCPU ?? 0) - (before.generatorCPU ?? 0)
        if let a = after.nodeWait, let b = before.nodeWait { report.nodeRunQueueWaitSeconds = a - b }
        if let a = after.generatorWait, let b = before.generatorWait { report.generatorRunQueueWaitSeconds = a - b }
        if let a = after.workerCPU, let b = before.workerCPU { report.workerCPUSeconds = a - b }
        if after.workerThreads.count > 1 {
            report.workerCPUSecondsEach = after.workerThreads.keys.sorted().map { after.workerThreads[$0]! - (before.workerThreads[$0] ?? 0) }
        }
        report.latencyMilliseconds = Percentiles(subscribers.flatMap { $0.receiver?.latencies ?? [] })
        report.switchDelayMilliseconds = Percentiles(switchDelays(dominance: dominance, wallStart: wallStart, from: measureWallMs, seconds: measured))
        report.srtpProfile = members.lazy.compactMap { $0.client.srtpProfile?.description }.first
        await server.finish(rooms: plan.rooms)
        return report
    }

}
