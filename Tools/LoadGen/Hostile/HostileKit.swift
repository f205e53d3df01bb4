import Foundation
import NodeIO
import SFU
import SFUClient
import SFUMedia
import SFUSimulation
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

/// A publisher client with its media: Opus speech (or near silence) every 20 ms, VP8 at 15 fps when it
/// publishes video, starting again from the keyframe when the node asks for one.
final class Talker {
    let client: LoadClient
    let media: MediaLibrary
    var loud: Bool
    private var frame = 0
    private var videoFrame = 0
    /// One packetizer per simulcast layer (each layer is a stream of its own).
    private var packetizers = [VP8Packetizer(pictureID: UInt16.random(in: 0...0x7FFF))]

    init(_ client: LoadClient, media: MediaLibrary, loud: Bool = true) {
        self.client = client
        self.media = media
        self.loud = loud
    }

    /// One 20 ms tick: an audio frame, and a video frame on 3 ticks of 10.
    func tick() {
        let f = frame
        frame += 1
        if client.profile.publishAudio {
            if loud {
                client.sendAudio(media.speech[f % media.speech.count], level: media.speechLevels[f % media.speechLevels.count])
            } else {
                client.sendAudio(media.silence[f % media.silence.count], level: 127)
            }
        }
        guard client.profile.publishVideo, f == 0 || (f * 3) / 10 != ((f - 1) * 3) / 10 else { return }
        if client.keyframeRequested {
            client.keyframeRequested = false
            videoFrame = 0
        }
        let v = media.video[videoFrame % media.video.count]
        videoFrame += 1
        // A simulcast publisher sends the same frames on every layer: what the node forwards is a stream.
        let layers = max(1, client.profile.simulcastLayers)
        while packetizers.count < layers { packetizers.append(VP8Packetizer(pictureID: UInt16.random(in: 0...0x7FFF))) }
        for layer in 0..<layers {
            client.sendVideo(packetizers[layer].packetize(v), samples: UInt32(90_000 / media.fps), layer: layer)
        }
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

/// Plain RTCP a hostile client sends (before its SRTCP protection).
enum RTCPBuilder {
    static func build(_ writers: [(UnsafeMutableRawBufferPointer) -> Int?]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 1500)
        var n = 0
        out.withUnsafeMutableBytes { buf in
            for w in writers {
                guard let written = w(UnsafeMutableRawBufferPointer(rebasing: buf[n...])) else { continue }
                n += written
            }
        }
        return Array(out[0..<n])
    }

    static func receiverReport(_ sender: UInt32, naming ssrcs: [UInt32]) -> (UnsafeMutableRawBufferPointer) -> Int? {
        let blocks = ssrcs.prefix(31).map {
            ReportBlock(ssrc: $0, fractionLost: 128, cumulativeLost: 1000, extendedHighestSequence: 0xFFFF_FFFF,
                        jitter: 0xFFFF, lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 0x10)
        }
        return { ReceiverReport(ssrc: sender, reports: Array(blocks)).write(into: $0) }
    }

    static func senderReport(_ ssrc: UInt32, ntp: UInt64) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { SenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: 0x4000_0000, packetCount: 1, octetCount: 100).write(into: $0) }
    }

    static func nack(_ sender: UInt32, media: UInt32, _ sequences: [UInt16]) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { GenericNACK.write(sender: sender, media: media, sequences: sequences, into: $0) }
    }

    /// A generic NACK with these PID/BLP pairs as given (not packed): one datagram may name thousands.
    static func nackPairs(_ sender: UInt32, media: UInt32, _ pairs: [(UInt16, UInt16)]) -> [UInt8] {
        let words = 2 + pairs.count
        var b: [UInt8] = [0x81, 205, UInt8(words >> 8), UInt8(words & 0xFF)]
        for v in [sender, media] { b += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        for (pid, blp) in pairs { b += [UInt8(pid >> 8), UInt8(pid & 0xFF), UInt8(blp >> 8), UInt8(blp & 0xFF)] }
        return b
    }

    static func pli(_ sender: UInt32, media: UInt32) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { PictureLossIndication.write(sender: sender, media: media, into: $0) }
    }

    static func fir(_ sender: UInt32, target: UInt32, seq: UInt8) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { FullIntraRequest.write(sender: sender, target: target, sequenceNumber: seq, into: $0) }
    }

    static func remb(_ sender: UInt32, bps: UInt64, ssrcs: [UInt32]) -> (UnsafeMutableRawBufferPointer) -> Int? {
        { REMB(senderSSRC: sender, bitrate: bps, ssrcs: ssrcs).write(into: $0) }
    }

    /// A transport-cc feedback (RTPFB FMT 15) in 36 bytes that claims `statusCount` packets: eight
    /// run-length chunks of 8,191 "received, small delta" and no deltas.
    static func transportCC(_ sender: UInt32, media: UInt32, statusCount: UInt16) -> [UInt8] {
        var b: [UInt8] = [0x8F, 205, 0x00, 0x08]
        for v in [sender, media] { b += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        b += [0x00, 0x00, UInt8(statusCount >> 8), UInt8(statusCount & 0xFF), 0x00, 0x00, 0x01, 0x00]
        for _ in 0..<8 { b += [0x3F, 0xFF] }
        return b
    }
}

/// The RTP header fields a receiver reads in clear from an SRTP packet.
enum ClearRTP {
    static func ssrc(_ p: UnsafeRawBufferPointer) -> UInt32? {
        guard p.count >= 12 else { return nil }
        return UInt32(p[8]) << 24 | UInt32(p[9]) << 16 | UInt32(p[10]) << 8 | UInt32(p[11])
    }

    static func sequence(_ p: UnsafeRawBufferPointer) -> UInt16? {
        guard p.count >= 12 else { return nil }
        return UInt16(p[2]) << 8 | UInt16(p[3])
    }
}

/// What a subscriber receives, by the SSRC of the slot it arrives on: packets that decrypt (their sequence
/// numbers and payload types in arrival order), packets that do not, and the ids of the header extension
/// elements in their clear headers (one-byte form, RFC 8285 section 4.2; two-byte form ids count too).
final class SlotTally {
    struct Stream {
        var sequences: [UInt16] = []
        var payloadTypes: [UInt8: Int] = [:]
        var undecryptable = 0
        var packets: Int { sequences.count }
    }
    private(set) var streams: [UInt32: Stream] = [:]
    /// Header extension ids seen, by id: how many packets carried each.
    private(set) var extensionIDs: [UInt8: Int] = [:]
    /// Packets with a header extension block of a form other than one-byte (0xBEDE) or two-byte (0x100x).
    private(set) var otherExtensionForms = 0

    /// Takes over `client.onMedia`.
    init(_ client: LoadClient) {
        client.onMedia = { [unowned self, unowned client] buffer, length, _ in
            let clear = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
            guard let ssrc = ClearRTP.ssrc(clear), let seq = ClearRTP.sequence(clear) else { return }
            for id in Self.extensionIDs(clear) { self.extensionIDs[id, default: 0] += 1 }
            if Self.extensionForm(clear).map({ $0 != 0xBEDE && $0 & 0xFFF0 != 0x1000 }) == true { self.otherExtensionForms += 1 }
            let pt = clear[1] & 0x7F
            if client.decrypt(buffer, length: length) != nil {
                self.streams[ssrc, default: Stream()].sequences.append(seq)
                self.streams[ssrc, default: Stream()].payloadTypes[pt, default: 0] += 1
            } else {
                self.streams[ssrc, default: Stream()].undecryptable += 1
            }
        }
    }

    func packets(_ ssrc: UInt32) -> Int { streams[ssrc]?.packets ?? 0 }
    func sequences(_ ssrc: UInt32) -> [UInt16] { streams[ssrc]?.sequences ?? [] }

    /// The "defined by profile" word of an RTP packet's header extension, when it has one.
    static func extensionForm(_ p: UnsafeRawBufferPointer) -> UInt16? {
        guard p.count >= 12, p[0] & 0x10 != 0 else { return nil }
        let at = 12 + 4 * Int(p[0] & 0x0F)
        guard p.count >= at + 4 else { return nil }
        return UInt16(p[at]) << 8 | UInt16(p[at + 1])
    }

    /// The ids of an RTP packet's header extension elements, as a receiver reads them: in the one-byte form
    /// id 0 is padding and id 15 ends the parse (it is reported: nothing may be sent under it).
    static func extensionIDs(_ p: UnsafeRawBufferPointer) -> [UInt8] {
        guard let form = extensionForm(p) else { return [] }
        let at = 12 + 4 * Int(p[0] & 0x0F)
        let end = min(p.count, at + 4 + 4 * (Int(p[at + 2]) << 8 | Int(p[at + 3])))
        var i = at + 4
        var ids: [UInt8] = []
        if form == 0xBEDE {
            while i < end {
                let id = p[i] >> 4
                if id == 0 { i += 1; continue }
                ids.append(id)
                if id == 15 { break }
                i += 1 + Int(p[i] & 0x0F) + 1
            }
        } else if form & 0xFFF0 == 0x1000 {
            while i + 1 < end {
                let id = p[i]
                if id == 0 { i += 1; continue }
                ids.append(id)
                i += 2 + Int(p[i + 1])
            }
        }
        return ids
    }

    /// The largest step back between consecutive sequence numbers (0 when they only go forward), read mod
    /// 2^16: a step of more than 2^15 forward is one back.
    static func largestStepBack(_ seqs: [UInt16]) -> Int {
        zip(seqs, seqs.dropFirst()).map { a, b in
            let d = Int(Int16(bitPattern: b &- a))
            return d < 0 ? -d : 0
        }.max() ?? 0
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
        guard let text = try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8) else { return 0 }
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
