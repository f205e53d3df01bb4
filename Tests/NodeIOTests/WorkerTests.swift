import Foundation
import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import Synchronization
import Testing
import WebRTCEdge

/// A client on its own loopback socket: SDP offer, ICE checks, DTLS client, SRTP.
final class UDPClient {
    let socket = try! UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
    let ice = ICECredentials.random()
    let cert = try! DTLSCertificate(commonName: "client")
    let node: TransportAddress
    var dtls: DTLSEndpoint!
    var checks: ICEControllingClient!
    var tx: SRTPSession!
    var rx: SRTPSession!

    init(node: TransportAddress) { self.node = node }

    func offer(publish: Bool) -> String {
        var l = ["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=group:BUNDLE 0", "a=fingerprint:\(cert.fingerprint)",
                 "a=ice-ufrag:\(ice.ufrag)", "a=ice-pwd:\(ice.password)", "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0",
                 "a=mid:0", publish ? "a=sendonly" : "a=recvonly", "a=rtcp-mux", "a=setup:actpass", "a=rtpmap:111 opus/48000/2",
                 "a=extmap:1 \(OfferAnswer.audioLevelURI)"]
        if publish { l.append("a=ssrc:4242 cname:c") }
        return l.joined(separator: "\r\n") + "\r\n"
    }

    func receive(timeoutMs: Int32 = 2000) -> [[UInt8]] {
        let batch = ReceiveBatch(capacity: 64)
        guard socket.wait(timeoutMilliseconds: timeoutMs), (try? socket.receive(into: batch)) != nil else { return [] }
        return (0..<batch.count).map { Array(batch.datagram($0)) }
    }

    /// ICE check with nomination, then the DTLS handshake, over real UDP.
    func connect(answer: String) throws {
        let m = try #require(try SessionDescription.parse(answer).media.first)
        checks = ICEControllingClient(local: ice, remote: ICECredentials(ufrag: m.attribute("ice-ufrag")!, password: m.attribute("ice-pwd")!))
        dtls = try DTLSEndpoint(role: .client, certificate: cert, remoteFingerprint: DTLSFingerprint(sdp: m.attribute("fingerprint")!),
                                initialRetransmitTimeout: .milliseconds(50))
        let tid = ICEControllingClient.randomTransactionID()
        socket.send(checks.bindingRequest(nominate: true, transactionID: tid), to: node)
        let response = try #require(receive().first)
        #expect(checks.check(response: response, transactionID: tid) == .success(mapped: socket.local))
        for d in dtls.start(now: MonoClock.now()) { socket.send(d, to: node) }
        let deadline = MonoClock.now() + .seconds(5)
        while dtls.state != .connected, MonoClock.now() < deadline {
            for d in receive(timeoutMs: 100) {
                for reply in d.withUnsafeBytes({ dtls.receive($0, now: MonoClock.now()) }) { socket.send(reply, to: node) }
            }
            for d in dtls.tick(now: MonoClock.now()) { socket.send(d, to: node) }
        }
        let keys = try #require(dtls.keys)
        tx = try SRTPSession(keys: keys.outbound, direction: .outbound)
        rx = try SRTPSession(keys: keys.inbound, direction: .inbound)
    }
}

@Suite(.serialized, .timeLimit(.minutes(1))) struct WorkerTests {
    static let cert = try! DTLSCertificate()

    func admit(_ worker: Worker, _ id: String, offer: String, publish: Bool) throws -> String {
        try worker.performAndWait { core, now in
            try core.room("r")!.admit(id, now: now)
            return publish ? try core.publish(room: "r", participant: id, offer: offer, now: now).sdp
                : try core.subscribe(room: "r", participant: id, offer: offer, now: now).sdp
        }
    }

    @Test func audioCrossesAWorkerThreadOverRealUDP() throws {
        let socket = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let worker = try Worker(index: 0, socket: socket, certificate: Self.cert, dtlsInitialTimeout: .milliseconds(50))
        worker.start()
        defer { worker.stop() }
        try worker.performAndWait { core, now in core.addRoom(try Room(name: "r", now: now)) }

        let a = UDPClient(node: socket.local), b = UDPClient(node: socket.local)
        try a.connect(answer: try admit(worker, "A", offer: a.offer(publish: true), publish: true))
        try b.connect(answer: try admit(worker, "B", offer: b.offer(publish: false), publish: false))

        let opus = OpusFrameEncoder()
        let speech = TestSignal.sine(dbfs: -20, seconds: 0.5)
        var writer = RTPStreamWriter(ssrc: 4242, payloadType: 111, audioLevelExtensionID: 1)
        var buf = [UInt8](repeating: 0, count: 2048)
        for f in 0..<25 {
            let plain = writer.packet(opus.encode(speech[(f * 960)..<((f + 1) * 960)]), level: 20)
            writer.timestamp &+= 960
            buf.replaceSubrange(0..<plain.count, with: plain)
            let n = try buf.withUnsafeMutableBytes { try a.tx.protectRTP($0, length: plain.count).get() }
            a.socket.send(Array(buf[0..<n]), to: socket.local)
        }
        var audio = 0
        let deadline = MonoClock.now() + .seconds(3)
        while audio < 25, MonoClock.now() < deadline {
            for d in b.receive(timeoutMs: 200) where PacketClass(d.withUnsafeBytes { $0 }) == .rtp {
                var p = d + [UInt8](repeating: 0, count: 16)
                let ok = p.withUnsafeMutableBytes { raw in
                    isRTCP(UnsafeRawBufferPointer(raw)) ? b.rx.unprotectRTCP(raw, length: d.count) : b.rx.unprotectRTP(raw, length: d.count)
                }
                if case .success = ok, !p.withUnsafeBytes({ isRTCP($0) }) { audio += 1 }
            }
        }
        #expect(audio == 25, "every audio packet of A reached B through the worker, decrypted with B's keys")

        let (events, dropped) = worker.drainEvents()
        #expect(dropped == 0)
        #expect(events.contains { $0.event == .participantState(participant: "A", state: .connected, reason: nil, path: TransportPath(carrier: .udp, family: .ipv4)) })
        #expect(events.contains { if case .activeTalkers(let s, let t, _) = $0.event { s == "B" && t.first?.participant == "A" } else { false } })
    }

    /// A room on worker 0 whose second subscriber's transport lives on worker 1 (`spreadRoomAfter` 1): the
    /// answer names worker 1's socket, ICE and DTLS run there, and A's audio reaches both subscribers, C's
    /// through the handoff between the two threads and from worker 1's socket.
    @Test func aRoomSpreadAcrossTwoWorkerThreadsReachesEverySubscriberOverRealUDP() throws {
        var limits = WorkerLimits()
        limits.spreadRoomAfter = 1
        let sockets = try (0..<2).map { _ in try UDPSocket(bind: TransportAddress("127.0.0.1:0")!) }
        let workers = try sockets.enumerated().map { i, s in
            try Worker(index: i, socket: s, certificate: Self.cert, dtlsInitialTimeout: .milliseconds(50), limits: limits)
        }
        Worker.connect(workers)
        workers.forEach { $0.start() }
        defer { workers.forEach { $0.stop() } }
        try workers[0].performAndWait { core, now in core.addRoom(try Room(name: "r", now: now)) }

        let a = UDPClient(node: sockets[0].local), b = UDPClient(node: sockets[0].local), c = UDPClient(node: sockets[1].local)
        try a.connect(answer: try admit(workers[0], "A", offer: a.offer(publish: true), publish: true))
        try b.connect(answer: try admit(workers[0], "B", offer: b.offer(publish: false), publish: false))
        let answer = try admit(workers[0], "C", offer: c.offer(publish: false), publish: false)
        #expect(answer.contains(" \(sockets[1].local.port) typ host"), "the answer names worker 1's socket")
        try c.connect(answer: answer)
        // C's keys reach the room's worker from worker 1 a pass after C's DTLS finished: wait for the room
        // to say C is connected, as a signaling server would before it counts on C's media.
        let deadline = MonoClock.now() + .seconds(3)
        var connected = false
        while !connected, MonoClock.now() < deadline {
            connected = workers[0].drainEvents().events.contains { $0.event == .participantState(participant: "C", state: .connected, reason: nil, path: TransportPath(carrier: .udp, family: .ipv4)) }
            if !connected { usleep(1000) }
        }
        #expect(connected)

        var writer = RTPStreamWriter(ssrc: 4242, payloadType: 111, audioLevelExtensionID: 1)
        var buf = [UInt8](repeating: 0, count: 2048)
        for _ in 0..<25 {
            let plain = writer.packet([0x78, 0x80, 0x11, 0x22, 0x33, 0x44], level: 20)
            writer.timestamp &+= 960
            buf.replaceSubrange(0..<plain.count, with: plain)
            let n = try buf.withUnsafeMutableBytes { try a.tx.protectRTP($0, length: plain.count).get() }
            a.socket.send(Array(buf[0..<n]), to: sockets[0].local)
        }
        #expect(audioPackets(b, expecting: 25) == 25, "B, on the room's worker, hears every packet")
        #expect(audioPackets(c, expecting: 25) == 25, "C, hosted by worker 1, hears every packet")
        let host = workers[1]
        let (hosted, sent) = try host.performAndWait { core, _ in (core.hostedCount, host.socket.datagramsSent) }
        #expect(hosted == 1)
        #expect(sent >= 25, "C's media left from worker 1's socket")
    }

    /// Audio RTP packets `client` decrypts within 3 s (RTCP skipped), up to `expecting`.
    func audioPackets(_ client: UDPClient, expecting: Int) -> Int {
        var audio = 0
        let deadline = MonoClock.now() + .seconds(3)
        while audio < expecting, MonoClock.now() < deadline {
            for d in client.receive(timeoutMs: 200) where PacketClass(d.withUnsafeBytes { $0 }) == .rtp {
                var p = d + [UInt8](repeating: 0, count: 16)
                let isControl = p.withUnsafeBytes { isRTCP($0) }
                let ok = p.withUnsafeMutableBytes { raw in
                    isControl ? client.rx.unprotectRTCP(raw, length: d.count) : client.rx.unprotectRTP(raw, length: d.count)
                }
                if case .success = ok, !isControl { audio += 1 }
            }
        }
        return audio
    }

    @Test func commandsRunOnTheWorkerAndErrorsComeBack() throws {
        let socket = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let worker = try Worker(index: 3, socket: socket, certificate: Self.cert)
        worker.start()
        defer { worker.stop() }
        #expect(try worker.performAndWait { _, _ in worker.isWorkerThread })
        #expect(!worker.isWorkerThread)
        #expect(throws: RoomError.self) {
            try worker.performAndWait { _, now in _ = try Room(name: "bad", configuration: { var c = RoomConfiguration(); c.maxActiveTalkers = 99; return c }(), now: now) }
        }
    }

    /// top -H, perf and the bench's per-thread CPU find the media path by this name. Sixteen workers: the name
    /// set through Foundation's Thread.name was lost in some starts from a dispatch thread.
    @Test func eachWorkerThreadCarriesItsNameForTheOS() throws {
        for index in 40..<56 {
            let socket = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
            let worker = try Worker(index: index, socket: socket, certificate: Self.cert)
            // Started from a dispatch thread, as the node starts its workers from async code.
            let started = DispatchSemaphore(value: 0)
            DispatchQueue.global().async { worker.start(); started.signal() }
            started.wait()
            defer { worker.stop() }
            let name = try worker.performAndWait { _, _ in try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
            #expect(name == "sfu-worker-\(index)\n")
        }
    }

    @Test func destroyingARoomTellsEveryParticipantAndClosesItsConnections() throws {
        let socket = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let worker = try Worker(index: 0, socket: socket, certificate: Self.cert)
        worker.start()
        defer { worker.stop() }
        try worker.performAndWait { core, now in
            core.addRoom(try Room(name: "r", now: now))
            try core.room("r")!.admit("A", now: now)
            try core.room("r")!.admit("B", now: now)
        }
        _ = try admit(worker, "C", offer: UDPClient(node: socket.local).offer(publish: true), publish: true)
        _ = worker.drainEvents()
        try worker.performAndWait { core, now in core.destroyRoom("r", now: now) }
        let (events, _) = worker.drainEvents()
        #expect(events.map(\.event) == [
            .participantState(participant: "A", state: .left, reason: "room destroyed"),
            .participantState(participant: "B", state: .left, reason: "room destroyed"),
            .participantState(participant: "C", state: .left, reason: "room destroyed"),
            .roomDestroyed,
        ])
        #expect(try worker.performAndWait { core, _ in core.rooms.isEmpty && core.connectionCount == 0 })
    }

    @Test func aFullEventQueueCountsWhatItLost() throws {
        let socket = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let worker = try Worker(index: 0, socket: socket, certificate: Self.cert, eventCapacity: 5)
        worker.start()
        defer { worker.stop() }
        try worker.performAndWait { core, now in
            let room = try Room(name: "r", now: now)
            core.addRoom(room)
            for i in 0..<12 { try room.admit("P\(i)", now: now) }
        }
        let (events, dropped) = worker.drainEvents()
        #expect(events.count == 5 && dropped == 7)
    }

    @Test func aCommandTheWorkerCannotTakeInTimeFailsAndNeverRuns() async throws {
        let socket = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let worker = try Worker(index: 0, socket: socket, certificate: Self.cert, commandTimeout: .milliseconds(200))
        worker.start()
        defer { worker.stop() }
        let ran = Mutex(false)
        // The worker is busy for 2 s; a call queued behind it gives up after 200 ms and is never run.
        async let busy: Void = worker.perform { _, _ in Thread.sleep(forTimeInterval: 2) }
        try await Task.sleep(for: .milliseconds(50))
        await #expect(throws: WorkerTimeout.self) { try await worker.perform { _, _ in ran.withLock { $0 = true } } }
        try await busy
        #expect(try await worker.perform { _, _ in 7 } == 7, "the worker answers again")
        #expect(!ran.withLock { $0 }, "the abandoned command did nothing")
    }
}

/// No work without work: a worker sleeps until its next deadline, and an idle one (no deadline) until a
/// datagram or a command arrives; it never polls on a period.
@Suite struct WorkerSleepTests {
    @Test func anIdleWorkerSleepsUntilSomethingArrives() {
        #expect(Worker.waitMilliseconds(until: .never, now: .milliseconds(5)) == -1)
    }

    @Test func aWorkerSleepsUntilItsDeadlineRoundedUpSoItNeverSpins() {
        #expect(Worker.waitMilliseconds(until: MonoTime(nanoseconds: 10_400_000), now: .milliseconds(10)) == 1)
        #expect(Worker.waitMilliseconds(until: .milliseconds(250), now: .milliseconds(10)) == 240)
        #expect(Worker.waitMilliseconds(until: .milliseconds(10), now: .milliseconds(10)) == 0)
        #expect(Worker.waitMilliseconds(until: .milliseconds(5), now: .milliseconds(10)) == 0, "a deadline already past")
        #expect(Worker.waitMilliseconds(until: .seconds(1e7), now: .zero) == Int32.max, "far deadlines clamp")
    }
}
