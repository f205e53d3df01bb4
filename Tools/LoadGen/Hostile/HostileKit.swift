import NodeIO
import SFU
import SFUClient
import WebRTCEdge

/// What one attack showed: how the node counted or refused it (evidence for the report), and what went
/// wrong. An attack with no failures passed its own checks; the runner adds the node's health, the victim's
/// audio and memory.
struct AttackOutcome {
    var counted: [String] = []
    var failures: [String] = []

    /// Records `evidence` when `ok`, else `failure`.
    mutating func check(_ ok: Bool, _ evidence: String, _ failure: @autoclosure () -> String) {
        if ok { counted.append(evidence) } else { failures.append(failure()) }
    }

    mutating func fail(_ f: String) { failures.append(f) }
}

/// One attack: a name for the table, the resident memory it may leave behind once its attacker is cleaned
/// up, and the run.
struct Attack: Sendable {
    let number: Int
    let name: String
    var allowedGrowthBytes = 2 << 20
    let run: @Sendable (HostileContext) async throws -> AttackOutcome
}

/// The node's limits as the suite starts it (`--set` options), small so that attacks reach them quickly.
public struct HostileLimits: Sendable {
    public var handshakeSeconds = 5
    public var consentSeconds = 6
    public var pendingHandshakes = 8
    public var participantsPerRoom = 8
    public var rooms = 8
    public var slotsPerSubscription = 8
    public var tracksPerPublish = 2
    public var resendKbps = 500
    public var commandTimeoutMs = 1000
    public init() {}

    var serveOptions: [String] {
        ["workers=1", "limits.handshake_seconds=\(handshakeSeconds)", "ice.consent_seconds=\(consentSeconds)",
         "limits.pending_handshakes=\(pendingHandshakes)", "limits.participants_per_room=\(participantsPerRoom)",
         "limits.rooms=\(rooms)", "limits.slots_per_subscription=\(slotsPerSubscription)",
         "limits.tracks_per_publish=\(tracksPerPublish)", "limits.resend_kbps=\(resendKbps)",
         "limits.command_timeout_ms=\(commandTimeoutMs)"].flatMap { ["--set", $0] }
    }
}

/// Everything an attack works with: the node and its API, the victim, the events, certificates and media,
/// and helpers for rooms and clients. Rooms and victim-room participants an attack creates are recorded, so
/// the runner cleans up after an attack that failed half-way.
final class HostileContext {
    let node: NodeProcess
    let api: ControlClient
    let limits: HostileLimits
    let media: MediaLibrary
    let events: EventRecorder
    let victim: VictimPump
    let certificate: DTLSCertificate
    /// A second identity: a client that starts over presents a new fingerprint.
    let otherCertificate: DTLSCertificate
    private var roomCounter = 0
    var createdRooms: [String] = []
    var victimGuests: [String] = []
    /// The RTMP server the node lists (`streaming.rtmp_hosts`): it accepts and hangs up.
    var streamSink: TCPSink?
    /// The node's standard output and error.
    var nodeLog: String?

    init(node: NodeProcess, limits: HostileLimits, media: MediaLibrary, events: EventRecorder, victim: VictimPump) throws {
        self.node = node
        api = node.api
        self.limits = limits
        self.media = media
        self.events = events
        self.victim = victim
        certificate = try DTLSCertificate(commonName: "hostile")
        otherCertificate = try DTLSCertificate(commonName: "hostile-2")
    }

    // MARK: Rooms and participants

    /// A new attack room on the node's one worker; the first participant admitted is its moderator.
    func newRoom(_ prefix: String, maxTalkers: Int = 4) async throws -> String {
        roomCounter += 1
        let name = "\(prefix)-\(roomCounter)"
        try await api.require("POST", "v1/rooms", ["room": name, "max_active_talkers": maxTalkers])
        createdRooms.append(name)
        return name
    }

    func deleteRoom(_ name: String) async {
        _ = try? await api.call("DELETE", "v1/rooms/\(name)")
        createdRooms.removeAll { $0 == name }
    }

    func admit(_ room: String, _ who: String, moderator: Bool = false) async throws {
        try await api.require("POST", "v1/rooms/\(room)/participants", ["participant": who, "role": moderator ? "moderator" : "participant"])
        if room == VictimPump.room { victimGuests.append(who) }
    }

    func remove(_ room: String, _ who: String) async {
        _ = try? await api.call("DELETE", "v1/rooms/\(room)/participants/\(who)", [:])
        victimGuests.removeAll { $0 == who }
    }

    /// Offers `client`'s SDP for a direction; returns the node's reply (answer and change, or the refusal).
    func offer(_ room: String, _ who: String, _ client: LoadClient, _ direction: String, sdp: String? = nil) async throws -> ControlClient.Reply {
        try await api.call("POST", "v1/rooms/\(room)/participants/\(who)/\(direction)", ["sdp": sdp ?? client.offer()])
    }

    /// Offers and starts ICE on the answer; throws when refused.
    @discardableResult
    func join(_ room: String, _ who: String, _ client: LoadClient, _ direction: String) async throws -> String {
        let r = try await offer(room, who, client, direction)
        guard r.status == 200 || r.status == 201, let sdp = r.json["sdp"] as? String else {
            throw LoadError("\(direction) for \(who) in \(room) refused: \(r.status) \(r.result ?? -1) \(r.json["msg"] ?? "")")
        }
        try client.start(answer: sdp, now: MonoClock.now())
        return r.json["change"] as? String ?? ""
    }

    func publisher(audio: Bool = true, video: Bool = false, ssrc: UInt32? = nil) throws -> LoadClient {
        var p = LoadClient.Profile.publisher(audio: audio, video: video)
        p.audioSSRC = ssrc
        return try publisher(profile: p)
    }

    func publisher(profile: LoadClient.Profile) throws -> LoadClient {
        let c = try LoadClient(certificate: certificate, profile: profile)
        c.consentInterval = .milliseconds(1000)
        return c
    }

    func subscriber(audio: Int, video: Int = 0, certificate other: DTLSCertificate? = nil, socket: UDPSocket? = nil) throws -> LoadClient {
        let c = try LoadClient(certificate: other ?? certificate, profile: .subscriber(audio: audio, video: video), socket: socket)
        c.consentInterval = .milliseconds(1000)
        return c
    }

    // MARK: Driving clients

    /// Polls `clients` until each is connected (or failed), up to `timeout` seconds; talkers keep talking.
    @discardableResult
    func connect(_ clients: [LoadClient], talkers: [Talker] = [], timeout: Double = 5) async throws -> Bool {
        try await drive(seconds: timeout, clients: clients, talkers: talkers) { _ in
            !clients.allSatisfy { $0.state == .connected || Soak.isFailed($0.state) }
        }
        return clients.allSatisfy { $0.state == .connected }
    }

    /// Runs 20 ms ticks for `seconds` (or until `each` answers false): talkers send a frame, every client is
    /// polled (every 5 ms), then `each` runs with the tick's index.
    func drive(seconds: Double, clients: [LoadClient], talkers: [Talker] = [],
               _ each: (Int) async throws -> Bool = { _ in true }) async throws {
        let start = MonoClock.now()
        let end = start + .milliseconds(Int64(seconds * 1000))
        var next = start
        var tick = 0
        while MonoClock.now() < end {
            for t in talkers { t.tick() }
            for c in clients { c.poll(now: MonoClock.now()) }
            guard try await each(tick) else { return }
            tick += 1
            next = next + .milliseconds(20)
            while MonoClock.now() < next {
                try await Task.sleep(for: .milliseconds(5))
                for c in clients { c.poll(now: MonoClock.now()) }
            }
        }
    }

    func sleep(_ seconds: Double) async throws { try await Task.sleep(for: .milliseconds(Int(seconds * 1000))) }

    // MARK: Node state

    func metrics() async throws -> MetricsSnapshot { MetricsSnapshot(text: try await api.metrics()) }

    var residentBytes: Int? { ProcessProbe.residentBytes(pid: node.pid) }
}
