import Foundation
import NodeIO
import SFU
import SFUClient
import Synchronization
import WebRTCEdge

/// The room every attack must leave alone: a publisher sending Opus speech every 20 ms and VP8, pinned so
/// it keeps its audio slot whoever else talks, and a subscriber receiving it. Both run on a thread of their
/// own, so an attack's loop (or a flood) never paces the victim; the subscriber's socket stamps arrivals in
/// the kernel, and the longest gap between them on the victim's audio slot is what an attack cost.
final class VictimPump: @unchecked Sendable {
    static let room = "victim"
    let publisher: LoadClient
    let subscriber: LoadClient
    /// The subscriber's audio slot that carries the victim publisher (known once media flows).
    private(set) var victimSlot: (mid: String, ssrc: UInt32)?
    /// The subscriber's ICE credentials and the node's for it (an attacker who read the SDP knows them).
    let subscriberICE: (client: ICECredentials, node: ICECredentials)
    /// An NTP timestamp only a forged sender report carries: the subscriber must never see it.
    static let forgedNTP: UInt64 = 0xDEAD_BEEF_0BAD_F00D

    private struct Shared {
        var arrivals: [UInt32: ArrivalLog] = [:]
        /// When the publisher sent each audio frame: a gap here is the load generator's, not the node's.
        var sends = ArrivalLog()
        var forgedReports = 0
        var keyframeRequests = 0
        var running = true
    }
    private let shared = Mutex(Shared())
    private let talker: Talker
    private var thread: Thread?
    private let done = DispatchSemaphore(value: 0)

    /// Sets the room up (over the API, from the caller's task), connects both clients and finds the
    /// victim's slot; the thread takes over from `start()`.
    static func make(api: ControlClient, media: MediaLibrary) async throws -> VictimPump {
        let certificate = try DTLSCertificate(commonName: "victim")
        try await api.require("POST", "v1/rooms", ["room": room, "max_active_talkers": 4])
        try await api.require("POST", "v1/rooms/\(room)/participants", ["participant": "vpub", "role": "moderator"])
        try await api.require("POST", "v1/rooms/\(room)/participants", ["participant": "vsub"])
        let pub = try LoadClient(certificate: certificate, profile: .publisher(audio: true, video: true))
        let sub = try LoadClient(certificate: certificate, profile: .subscriber(audio: 3, video: 1))
        for c in [pub, sub] { c.consentInterval = .milliseconds(1000) }
        let a = try await api.require("POST", "v1/rooms/\(room)/participants/vpub/publish", ["sdp": pub.offer()])
        try pub.start(answer: a.json["sdp"] as? String ?? "", now: MonoClock.now())
        let b = try await api.require("POST", "v1/rooms/\(room)/participants/vsub/subscribe", ["sdp": sub.offer()])
        try sub.start(answer: b.json["sdp"] as? String ?? "", now: MonoClock.now())
        try await api.require("POST", "v1/rooms/\(room)/pins", ["by": "vpub", "add": ["vpub"]])
        return VictimPump(publisher: pub, subscriber: sub, media: media)
    }

    private init(publisher: LoadClient, subscriber: LoadClient, media: MediaLibrary) {
        self.publisher = publisher
        self.subscriber = subscriber
        talker = Talker(publisher, media: media)
        subscriberICE = (subscriber.ice, subscriber.remoteICE ?? subscriber.ice)
        subscriber.onMedia = { [unowned self] buffer, length, arrival in
            guard let ssrc = ClearRTP.ssrc(UnsafeRawBufferPointer(rebasing: buffer[0..<length])) else { return }
            shared.withLock { $0.arrivals[ssrc, default: ArrivalLog()].add(arrival) }
        }
        subscriber.onRTCP = { [unowned self] p in
            _ = RTCPCompound.forEach(p) { pkt in
                guard pkt.type == .senderReport, case .success(let sr) = SenderReport.parse(p, pkt), sr.ntpTimestamp == Self.forgedNTP else { return }
                shared.withLock { $0.forgedReports += 1 }
            }
        }
    }

    /// Starts the thread, waits until both clients are connected and the victim's audio arrives on one slot.
    func start() async throws {
        let t = Thread { [self] in loop() }
        t.name = "victim"
        t.start()
        thread = t
        let deadline = MonoClock.now() + .seconds(10)
        while MonoClock.now() < deadline {
            try await Task.sleep(for: .milliseconds(100))
            let audio = subscriber.answeredSlots.filter { $0.kind == "audio" }
            let counts = shared.withLock { s in audio.map { (slot: $0, n: s.arrivals[$0.ssrc]?.count ?? 0) } }
            if let best = counts.max(by: { $0.n < $1.n }), best.n >= 50 {
                victimSlot = (best.slot.mid, best.slot.ssrc)
                return
            }
        }
        throw LoadError("the victim did not connect and receive audio within 10 s (publisher \(publisher.state), subscriber \(subscriber.state))")
    }

    func stop() {
        shared.withLock { $0.running = false }
        if thread != nil { done.wait() }
    }

    private func loop() {
        // The victim is the yardstick: it must send on time even when the machine is busy (builds beside the
        // suite, or the flood's own thread), so what the gaps measure is the node. Needs root; best effort.
        if let tid = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))?.split(separator: "/").last.flatMap({ id_t($0) }) {
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid, -10)
        }
        var next = MonoClock.now()
        while shared.withLock({ $0.running }) {
            talker.tick()
            let sent = MonoClock.now()
            shared.withLock { $0.sends.add(sent) }
            let before = publisher.keyframeRequests
            publisher.poll(now: MonoClock.now())
            subscriber.poll(now: MonoClock.now())
            let asked = publisher.keyframeRequests - before
            if asked > 0 { shared.withLock { $0.keyframeRequests += asked } }
            next = next + .milliseconds(20)
            while MonoClock.now() < next {
                usleep(4000)
                subscriber.poll(now: MonoClock.now())
            }
        }
        done.signal()
    }

    /// The longest gap on the victim's audio slot between two instants (kernel arrival times), and how
    /// many packets arrived between them.
    func maxGap(from: MonoTime, to: MonoTime) -> (gapMs: Int, packets: Int) {
        guard let slot = victimSlot else { return (Int((to - from).milliseconds), 0) }
        let log = shared.withLock { $0.arrivals[slot.ssrc] ?? ArrivalLog() }
        let (gap, packets) = log.maxGap(from: from, to: to)
        return (Int(gap.milliseconds), packets)
    }

    /// The longest the victim publisher itself went without sending audio between two instants (its thread
    /// held back on a busy machine): the part of a gap the node had nothing to do with.
    func publisherGap(from: MonoTime, to: MonoTime) -> Int {
        Int(shared.withLock { $0.sends }.maxGap(from: from, to: to).gap.milliseconds)
    }

    /// Packets that arrived on one of the subscriber's slots between two instants.
    func packets(on ssrc: UInt32, from: MonoTime, to: MonoTime) -> Int {
        (shared.withLock { $0.arrivals[ssrc] } ?? ArrivalLog()).maxGap(from: from, to: to).packets
    }

    /// Sender reports with the forged NTP time the subscriber received.
    var forgedReportsSeen: Int { shared.withLock { $0.forgedReports } }
    /// PLIs and FIRs that reached the victim publisher.
    var keyframeRequests: Int { shared.withLock { $0.keyframeRequests } }
}

/// Every event of the node's `/v1/events` stream, kept for the attacks to look through.
final class EventRecorder: Sendable {
    private let events = Mutex<[NodeEvent]>([])
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(api: URL) {
        let stream = EventStream(api: api)
        let t = Task { [self] in
            await stream.run { e in self.events.withLock { $0.append(e) } }
        }
        task.withLock { $0 = t }
    }

    func stop() { task.withLock { $0?.cancel() } }

    var all: [NodeEvent] { events.withLock { $0 } }
    var count: Int { events.withLock { $0.count } }

    /// Events after the first `since` that match.
    func find(since: Int = 0, _ match: (NodeEvent) -> Bool) -> [NodeEvent] {
        events.withLock { Array($0.dropFirst(since)).filter(match) }
    }

    /// Waits until `count` events after `since` match, up to `timeout` seconds; returns those found.
    func wait(since: Int, count: Int = 1, timeout: Double, _ match: @escaping (NodeEvent) -> Bool) async -> [NodeEvent] {
        let deadline = Date().addingTimeInterval(timeout)
        var found = find(since: since, match)
        while found.count < count, Date() < deadline {
            try? await Task.sleep(for: .milliseconds(50))
            found = find(since: since, match)
        }
        return found
    }

    /// A participant's `disconnected` states (with reasons) after `since`.
    func disconnections(since: Int, room: String, participant: String) -> [String] {
        find(since: since) { $0.type == "participant_state" && $0.room == room && $0["participant"] as? String == participant && $0["state"] as? String == "disconnected" }
            .map { $0["reason"] as? String ?? "" }
    }
}
