import Foundation
import Logging
import NodeIO
import SFU
import Synchronization
import WebRTCEdge

/// Live streaming over RTMP on this node (EnableX startStreaming / stopStreaming): the room's side is
/// `RoomLiveStream` (its slots follow the active talkers), the worker's is `WorkerLiveStreams` (each slot's
/// packets to the encoder's port), the encoder is a supervised FFmpeg (`LiveEncoder`). It owns the encoders and
/// the loopback ports they hold; the node holds it and stops it with itself.
public final class NodeLiveStreams: Sendable {
    private let rooms: NodeRooms
    private let logger: Logger
    /// Where a moderator's URL may point (`streaming.rtmp_hosts` and the default rule).
    private let rule: OutboundRule
    private let ffmpeg: String
    /// The live streams' encoders, by stream id.
    private let encoders = Mutex<[String: LiveEncoder]>([:])
    /// The loopback ports each live stream's encoder has, for the stream's life.
    private let heldPorts = Mutex<[String: [UInt16]]>([:])

    init(configuration c: NodeConfiguration, rooms: NodeRooms, logger: Logger) {
        self.rooms = rooms
        self.logger = logger
        rule = c.streamingRule
        ffmpeg = c.streamingFFmpeg
    }

    /// Every encoder told to stop at once (SIGTERM: each FFmpeg ends its RTMP stream while the rest of the node
    /// stops); `finishStop` waits for them, within one `LiveEncoder.stopGrace`.
    func beginStop() -> LiveEncoder.Stopping {
        LiveEncoder.beginStop(encoders.withLock { e in defer { e.removeAll() }; return Array(e.values) })
    }

    func finishStop(_ stopping: LiveEncoder.Stopping) {
        LiveEncoder.finishStop(stopping)
        heldPorts.withLock { $0.removeAll() }
    }

    /// The live stream of a room that ended: its encoder stops (the room told its own event).
    func roomEnded(stream id: String) async {
        if let e = encoders.withLock({ $0.removeValue(forKey: id) }) { await e.stopped() }
        _ = heldPorts.withLock { $0.removeValue(forKey: id) }
    }

    /// What the seeds' `rtmpDetails` carry: the RTMP URL (with its stream key) and, optionally, a view URL.
    public struct StreamingConfiguration: Sendable {
        public var rtmpURL: String
        public var viewURL: String?

        public init(rtmpURL: String, viewURL: String? = nil) {
            self.rtmpURL = rtmpURL
            self.viewURL = viewURL
        }

        /// The RTMP URL's target; 5125 unless `rtmpURL` is an rtmp:// or rtmps:// URL with a host (and
        /// `viewURL`, given, an http(s) one), at most 2048 characters, printable, without spaces, whose host and
        /// port `rule` allows. Its addresses are checked later (`resolve`), once a moderator asked.
        func check(rule: OutboundRule) throws -> RTMPTarget {
            guard let target = RTMPTarget(rtmpURL) else {
                throw APIError(.badRequest, code: 5125, "invalid stream configuration: rtmp_url must be an rtmp:// or rtmps:// URL with a host")
            }
            if let v = viewURL {
                guard v.count <= 2048, v.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
                      let u = URLComponents(string: v), ["http", "https"].contains(u.scheme?.lowercased()), !(u.host ?? "").isEmpty else {
                    throw APIError(.badRequest, code: 5125, "invalid stream configuration: view_url must be an http(s) URL")
                }
            }
            do { try rule.check(host: target.host, port: target.port) } catch {
                throw APIError(.badRequest, code: 5125, "invalid stream configuration: rtmp_url: \(error)")
            }
            return target
        }

        /// 5125 unless every address `target`'s host resolves to is one `rule` allows (`CheckedResolver`).
        static func resolve(_ target: RTMPTarget, rule: OutboundRule) async throws {
            do { _ = try await CheckedResolver.resolve(target.host, port: target.port, rule: rule) } catch {
                throw APIError(.badRequest, code: 5125, "invalid stream configuration: rtmp_url: \(error)")
            }
        }
    }

    /// Audio slots a live stream mixes: the top talkers, at most three (what a listener follows at once).
    static func liveAudioSlots(maxActiveTalkers: Int) -> Int { min(3, max(1, maxActiveTalkers)) }

    /// Starts streaming `room` to `config.rtmpURL`: the room's slots, the encoder's ports and SDP, FFmpeg.
    /// Returns the stream's id.
    public func start(room: String, by: String, _ config: StreamingConfiguration) async throws -> String {
        let rule = rule
        let target = try config.check(rule: rule)
        let id = "live-" + NodeRecordings.newID().dropFirst(4)
        try await rooms.withRoom(room) { r, _, now in try r.liveStream.requestStart(id: id, by: by, now: now) }
        do {
            // Only for a moderator's request: nobody else makes the node look names up.
            try await StreamingConfiguration.resolve(target, rule: rule)
            let audio = try await rooms.withRoom(room) { r, _, _ in Self.liveAudioSlots(maxActiveTalkers: r.configuration.maxActiveTalkers) }
            // Ports held for the stream's whole life (its restarts too): no other stream of this node gets them.
            let ports = try heldPorts.withLock { held in
                let p = try Self.freePortPairs(audio + 1, avoiding: held.values.flatMap { $0 })
                held[id] = p
                return p
            }
            let sdpPath = NSTemporaryDirectory() + "sfu-\(id).sdp"
            // The encoder is in the table before the room streams: a stop from now on finds it.
            let encoder = try LiveEncoder(
                id: id, sdp: Self.sdp(room: room, audioSlots: audio, ports: ports), sdpPath: sdpPath,
                arguments: Self.encoderArguments(sdp: sdpPath, audioSlots: audio, url: target.url), target: target, rule: rule,
                executable: ffmpeg,
                onRestart: { [weak self] why in
                    guard let self else { return }
                    logger.warning("live stream encoder restarts", metadata: ["room": "\(room)", "stream": "\(id)", "reason": "\(why)"])
                    Task { _ = try? await self.rooms.withRoom(room) { r, _, _ in r.liveStream.notice(id: id, reason: "encoder restarted: \(why)") } }
                },
                onGiveUp: { [weak self] why in
                    guard let self else { return }
                    logger.error("live stream failed", metadata: ["room": "\(room)", "stream": "\(id)", "reason": "\(why)"])
                    Task { await self.endStream(room: room, id: id, reason: "encoder gave up: \(why)", failed: true) }
                })
            encoder.onOutputOpen = { [weak self] in
                guard let self else { return }
                logger.info("live stream is live", metadata: ["room": "\(room)", "stream": "\(id)", "at": "\(target.shown)"])
                Task { _ = try? await self.rooms.withRoom(room) { r, _, _ in r.liveStream.live(id: id) } }
            }
            encoder.onNeedsKeyframe = { [weak self] in
                guard let self else { return }
                Task { _ = try? await self.rooms.withRoom(room) { r, core, now in r.liveStream.needsKeyframe(id: id, now: now, into: core.batch) } }
            }
            encoder.onPictureUp = { [weak self] seconds, asks in
                self?.logger.info("live stream encoder shows pictures", metadata: [
                    "room": "\(room)", "stream": "\(id)", "after_seconds": "\((seconds * 10).rounded() / 10)", "keyframe_asks": "\(asks)"])
            }
            encoders.withLock { $0[id] = encoder }
            _ = try await rooms.withCore(of: room) { core, now in
                try core.liveStreams.open(room: room, stream: id, host: TransportAddress("127.0.0.1:0")!, ports: ports, audioSlots: audio, now: now)
            }
            try encoder.start()
            _ = try await rooms.withRoom(room) { r, _, _ in r.liveStream.launched(id: id) }
        } catch {
            await endStream(room: room, id: id, reason: nil)
            _ = try? await rooms.withRoom(room) { r, _, _ in r.liveStream.startFailed(id: id) }
            if let e = error as? APIError { throw e }
            throw APIError(.serviceUnavailable, code: 6024, "live streaming unavailable: \(error)")
        }
        logger.info("live stream started", metadata: ["room": "\(room)", "stream": "\(id)", "by": "\(by)"])
        return id
    }

    /// Stops the live stream of `room`: the room's slots stop, FFmpeg ends the RTMP stream. Returns its id.
    public func stop(room: String, by: String) async throws -> String {
        let (id, _) = try await rooms.withRoom(room) { r, _, now in try r.liveStream.requestStop(by: by, now: now) }
        await endStream(room: room, id: id, reason: nil)
        logger.info("live stream stopped", metadata: ["room": "\(room)", "stream": "\(id)", "by": "\(by)"])
        return id
    }

    /// The encoder stops, the worker stops sending, the room forgets the stream (and says so: `failed` when
    /// nobody asked).
    func endStream(room: String, id: String, reason: String?, failed: Bool = false) async {
        if let e = encoders.withLock({ $0.removeValue(forKey: id) }) { await e.stopped() }
        _ = heldPorts.withLock { $0.removeValue(forKey: id) }
        // Only this stream's connection: a late cleanup of an old stream must not end the current one.
        _ = try? await rooms.withCore(of: room) { core, _ in
            if let c = core.room(room)?.liveStream.stopped(id: id, reason: reason, failed: failed) { core.liveStreams.close(c) }
        }
    }

    /// The SDP FFmpeg reads: one m-line per slot (the video slot, then the audio slots, as the room makes
    /// them: `RoomLiveStream.started`), each on its own port (RTCP on the port above).
    static func sdp(room: String, audioSlots: Int, ports: [UInt16]) -> String {
        var l = ["v=0", "o=- 0 0 IN IP4 127.0.0.1", "s=\(room) live", "c=IN IP4 127.0.0.1", "t=0 0"]
        let v = RoomLiveStream.videoPayloadType, a = RoomLiveStream.audioPayloadType
        l += ["m=video \(ports[0]) RTP/AVP \(v)", "a=rtpmap:\(v) VP8/90000"]
        for port in ports.dropFirst().prefix(audioSlots) { l += ["m=audio \(port) RTP/AVP \(a)", "a=rtpmap:\(a) opus/48000/2"] }
        return l.joined(separator: "\r\n") + "\r\n"
    }

    /// FFmpeg's arguments: the SDP in; the video slot scaled into 1280x720, the audio slots mixed; H.264 and AAC
    /// in FLV to the RTMP URL.
    static func encoderArguments(sdp: String, audioSlots: Int, url: String) -> [String] {
        let audio = (0..<audioSlots).map { "[0:a:\($0)]" }.joined()
        let mix = audioSlots > 1 ? "\(audio)amix=inputs=\(audioSlots):normalize=0:dropout_transition=0[a]" : "\(audio)anull[a]"
        let graph = "[0:v:0]scale=1280:720:force_original_aspect_ratio=decrease,pad=1280:720:(ow-iw)/2:(oh-ih)/2,fps=30,format=yuv420p[v];" + mix
        // rtmps: the server's certificate is checked against the system's CAs.
        let tls = url.hasPrefix("rtmps:") ? ["-tls_verify", "1", "-ca_file", "/etc/ssl/certs/ca-certificates.crt"] : []
        // Progress reports on standard output, twice a second: `LiveEncoder` asks for key frames until pictures come.
        return ["-hide_banner", "-nostdin", "-loglevel", "error", "-progress", "pipe:1", "-stats_period", "0.5", "-protocol_whitelist", "file,udp,rtp",
                // Probing stops after 1.5 s (the SDP names every codec; a picture's size comes with its first key frame).
                "-fflags", "+genpts", "-analyzeduration", "1500000", "-probesize", "2000000", "-i", sdp, "-filter_complex", graph, "-map", "[v]", "-map", "[a]",
                "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", "60", "-b:v", "2500k", "-maxrate", "2500k",
                "-bufsize", "5000k", "-c:a", "aac", "-b:a", "128k", "-ar", "48000"] + tls + ["-f", "flv", url]
    }

    /// `n` loopback ports p, each with p + 1 free too (RTCP), for the encoder to bind.
    static func freePortPairs(_ n: Int, avoiding held: [UInt16] = []) throws -> [UInt16] {
        var out: [UInt16] = []
        var tries = 0
        while out.count < n, tries < 200 {
            tries += 1
            guard let a = try? UDPSocket(bind: TransportAddress("127.0.0.1:0")!) else { continue }
            let p = a.local.port
            let taken = out + held
            guard p < 65534, !taken.contains(p), !taken.contains(p &+ 1), !taken.contains(p &- 1),
                  (try? UDPSocket(bind: TransportAddress("127.0.0.1:\(p + 1)")!)) != nil else { continue }
            out.append(p)
        }
        guard out.count == n else { throw APIError(.serviceUnavailable, code: 6024, "no free loopback ports for the encoder") }
        return out
    }
}
