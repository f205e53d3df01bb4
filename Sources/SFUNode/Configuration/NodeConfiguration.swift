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
    /// When set, every API request needs `Authorization: Bearer <key>`.
    public var apiKey: String?
    /// Media address of the first worker; worker i listens on port + i.
    public var mediaListen = TransportAddress("127.0.0.1:10000")!
    /// Extra addresses put in ICE candidates (a node behind NAT or with a public IP).
    public var mediaAnnounced: [String] = []
    /// Worker threads; 0 means one per core.
    public var workers = 0
    /// PEM files of the DTLS identity; both empty means a fresh ECDSA P-256 certificate at start.
    public var dtlsCertificateFile = ""
    public var dtlsKeyFile = ""
    /// Defaults for rooms created without these settings.
    public var roomMaxActiveTalkers = 6
    public var roomStreamBandwidthKbps = 300
    public var roomLevelSource: LevelSource = .decode
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

    public init() {}

    /// Every key, as written in the file (section.key), with its description: the source of `sfu config`.
    public static let keys: [(key: String, help: String)] = [
        ("api.listen", "control API address (host:port)"),
        ("api.key", "bearer key for the control API; required to listen beyond loopback"),
        ("media.listen", "media UDP address of worker 0; worker i uses port + i"),
        ("media.announced", "extra ICE candidate addresses, e.g. [\"203.0.113.7:10000\"]"),
        ("workers", "worker threads, 0 = one per core"),
        ("dtls.certificate", "PEM certificate file (empty: generate one at start)"),
        ("dtls.key", "PEM private key file"),
        ("rooms.max_active_talkers", "default max_active_talkers, 1-12"),
        ("rooms.stream_bandwidth", "default per-video bandwidth in kbps"),
        ("rooms.level_source", "default audio level source: extension, decode or verify"),
        ("events.queue", "events each worker holds for the control plane before dropping"),
        ("events.consumer_buffer", "events a slow /v1/events consumer may fall behind by before it loses some"),
        ("events.history", "recent events kept for consumers resuming with since=<seq>"),
        ("log.level", "trace, debug, info, notice, warning, error or critical"),
        ("log.format", "text or json"),
        ("api.allowed_origins", "browser origins allowed to call the API, e.g. [\"https://app.example.com\"]; others get 403"),
        ("ice.consent_seconds", "a client that sends no valid ICE check this long is gone (RFC 7675: 30)"),
        ("limits.rooms", "rooms the node holds at once"),
        ("limits.participants_per_room", "participants admitted to one room at once"),
        ("limits.slots_per_subscription", "slots (recvonly m-lines) one subscription may ask for"),
        ("limits.tracks_per_publish", "audio and video m-lines one publish offer may send"),
        ("limits.ssrcs_per_connection", "SSRCs libsrtp keeps streams for on one connection; new ones past it are dropped"),
        ("limits.pending_handshakes", "transports each worker lets finish ICE and DTLS at once; more offers get 409"),
        ("limits.handshake_seconds", "a transport that has not finished ICE and DTLS this long after its offer is closed"),
        ("limits.rtcp_items_per_packet", "RTCP items (packets, report blocks, NACK pairs, transport-cc statuses) parsed per datagram"),
        ("limits.resend_kbps", "retransmissions one subscriber may cost at most, kbit/s"),
        ("limits.resend_percent_of_estimate", "and at most this share of its bandwidth estimate, percent"),
        ("limits.resends_per_packet", "times one packet is resent however often it is NACKed"),
        ("limits.command_timeout_ms", "an API call waits this long for its worker, then fails with 503 and does nothing"),
        ("limits.datagrams_per_pass", "datagrams a worker reads before it runs commands and timers again"),
    ]

    /// Sets one key from text; `origin` names where the value came from, for the error.
    public mutating func set(_ key: String, _ value: ConfigValue, origin: String) throws(ConfigError) {
        func fail(_ expected: String) -> ConfigError {
            ConfigError(key: key, origin: origin, message: "expected \(expected), got \(value)")
        }
        func address() throws(ConfigError) -> TransportAddress {
            guard case .string(let s) = value, let a = TransportAddress(s) else { throw fail("an address like \"127.0.0.1:8080\"") }
            return a
        }
        func int(_ range: ClosedRange<Int>) throws(ConfigError) -> Int {
            guard case .int(let i) = value, range.contains(i) else { throw fail("a whole number \(range.lowerBound)-\(range.upperBound)") }
            return i
        }
        func string() throws(ConfigError) -> String {
            guard case .string(let s) = value else { throw fail("a string") }
            return s
        }
        switch key {
        case "api.listen": apiListen = try address()
        case "api.key":
            let k = try string()
            apiKey = k.isEmpty ? nil : k
        case "media.listen": mediaListen = try address()
        case "media.announced":
            guard case .array(let items) = value else { throw fail("a list of addresses") }
            var list: [String] = []
            for item in items {
                guard case .string(let s) = item, TransportAddress(s) != nil else { throw fail("a list of addresses like \"203.0.113.7:10000\"") }
                list.append(s)
            }
            mediaAnnounced = list
        case "workers": workers = try int(0...256)
        case "dtls.certificate": dtlsCertificateFile = try string()
        case "dtls.key": dtlsKeyFile = try string()
        case "rooms.max_active_talkers": roomMaxActiveTalkers = try int(RoomConfiguration.maxActiveTalkersRange)
        case "rooms.stream_bandwidth": roomStreamBandwidthKbps = try int(1...100_000)
        case "rooms.level_source":
            guard let s = LevelSource(rawValue: try string()) else { throw fail("extension, decode or verify") }
            roomLevelSource = s
        case "events.queue": eventsQueue = try int(1...10_000_000)
        case "events.consumer_buffer": eventsConsumerBuffer = try int(1...1_000_000)
        case "events.history": eventsHistory = try int(0...1_000_000)
        case "log.level":
            let l = try string()
            guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(l) else {
                throw fail("trace, debug, info, notice, warning, error or critical")
            }
            logLevel = l
        case "log.format":
            let f = try string()
            guard ["text", "json"].contains(f) else { throw fail("text or json") }
            logFormat = f
        case "api.allowed_origins":
            guard case .array(let items) = value else { throw fail("a list of origins") }
            var list: [String] = []
            for item in items {
                guard case .string(let o) = item, o.hasPrefix("http://") || o.hasPrefix("https://") else {
                    throw fail("a list of origins like \"https://app.example.com\"")
                }
                list.append(o)
            }
            apiAllowedOrigins = list
        case "ice.consent_seconds": consentSeconds = try int(3...600)
        case "limits.rooms": maxRooms = try int(1...1_000_000)
        case "limits.participants_per_room": workerLimits.room.participants = try int(2...100_000)
        case "limits.slots_per_subscription": workerLimits.room.slotsPerSubscription = try int(1...256)
        case "limits.tracks_per_publish": workerLimits.room.tracksPerPublish = try int(1...64)
        case "limits.ssrcs_per_connection": workerLimits.room.ssrcsPerConnection = try int(8...4096)
        case "limits.pending_handshakes": workerLimits.pendingHandshakes = try int(1...100_000)
        case "limits.handshake_seconds": workerLimits.handshakeTimeout = .seconds(Double(try int(1...3600)))
        case "limits.rtcp_items_per_packet": workerLimits.room.rtcpItemsPerPacket = try int(16...65_535)
        case "limits.resend_kbps": workerLimits.room.resendKbps = try int(0...1_000_000)
        case "limits.resend_percent_of_estimate": workerLimits.room.resendShareOfEstimate = Double(try int(0...100)) / 100
        case "limits.resends_per_packet": workerLimits.room.maxResendsPerPacket = try int(0...20)
        case "limits.command_timeout_ms": commandTimeoutMilliseconds = try int(100...600_000)
        case "limits.datagrams_per_pass": datagramsPerPass = try int(64...1_000_000)
        default:
            throw ConfigError(key: key, origin: origin, message: "unknown key (known: \(Self.keys.map(\.key).joined(separator: ", ")))")
        }
    }

    /// Checks what no single key can: the API needs a key beyond loopback; certificate and key come together.
    public func validate() throws(ConfigError) {
        if apiKey == nil, !apiListen.isLoopback {
            throw ConfigError(key: "api.listen", origin: "configuration",
                              message: "\(apiListen) is beyond loopback: set api.key so requests must authenticate")
        }
        if dtlsCertificateFile.isEmpty != dtlsKeyFile.isEmpty {
            throw ConfigError(key: "dtls.certificate", origin: "configuration", message: "dtls.certificate and dtls.key go together")
        }
        try checkPorts(workers: workers)
    }

    /// Worker i listens on media.listen's port + i, and announces each announced port + i: every one of them
    /// must be a port (the last worker's included), or start-up stops here naming the key.
    public func checkPorts(workers count: Int) throws(ConfigError) {
        let last = max(count, 1) - 1
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

    /// The effective values, in the file's format.
    public var fileText: String {
        func q(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        return """
            workers = \(workers)

            [api]
            listen = \(q(apiListen.description))
            key = \(q(apiKey ?? ""))
            allowed_origins = [\(apiAllowedOrigins.map(q).joined(separator: ", "))]

            [media]
            listen = \(q(mediaListen.description))
            announced = [\(mediaAnnounced.map(q).joined(separator: ", "))]

            [dtls]
            certificate = \(q(dtlsCertificateFile))
            key = \(q(dtlsKeyFile))

            [rooms]
            max_active_talkers = \(roomMaxActiveTalkers)
            stream_bandwidth = \(roomStreamBandwidthKbps)
            level_source = \(q(roomLevelSource.rawValue))

            [events]
            queue = \(eventsQueue)
            consumer_buffer = \(eventsConsumerBuffer)
            history = \(eventsHistory)

            [log]
            level = \(q(logLevel))
            format = \(q(logFormat))

            [ice]
            consent_seconds = \(consentSeconds)

            [limits]
            rooms = \(maxRooms)
            participants_per_room = \(workerLimits.room.participants)
            slots_per_subscription = \(workerLimits.room.slotsPerSubscription)
            tracks_per_publish = \(workerLimits.room.tracksPerPublish)
            ssrcs_per_connection = \(workerLimits.room.ssrcsPerConnection)
            pending_handshakes = \(workerLimits.pendingHandshakes)
            handshake_seconds = \(Int(workerLimits.handshakeTimeout.seconds))
            rtcp_items_per_packet = \(workerLimits.room.rtcpItemsPerPacket)
            resend_kbps = \(workerLimits.room.resendKbps)
            resend_percent_of_estimate = \(Int((workerLimits.room.resendShareOfEstimate * 100).rounded()))
            resends_per_packet = \(workerLimits.room.maxResendsPerPacket)
            command_timeout_ms = \(commandTimeoutMilliseconds)
            datagrams_per_pass = \(datagramsPerPass)

            """
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
