import NodeIO
import SFU
import WebRTCEdge

/// Everything an operator can set, each with a default that works on one machine without a config file.
/// Values come from a file (`--config`), then the environment (`SFU_<SECTION>_<KEY>`), then flags
/// (`--set section.key=value`), each overriding the one before. A bad value stops start-up with an error that
/// names the key and where it came from.
public struct NodeConfiguration: Sendable, Equatable {
    /// Control API address; beyond loopback only with an API key.
    public var apiListen = TransportAddress("127.0.0.1:8080")!
    /// The control API's address of the other family, when it listens on both (dual stack).
    public var apiListenAlso: [TransportAddress] = []
    /// When set, every API request needs `Authorization: Bearer <key>`.
    public var apiKey: String?
    /// Media address of the first worker; worker i listens on port + i.
    public var mediaListen = TransportAddress("127.0.0.1:10000")!
    /// The media address of the other family, when workers listen on both (dual stack): worker i uses its
    /// port + i too, and answers carry candidates of both families.
    public var mediaListenAlso: [TransportAddress] = []
    /// Extra addresses put in ICE candidates (a node behind NAT or with a public IP).
    public var mediaAnnounced: [String] = []
    /// Whether each worker also listens on TCP (the same port number as its UDP socket when it is free) and
    /// offers it as a passive ICE-TCP candidate (RFC 6544): clients whose networks block UDP still connect.
    public var mediaTCP = true
    public var tcpLimits = TCPLimits()
    /// Worker threads; 0 means one per core.
    public var workers = 0
    /// PEM files of the DTLS identity; both empty means a fresh ECDSA P-256 certificate at start.
    public var dtlsCertificateFile = ""
    public var dtlsKeyFile = ""
    /// Defaults for rooms created without these settings.
    public var roomMaxActiveTalkers = 6
    public var roomStreamBandwidthKbps = 300
    public var roomLevelSource: LevelSource = .decode
    public var roomScreenShare: ScreenShareRule = .always
    public var roomVideoDegradation: VideoDegradation = .layersFirst
    /// Who counts as speaking and how the dominant speaker is elected, in every room (`talkers.*`): the
    /// defaults were chosen with `sfu tune` (Benchmarks/README.md, "Choosing the talker detector's
    /// defaults"); an operator whose rooms differ (noisier microphones, another language's rhythm) can tune
    /// them on their own meetings and set them here without a new build.
    public var roomDetector = DominantSpeakerDetector.Configuration()
    public var roomSustainedSpeech = RoomConfiguration().sustainedSpeech
    public var roomOnsetReplay = RoomConfiguration().onsetReplay
    public var roomOnsetPause = RoomConfiguration().onsetPause
    /// Where recordings are written (`<directory>/<room>/<recording>/`), relative to the working directory
    /// unless absolute.
    public var recordingDirectory = "recordings"
    /// The hosts live streams may be pushed to (RTMP servers, CDN ingest names, `host` or `host:port`); empty:
    /// any public address on port 1935 or 443. A node pushes where a moderator's URL says: `streamingRule`.
    public var streamingRTMPHosts: [String] = []
    /// The FFmpeg live streams run.
    public var streamingFFmpeg = "/usr/bin/ffmpeg"
    /// Megabytes all recordings in the directory may take on this node, and one room's; 0: no cap.
    public var recordingNodeCapMB = 0
    public var recordingRoomCapMB = 0
    /// Packets each worker's queue to the recording writer holds before it drops (and counts) them.
    public var recordingQueuePackets = 4096
    /// Events each worker holds for the control plane (drained every 10 ms) before it drops and counts them.
    public var eventsQueue = 10_000
    /// Events a slow `/v1/events` consumer may fall behind by before it loses (and is told).
    public var eventsConsumerBuffer = 1024
    /// Events kept for consumers that reconnect with `since=<seq>`.
    public var eventsHistory = 1024
    public var logLevel = "info"
    /// `text` (one line, key=value metadata) or `json` (one object per line, for log shippers).
    public var logFormat = "text"
    /// Browser origins allowed to call the API (`Origin` header); none by default: a request from a web
    /// page of another origin is refused, so a page cannot drive a node that listens on loopback.
    public var apiAllowedOrigins: [String] = []
    /// Rooms the node holds at once.
    public var maxRooms = 1000
    /// Per-room and per-worker caps and budgets (participants, slots, tracks, SSRCs, RTCP items, resends,
    /// handshakes).
    public var workerLimits = WorkerLimits()
    /// How long an API call waits for its room's worker before it fails with 503 (nothing done).
    public var commandTimeoutMilliseconds = 5000
    /// Datagrams a worker reads per pass of its loop before it runs commands and timers again.
    public var datagramsPerPass = 1024
    /// ICE consent lifetime (RFC 7675 section 5.1 says 30 s): a client silent this long is gone.
    public var consentSeconds = 30
    /// The cluster registry (`postgres://...`); empty: one node on its own, no database (docs/cluster.md).
    public var clusterRegistry = ""
    /// This node's id in the registry; empty: the host name.
    public var clusterNodeID = ""
    public var clusterRegion = ""
    /// The control API's URL signaling servers are sent to; empty: http:// and `api.listen`.
    public var clusterControlURL = ""
    /// Participants the node takes at most, for placement.
    public var clusterCapacity = 1000
    /// The IP address this node's relay sockets bind to, which other nodes of the cluster send relayed media
    /// to; empty: the IP address of `media.listen`.
    public var clusterRelayIP = ""
    /// A node whose last heartbeat is older than this (on the registry's clock) is dead.
    /// 3 s: a dead node's participants have media again within 5 s with a signaling server that rejoins them on
    /// `node_lost` (Benchmarks/README.md); a node whose heartbeats stall for over 2 s is taken for dead.
    public var clusterHeartbeatTimeoutSeconds = 3

    public init() {}

    /// Where a live stream's RTMP URL may point (`streaming.rtmp_hosts`).
    public var streamingRule: OutboundRule {
        OutboundRule(entries: streamingRTMPHosts.compactMap(OutboundRule.Entry.init), defaultPorts: [1935, 443], key: "streaming.rtmp_hosts")
    }

    /// Every key, defined once (see `ConfigKey`), in the order the printed file and the docs list them.
    public static let table: [ConfigKey] = [
        .int("workers", 0...256, \.workers, "worker threads, 0 = one per core"),
        .addresses("api.listen", \.apiListen, \.apiListenAlso, "control API address (host:port), or one IPv4 and one IPv6 address"),
        ConfigKey(name: "api.key", help: "bearer key for the control API; required to listen beyond loopback. Give it in the file or SFU_API_KEY, not --set: a command line is readable by every local user",
                  expected: "a string", current: { .string($0.apiKey ?? "") },
                  store: { c, v in
                      guard case .string(let k) = v else { return false }
                      c.apiKey = k.isEmpty ? nil : k
                      return true
                  }).secret(),
        .list("api.allowed_origins", of: "origins like \"https://app.example.com\"", \.apiAllowedOrigins,
              "browser origins allowed to call the API, e.g. [\"https://app.example.com\"]; others get 403",
              valid: { $0.hasPrefix("http://") || $0.hasPrefix("https://") }),
        .addresses("media.listen", \.mediaListen, \.mediaListenAlso,
                   "media address of worker 0 (UDP, and TCP when media.tcp), or one IPv4 and one IPv6 address (dual stack); worker i uses port + i"),
        .bool("media.tcp", \.mediaTCP,
              "also accept ICE over TCP (RFC 6544 passive candidates) on each worker's media port number, for clients whose networks block UDP"),
        .list("media.announced", of: "addresses like \"203.0.113.7:10000\"", \.mediaAnnounced,
              "extra ICE candidate addresses, e.g. [\"203.0.113.7:10000\"]", valid: { TransportAddress($0) != nil }),
        .string("dtls.certificate", \.dtlsCertificateFile, "PEM certificate file (empty: generate one at start)"),
        .string("dtls.key", \.dtlsKeyFile, "PEM private key file"),
        .int("rooms.max_active_talkers", RoomConfiguration.maxActiveTalkersRange, \.roomMaxActiveTalkers, "default max_active_talkers, 1-12"),
        .int("rooms.stream_bandwidth", 1...100_000, \.roomStreamBandwidthKbps,
             "default per-video bandwidth in kbps, until the node has measured the videos it forwards"),
        .int("rooms.spread_after", 0...1_000_000, \.workerLimits.spreadRoomAfter,
             "subscribers a room keeps on its own worker; past that, new ones go to the worker with the fewest of them (0 = never)"),
        ConfigKey(name: "rooms.level_source", help: "default audio level source: extension, decode or verify",
                  expected: "extension, decode or verify", current: { .string($0.roomLevelSource.rawValue) },
                  store: { c, v in
                      guard case .string(let s) = v, let l = LevelSource(rawValue: s) else { return false }
                      c.roomLevelSource = l
                      return true
                  }),
        .oneOf("rooms.screen_share", \.roomScreenShare,
               "default screen share rule: always (every share while present, whoever talks) or with_talker (while its presenter is a talker)"),
        .oneOf("rooms.video_degradation", \.roomVideoDegradation,
               "default order in which a falling estimate takes video away: layers_first (lower simulcast layers, then fewer videos) or videos_first"),
        .scaled("talkers.speaking_threshold", 0...127, "loudness (-dBov) a 20 ms sample needs to count toward speaking",
                get: { Int($0.roomDetector.speakingThreshold) }, set: { $0.roomDetector.speakingThreshold = UInt8($1) }),
        .int("talkers.speaking_min_samples", 1...20, \.roomDetector.speakingMinSamples,
             "loud samples in 400 ms that make a participant speaking (4 = 80 ms)"),
        .int("talkers.hold_min_samples", 0...40, \.roomDetector.holdMinSamples,
             "loud samples in 800 ms that keep a participant speaking through a pause (0: the 400 ms before had speaking_min_samples)"),
        .scaled("talkers.speaking_interval_ms", 20...1000, "how often who is speaking is checked, ms",
                get: { Int($0.roomDetector.speakingInterval.milliseconds) },
                set: { $0.roomDetector.speakingInterval = .milliseconds(Int64($1)) }),
        .scaled("talkers.decision_interval_ms", 100...5000, "how often the dominant speaker is elected, ms",
                get: { Int($0.roomDetector.decisionInterval.milliseconds) },
                set: { $0.roomDetector.decisionInterval = .milliseconds(Int64($1)) }),
        .scaled("talkers.sustained_speech_ms", 0...10_000,
                "speech after which a talker who is not the dominant speaker holds the floor (takes a video, leads the recency order), ms",
                get: { Int($0.roomSustainedSpeech.milliseconds) }, set: { $0.roomSustainedSpeech = .milliseconds(Int64($1)) }),
        .scaled("talkers.onset_replay_ms", 0...1_000,
                "how much of a new talker's utterance (from its first loud frame) an audio slot sends first when it takes the talker over, ms; 0: none",
                get: { Int($0.roomOnsetReplay.milliseconds) }, set: { $0.roomOnsetReplay = .milliseconds(Int64($1)) }),
        .scaled("talkers.onset_pause_ms", 20...2_000,
                "quiet shorter than this stays in the utterance a slot sends first (longer: the utterance starts after it), ms",
                get: { Int($0.roomOnsetPause.milliseconds) }, set: { $0.roomOnsetPause = .milliseconds(Int64($1)) }),
        .list("streaming.rtmp_hosts", of: "host names or addresses, each with :port or not", \.streamingRTMPHosts,
              "the only hosts a live stream's rtmp_url may name (others: 5125), on ports 1935 and 443 or the port listed (host:port), at any address; empty: any host at a public address (no loopback, private, link-local or unique-local one) on port 1935 or 443",
              valid: { OutboundRule.Entry($0) != nil }),
        .string("streaming.ffmpeg", \.streamingFFmpeg, "the FFmpeg executable live streams run"),
        .string("recording.directory", \.recordingDirectory, "where recordings are written: <directory>/<room>/<recording>/"),
        .int("recording.node_cap_mb", 0...100_000_000, \.recordingNodeCapMB,
             "megabytes all recordings in the directory may take (a recording stops when it would pass); 0: no cap"),
        .int("recording.room_cap_mb", 0...100_000_000, \.recordingRoomCapMB, "megabytes one room's recordings may take on this node; 0: no cap"),
        .int("recording.queue_packets", 64...1_000_000, \.recordingQueuePackets,
             "packets each worker's queue to the recording writer holds (a slow disk drops past it, counted)"),
        .int("events.queue", 1...10_000_000, \.eventsQueue, "events each worker holds for the control plane before dropping"),
        .int("events.consumer_buffer", 1...1_000_000, \.eventsConsumerBuffer,
             "events a slow /v1/events consumer may fall behind by before it loses some"),
        .int("events.history", 0...1_000_000, \.eventsHistory, "recent events kept for consumers resuming with since=<seq>"),
        .choice("log.level", ["trace", "debug", "info", "notice", "warning", "error", "critical"], \.logLevel, "how much the node logs"),
        .choice("log.format", ["text", "json"], \.logFormat, "text (key=value metadata) or json (one object per line)"),
        .int("ice.consent_seconds", 3...600, \.consentSeconds, "a client that sends no valid ICE check this long is gone (RFC 7675: 30)"),
        .string("cluster.registry", \.clusterRegistry,
                "postgres://user@host/db of the cluster registry; empty: one node, no database. With a password in it: in the file or SFU_CLUSTER_REGISTRY, not --set")
            .secretPassword(),
        .string("cluster.node_id", \.clusterNodeID, "this node's id in the registry; empty: the host name"),
        .string("cluster.region", \.clusterRegion, "the node's region, recorded in the registry"),
        .string("cluster.control_url", \.clusterControlURL,
                "the control API URL signaling servers and other nodes are sent to; empty: http://<api.listen> in a cluster (needed when api.listen is 0.0.0.0 or [::]), the address the request came to without one"),
        .int("cluster.capacity", 1...10_000_000, \.clusterCapacity, "participants this node takes at most, for placement"),
        .string("cluster.relay_ip", \.clusterRelayIP,
                "IP address of the sockets other nodes relay media to (one port per relayed room); empty: the IP of media.listen"),
        .int("cluster.heartbeat_timeout_seconds", 2...600, \.clusterHeartbeatTimeoutSeconds,
             "a node whose last heartbeat (each second) is older than this, on the registry's clock, is dead (reported within half a second)"),
        .int("limits.rooms", 1...1_000_000, \.maxRooms, "rooms the node holds at once"),
        .int("limits.participants_per_room", 2...100_000, \.workerLimits.room.participants, "participants admitted to one room at once"),
        .int("limits.slots_per_subscription", 1...256, \.workerLimits.room.slotsPerSubscription,
             "slots (recvonly m-lines) one subscription may ask for"),
        .int("limits.tracks_per_publish", 1...64, \.workerLimits.room.tracksPerPublish, "audio and video m-lines one publish offer may send"),
        .int("limits.relays_per_room", 1...256, \.workerLimits.room.relays, "other nodes one room relays to at once (a room that spans nodes)"),
        .int("limits.ssrcs_per_connection", 8...4096, \.workerLimits.room.ssrcsPerConnection,
             "SSRCs libsrtp keeps streams for on one connection; new ones past it are dropped"),
        .int("limits.rtcp_per_second", 10...1_000_000, \.workerLimits.room.rtcpPerSecond,
             "SRTCP datagrams one connection may have decrypted and parsed per second; the rest are dropped"),
        .int("limits.pending_handshakes", 1...100_000, \.workerLimits.pendingHandshakes,
             "transports each worker lets finish ICE and DTLS at once; more offers get 409"),
        .scaled("limits.handshake_seconds", 1...3600, "a transport that has not finished ICE and DTLS this long after its offer is closed",
                get: { Int($0.workerLimits.handshakeTimeout.seconds) }, set: { $0.workerLimits.handshakeTimeout = .seconds(Double($1)) }),
        .int("limits.tcp_connections", 1...1_000_000, \.tcpLimits.maxConnections,
             "ICE-TCP connections one worker holds at once; more are reset"),
        .int("limits.tcp_unauthenticated", 1...100_000, \.tcpLimits.maxUnauthenticated,
             "ICE-TCP connections per worker that have not passed an ICE check; a new one past it closes the oldest"),
        .scaled("limits.tcp_send_buffer_kb", 8...65_536, "frames queued for one slow ICE-TCP reader beyond the kernel's buffer, KiB; past it they are dropped",
                get: { $0.tcpLimits.sendBufferBytes / 1024 }, set: { $0.tcpLimits.sendBufferBytes = $1 * 1024 }),
        .int("limits.rtcp_items_per_packet", 16...65_535, \.workerLimits.room.rtcpItemsPerPacket,
             "RTCP items (packets, report blocks, NACK pairs, transport-cc statuses) parsed per datagram"),
        .int("limits.resend_kbps", 0...1_000_000, \.workerLimits.room.resendKbps, "retransmissions one subscriber may cost at most, kbit/s"),
        .scaled("limits.resend_percent_of_estimate", 0...100, "and at most this share of its bandwidth estimate, percent",
                get: { Int(($0.workerLimits.room.resendShareOfEstimate * 100).rounded()) },
                set: { $0.workerLimits.room.resendShareOfEstimate = Double($1) / 100 }),
        .int("limits.resends_per_packet", 0...20, \.workerLimits.room.maxResendsPerPacket, "times one packet is resent however often it is NACKed"),
        .int("limits.command_timeout_ms", 100...600_000, \.commandTimeoutMilliseconds,
             "an API call waits this long for its worker, then fails with 503 and does nothing"),
        .int("limits.datagrams_per_pass", 64...1_000_000, \.datagramsPerPass, "datagrams a worker reads before it runs commands and timers again"),
    ]

    /// Every key with its meaning (`sfu config --keys`).
    public static var keys: [(key: String, help: String)] { table.map { ($0.name, $0.help) } }

    /// Sets one key; `origin` names where the value came from, for the error.
    public mutating func set(_ key: String, _ value: ConfigValue, origin: String) throws(ConfigError) {
        guard let k = Self.table.first(where: { $0.name == key }) else {
            throw ConfigError(key: key, origin: origin, message: "unknown key (known: \(Self.table.map(\.name).joined(separator: ", ")))")
        }
        guard k.store(&self, value) else { throw ConfigError(key: key, origin: origin, message: "expected \(k.expected), got \(value)") }
    }

    /// Checks what no single key can: the API needs a key beyond loopback; certificate and key come together.
    public func validate() throws(ConfigError) {
        for a in [apiListen] + apiListenAlso where apiKey == nil && !a.isLoopback {
            throw ConfigError(key: "api.listen", origin: "configuration",
                              message: "\(a) is beyond loopback: set api.key so requests must authenticate")
        }
        if dtlsCertificateFile.isEmpty != dtlsKeyFile.isEmpty {
            throw ConfigError(key: "dtls.certificate", origin: "configuration", message: "dtls.certificate and dtls.key go together")
        }
        try checkPorts(workers: workers)
        if !clusterRegistry.isEmpty {
            _ = try relayBindAddress()
            _ = try registeredControlURL()
        }
    }

    /// Where the relay sockets bind (port 0: a free port each): `cluster.relay_ip`, else media.listen's IP,
    /// which must then be a concrete address - other nodes send to it.
    public func relayBindAddress() throws(ConfigError) -> TransportAddress {
        let ip = clusterRelayIP.isEmpty ? mediaListen.host : clusterRelayIP
        let text = ip.contains(":") ? "[\(ip)]:0" : "\(ip):0"
        guard let a = TransportAddress(text) else {
            throw ConfigError(key: "cluster.relay_ip", origin: "configuration", message: "\(ip) is not an IP address")
        }
        guard a.ip != .v4(0), a.ip != .v6(0, 0) else {
            throw ConfigError(key: "cluster.relay_ip", origin: "configuration",
                              message: "\(ip) is no address other nodes can send to: set cluster.relay_ip")
        }
        return a
    }

    /// Worker i listens on media.listen's port + i, and announces each announced port + i: every one of them
    /// must be a port (the last worker's included), or start-up stops here naming the key.
    public func checkPorts(workers count: Int) throws(ConfigError) {
        let last = max(count, 1) - 1
        for a in mediaListenAlso where a.port != 0 && Int(a.port) + last > 65535 {
            throw ConfigError(key: "media.listen", origin: "configuration",
                              message: "port \(a.port) + \(last) (one port per worker) passes 65535")
        }
        if mediaListen.port != 0, Int(mediaListen.port) + last > 65535 {
            throw ConfigError(key: "media.listen", origin: "configuration",
                              message: "port \(mediaListen.port) + \(last) (one port per worker) passes 65535")
        }
        for a in mediaAnnounced.compactMap(TransportAddress.init) where Int(a.port) + last > 65535 {
            throw ConfigError(key: "media.announced", origin: "configuration",
                              message: "port \(a.port) + \(last) (one port per worker) passes 65535")
        }
    }

    /// Builds the configuration: defaults, then the file's text, then the environment, then `--set` flags.
    public static func load(file: (name: String, text: String)?, environment: [String: String],
                            flags: [String]) throws(ConfigError) -> NodeConfiguration {
        var c = NodeConfiguration()
        if let file {
            for (line, key, value) in try ConfigFile.parse(file.text, name: file.name) {
                try c.set(key, value, origin: "\(file.name) line \(line)")
            }
        }
        for (key, _) in keys {
            let name = "SFU_" + key.uppercased().replacingOccurrences(of: ".", with: "_")
            if let text = environment[name] { try c.set(key, ConfigValue.parseLoose(text), origin: "environment \(name)") }
        }
        for flag in flags {
            guard let eq = flag.firstIndex(of: "=") else {
                throw ConfigError(key: flag, origin: "--set", message: "expected key=value")
            }
            try c.set(String(flag[..<eq]), ConfigValue.parseLoose(String(flag[flag.index(after: eq)...])), origin: "--set")
        }
        try c.validate()
        return c
    }

    /// The effective values, in the file's format: top-level keys, then one [section] per group, in table order.
    public var fileText: String { fileText(showingSecrets: true) }

    /// As a file would say it; secrets (`ConfigKey.redacted`: the API key, the registry's password) shown only
    /// with `showingSecrets` - `sfu config` prints to terminals, logs and tickets.
    public func fileText(showingSecrets: Bool) -> String {
        var out = ""
        var section: Substring?
        for k in Self.table {
            if k.section != section {
                if section != nil { out += "\n" }
                if !k.section.isEmpty { out += "[\(k.section)]\n" }
                section = k.section
            }
            let value = k.current(self)
            out += "\(k.leaf) = \((showingSecrets ? value : k.redacted?(value) ?? value).fileText)\n"
        }
        return out
    }

    /// The reference of every key with its default (docs/configuration.md is this text; a test keeps it so).
    public static var markdownReference: String {
        let defaults = NodeConfiguration()
        var out = """
            # Configuration keys

            Generated by `sfu config --markdown` from the one table that also drives parsing; do not edit by hand.
            Sources, each overriding the one before: defaults, `--config FILE` (TOML: `[section]` headers, `key = value`),
            `SFU_<SECTION>_<KEY>` environment variables (e.g. `SFU_LIMITS_ROOMS=50`), `--set section.key=value`.

            | key | default | values | meaning |
            |---|---|---|---|

            """
        for k in table {
            out += "| `\(k.name)` | `\(k.current(defaults).fileText)` | \(k.expected.replacingOccurrences(of: "|", with: "\\|")) | \(k.help) |\n"
        }
        return out
    }
}

/// A refused configuration value: which key, where it came from, what was wrong.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public var key: String
    public var origin: String
    public var message: String

    public init(key: String, origin: String, message: String) {
        self.key = key
        self.origin = origin
        self.message = message
    }

    public var description: String { "configuration error in \(origin), key '\(key)': \(message)" }
}

extension TransportAddress {
    var isLoopback: Bool {
        switch ip {
        case .v4(let v): v >> 24 == 127
        case .v6(let hi, let lo): hi == 0 && lo == 1
        }
    }
}
