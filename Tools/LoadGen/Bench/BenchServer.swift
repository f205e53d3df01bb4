import Foundation
import NodeIO
import SFUClient

/// The server a benchmark loads: this project's node through its control API, or Janus VideoRoom through its
/// HTTP API (`JanusServer`). Each does its own signalling; the media, the receivers and the report are the
/// bench's, the same for both.
public protocol BenchServer: AnyObject, Sendable {
    /// The name in reports ("sfu", "janus").
    var name: String { get }
    /// The server's process, for its CPU time and memory (nil: not known, e.g. a node at `--target`).
    var pid: Int32? { get }
    /// All its processes (a cluster's nodes); by default `pid`.
    var pids: [Int32] { get }
    /// Creates the plan's rooms (numbered from 0), replacing leftovers of an earlier run.
    func prepare(plan: BenchPlan, rooms: Int) async throws
    /// Signals one participant into room `room` and starts its client's ICE, or throws `BenchServerNotReady`
    /// to be asked again.
    func join(_ client: LoadClient, id: String, room: Int) async throws
    /// Removes a participant (churn).
    func leave(_ client: LoadClient, id: String, room: Int) async
    /// The server's own counters, when it has them (this node's `/metrics`); otherwise the report counts
    /// what the generator's publishers sent and its subscribers received.
    func counters() async throws -> ServerCounters?
    /// Records each dominant-speaker change as (room, participant, Unix ms) until cancelled; servers that
    /// do not choose speakers return at once.
    func watchDominantSpeaker(_ record: @escaping @Sendable (Int, String, Int64) -> Void) async
    /// Deletes the rooms.
    func finish(rooms: Int) async
    /// Each subscriber's downlink estimate and number_of_videos now, by "room/participant", when the server
    /// reports them (this node's room stats); nil when it has no such figures (Janus).
    func subscriberStats(rooms: Int) async -> [String: SubscriberSample]?
}

extension BenchServer {
    /// Every process of the server (a cluster's nodes): the CPU and memory the report counts are their sums.
    public var pids: [Int32] { pid.map { [$0] } ?? [] }
}

/// The server cannot take this participant yet (Janus: a subscription to a publisher whose PeerConnection
/// is not up); the bench retries shortly, driving everyone else meanwhile.
public struct BenchServerNotReady: Error {}

/// What a server says it forwarded.
public struct ServerCounters: Sendable {
    public var packetsIn: Double
    public var packetsOut: Double
    public var bytesOut: Double
    public var drops: [String: Double]
    /// Every datagram the server sent (forwarded RTP, RTCP, probe padding, STUN, DTLS) and RTCP it received.
    public var datagramsOut: Double = 0
    public var rtcpIn: Double = 0
    /// Which crypto libsrtp runs on, its version, and what one protect costs the node (`sfu_srtp_backend`,
    /// `sfu_srtp_protect_nanoseconds`).
    public var srtpBackend: String?
    public var srtpVersion: String?
    public var srtpProtectNanoseconds: Double?
    /// The recording writer: bytes written, streams open, packets the workers' queues refused.
    public var recordingBytes: Double = 0
    public var recordingStreams: Double = 0
    public var recordingRefused: Double = 0
}

/// This project's node, through its control API (docs/openapi.yaml).
public final class NodeServer: BenchServer {
    public let name = "sfu"
    public let api: ControlClient
    public let pid: Int32?

    /// Rooms are named this and their number: several generators (processes, each its own `--room-prefix`)
    /// can load one node side by side.
    public let roomPrefix: String

    public init(api: ControlClient, pid: Int32?, roomPrefix: String = "bench-") {
        self.api = api
        self.pid = pid
        self.roomPrefix = roomPrefix
    }

    func room(_ r: Int) -> String { "\(roomPrefix)\(r)" }

    public func prepare(plan: BenchPlan, rooms: Int) async throws {
        for r in 0..<rooms {
            _ = try? await api.call("DELETE", "v1/rooms/\(room(r))")
            try await api.require("POST", "v1/rooms", [
                "room": room(r), "max_active_talkers": plan.maxActiveTalkers, "level_source": plan.levelExtension ? "extension" : "decode",
                "auto_recording": plan.record,
            ])
        }
    }

    public func join(_ client: LoadClient, id: String, room: Int) async throws {
        let path = "v1/rooms/\(self.room(room))/participants"
        try await api.require("POST", path, ["participant": id])
        let answer = try await api.require("POST", "\(path)/\(id)/\(client.publishes ? "publish" : "subscribe")", ["sdp": client.offer()])
        try client.start(answer: answer.json["sdp"] as? String ?? "", now: MonoClock.now())
    }

    public func leave(_ client: LoadClient, id: String, room: Int) async {
        _ = try? await api.call("DELETE", "v1/rooms/\(self.room(room))/participants/\(id)")
    }

    public func counters() async throws -> ServerCounters? { Self.counters(fromMetrics: try await api.metrics()) }

    /// A node's counters from its `/metrics` text.
    static func counters(fromMetrics m: String) -> ServerCounters {
        var c = ServerCounters(packetsIn: MetricsText.sum(m, "sfu_rtp_packets_received_total"),
                               packetsOut: MetricsText.sum(m, "sfu_rtp_packets_forwarded_total"),
                               bytesOut: MetricsText.sum(m, "sfu_rtp_bytes_forwarded_total"), drops: MetricsText.drops(m))
        c.datagramsOut = MetricsText.sum(m, "sfu_udp_datagrams_sent_total")
        c.rtcpIn = MetricsText.sum(m, "sfu_rtcp_packets_received_total")
        c.srtpBackend = MetricsText.label(m, "sfu_srtp_backend", "backend")
        c.srtpVersion = MetricsText.label(m, "sfu_srtp_backend", "version")
        c.srtpProtectNanoseconds = MetricsText.value(m, "sfu_srtp_protect_nanoseconds")
        c.recordingBytes = MetricsText.sum(m, "sfu_recording_bytes_written_total")
        c.recordingStreams = MetricsText.sum(m, "sfu_recording_streams")
        c.recordingRefused = MetricsText.sum(m, "sfu_recording_packets_refused_total")
        return c
    }

    public func subscriberStats(rooms: Int) async -> [String: SubscriberSample]? {
        var out: [String: SubscriberSample] = [:]
        for r in 0..<rooms {
            guard let reply = try? await api.call("GET", "v1/rooms/\(room(r))/stats"), reply.status == 200 else { continue }
            out.merge(Self.subscriberSamples(reply.json, room: room(r))) { a, _ in a }
        }
        return out
    }

    /// The bench's subscribers ("sub" ids) in a room stats reply.
    static func subscriberSamples(_ json: [String: Any], room: String) -> [String: SubscriberSample] {
        var out: [String: SubscriberSample] = [:]
        for p in json["participants"] as? [[String: Any]] ?? [] {
            guard let id = p["participant"] as? String, id.hasPrefix("sub") else { continue }
            let layers = (p["slots"] as? [[String: Any]] ?? []).compactMap { ($0["layer"] as? NSNumber)?.intValue }
            out["\(room)/\(id)"] = SubscriberSample(estimate: (p["bandwidth_estimate"] as? NSNumber)?.doubleValue,
                                                     videos: (p["number_of_videos"] as? NSNumber)?.intValue, layers: layers)
        }
        return out
    }

    public func watchDominantSpeaker(_ record: @escaping @Sendable (Int, String, Int64) -> Void) async {
        let roomPrefix = roomPrefix
        await EventStream(api: api.base, key: api.key).run { e in
            guard e.type == "dominant_speaker", let room = e.room, room.hasPrefix(roomPrefix), let r = Int(room.dropFirst(roomPrefix.count)),
                  let p = e["participant"] as? String, let ms = (e["time"] as? NSNumber)?.int64Value else { return }
            record(r, p, ms)
        }
    }

    public func finish(rooms: Int) async {
        for r in 0..<rooms { _ = try? await api.call("DELETE", "v1/rooms/\(room(r))") }
    }
}

