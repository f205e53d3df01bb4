import Foundation
import NodeIO
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Janus 1.1 (Debian's `janus`) with its VideoRoom plugin, as the peer SFU the benchmark compares against:
/// started here with a configuration of its own (only the VideoRoom plugin and the plain HTTP transport, ICE
/// lite, candidates on 127.0.0.1, no session timeout), pinned to the same cores as the node.
///
/// Janus gathers no candidates on loopback interfaces: the caller runs both servers in a private network
/// namespace in which 127.0.0.1 is also held by a veth interface (`BenchNamespace`).
///
/// Signalling follows the VideoRoom API: one room per bench room; a publisher `joinandconfigure`s with its
/// offer and gets Janus's answer; a subscriber `join`s with every publisher's feed as one multistream
/// subscription, answers Janus's offer and `start`s. Janus has no talker selection: every subscriber gets
/// every publisher, so the plan's max_active_talkers must cover the publishers for the two to carry the
/// same load.
public final class JanusServer: BenchServer, @unchecked Sendable {
    public let name = "janus"
    let process: Process
    let directory: URL
    let base: URL
    private var session: JanusSession?
    private var admin: Int64 = 0
    private let feeds = Mutex<[Int: [Int64]]>([:])
    private let handles = Mutex<[ObjectIdentifier: Int64]>([:])
    public var pid: Int32? { process.processIdentifier }

    public static let binary = "/usr/bin/janus"
    /// `SFU_BENCH_DEBUG=1`: Janus logs at level 5 with libnice's debug, to stdout, and its log is kept as
    /// /tmp/janus-bench.log.
    static let debug = ProcessInfo.processInfo.environment["SFU_BENCH_DEBUG"] != nil
    static let libraries = "/usr/lib/x86_64-linux-gnu/janus"

    /// Writes the configuration, starts Janus (under taskset when `cores` is given) and waits for its API.
    public init(cores: String? = nil) async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw LoadError("\(Self.binary) is missing: apt-get install janus")
        }
        let port = try NodeProcess.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sfu-bench-janus-\(getpid())-\(port)")
        try Self.writeConfiguration(in: directory, port: port)
        let p = Process()
        var arguments = [Self.binary, "-C", directory.appendingPathComponent("janus.jcfg").path, "-F", directory.path,
                         "-L", directory.appendingPathComponent("janus.log").path, "-N"]
        if Self.debug { arguments += ["-d", "5", "-l"] }
        if let cores {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            arguments = ["-c", cores] + arguments
        } else {
            p.executableURL = URL(fileURLWithPath: arguments.removeFirst())
        }
        p.arguments = arguments
        if !Self.debug { p.standardOutput = FileHandle.nullDevice }
        try Self.runWithTerminationSignalsUnblocked(p)
        process = p
        base = URL(string: "http://127.0.0.1:\(port)/janus")!
        for _ in 0..<100 {
            if let (_, r) = try? await URLSession.shared.data(from: base.appendingPathComponent("info")),
               (r as? HTTPURLResponse)?.statusCode == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        p.terminate()
        throw LoadError("janus did not answer on \(base); the end of its log:\n\(logTail)")
    }

    /// Starts `p` with SIGTERM and SIGINT unblocked: a child inherits the spawning thread's signal mask, and
    /// Swift's concurrency threads block nearly every signal, so Janus (which stops on SIGTERM through a plain
    /// handler) would never see the stop.
    static func runWithTerminationSignalsUnblocked(_ p: Process) throws {
        var stopSignals = sigset_t(), previous = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try p.run()
    }

    /// janus.jcfg, the HTTP transport's and the VideoRoom's configuration, and folders that hold only the
    /// plugin and transport the bench uses (Janus loads every library in its folders).
    static func writeConfiguration(in dir: URL, port: UInt16) throws {
        let fm = FileManager.default
        for sub in ["plugins", "transports", "events", "loggers"] {
            try fm.createDirectory(at: dir.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        try? fm.createSymbolicLink(atPath: dir.appendingPathComponent("plugins/libjanus_videoroom.so").path,
                                   withDestinationPath: "\(libraries)/plugins/libjanus_videoroom.so")
        try? fm.createSymbolicLink(atPath: dir.appendingPathComponent("transports/libjanus_http.so").path,
                                   withDestinationPath: "\(libraries)/transports/libjanus_http.so")
        let janus = """
            general: {
                configs_folder = "\(dir.path)"
                plugins_folder = "\(dir.path)/plugins"
                transports_folder = "\(dir.path)/transports"
                events_folder = "\(dir.path)/events"
                loggers_folder = "\(dir.path)/loggers"
                debug_level = 3
                session_timeout = 0
                server_name = "sfu-bench"
            }
            media: {
                rtp_port_range = "40000-60000"
            }
            nat: {
                ice_lite = true
                ice_enforce_list = "127.0.0.1"
            }
            plugins: {
            }
            transports: {
            }
            events: {
                broadcast = false
            }

            """
        let http = """
            general: {
                json = "compact"
                base_path = "/janus"
                threads = "unlimited"
                http = true
                port = \(port)
                ip = "127.0.0.1"
                https = false
            }
            admin: {
                admin_http = false
            }

            """
        try janus.write(to: dir.appendingPathComponent("janus.jcfg"), atomically: true, encoding: .utf8)
        try http.write(to: dir.appendingPathComponent("janus.transport.http.jcfg"), atomically: true, encoding: .utf8)
        try "general: {\n}\n".write(to: dir.appendingPathComponent("janus.plugin.videoroom.jcfg"), atomically: true, encoding: .utf8)
    }

    static func room(_ r: Int) -> Int { 1000 + r }
    /// JANUS_VIDEOROOM_ERROR_NO_SUCH_FEED
    static let noSuchFeed = 428

    public func prepare(plan: BenchPlan, rooms: Int) async throws {
        let session = try await JanusSession.create(base: base)
        self.session = session
        admin = try await session.attach()
        for r in 0..<rooms {
            _ = try await session.message(admin, [
                "request": "create", "room": Self.room(r), "publishers": plan.publishers, "bitrate": 0, "fir_freq": 0,
                "audiocodec": "opus", "videocodec": "vp8", "audiolevel_ext": true, "audiolevel_event": false,
                "notify_joining": false, "permanent": false,
            ])
        }
    }

    public func join(_ client: LoadClient, id: String, room: Int) async throws {
        guard let session else { throw LoadError("janus: join before prepare") }
        let handle = try await session.attach()
        handles.withLock { $0[ObjectIdentifier(client)] = handle }
        if client.publishes {
            let reply = try await session.message(handle, ["request": "joinandconfigure", "room": Self.room(room), "ptype": "publisher",
                                                           "display": id, "audio": true, "video": true],
                                                  jsep: ["type": "offer", "sdp": client.offer()])
            guard let feed = (reply.data["id"] as? NSNumber)?.int64Value, let answer = reply.sdp else {
                throw LoadError("janus: the publisher join gave no feed id or answer: \(reply.data)")
            }
            feeds.withLock { $0[room, default: []].append(feed) }
            try client.start(answer: answer, now: MonoClock.now())
        } else {
            let streams = feeds.withLock { $0[room] ?? [] }.map { ["feed": NSNumber(value: $0)] }
            let reply: JanusSession.Reply
            do {
                reply = try await session.message(handle, ["request": "join", "room": Self.room(room), "ptype": "subscriber", "streams": streams])
            } catch let f as JanusSession.Failure where f.code == Self.noSuchFeed {
                // A feed becomes subscribable once its PeerConnection is up (DTLS done on Janus's side).
                handles.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(client)) }
                await session.detach(handle)
                throw BenchServerNotReady()
            }
            guard let offer = reply.sdp else { throw LoadError("janus: the subscription gave no offer: \(reply.data)") }
            let answer = try client.answer(offer: offer, now: MonoClock.now())
            _ = try await session.message(handle, ["request": "start"], jsep: ["type": "answer", "sdp": answer])
        }
    }

    public func leave(_ client: LoadClient, id: String, room: Int) async {
        guard let session, let handle = handles.withLock({ $0.removeValue(forKey: ObjectIdentifier(client)) }) else { return }
        await session.detach(handle)
    }

    public func counters() async throws -> ServerCounters? { nil }

    /// Janus reports no per-subscriber estimate or video count.
    public func subscriberStats(rooms: Int) async -> [String: SubscriberSample]? { nil }

    public func watchDominantSpeaker(_ record: @escaping @Sendable (Int, String, Int64) -> Void) async {}

    public func finish(rooms: Int) async {
        guard let session else { return }
        for r in 0..<rooms { _ = try? await session.message(admin, ["request": "destroy", "room": Self.room(r)]) }
        await session.destroy()
        self.session = nil
    }

    /// SIGTERM, then waits up to `timeout`; removes the configuration. Returns what went wrong, if anything.
    public func stop(timeout: Double = 10) async -> String? {
        session?.close()
        session = nil
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        defer {
            if Self.debug {
                try? FileManager.default.removeItem(atPath: "/tmp/janus-bench.log")
                try? FileManager.default.copyItem(at: directory.appendingPathComponent("janus.log"), to: URL(fileURLWithPath: "/tmp/janus-bench.log"))
            }
            try? FileManager.default.removeItem(at: directory)
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            return "did not stop within \(Int(timeout)) s of SIGTERM (killed)"
        }
        return nil
    }

    /// The end of Janus's log (for errors).
    public var logTail: String {
        let text = (try? String(contentsOf: directory.appendingPathComponent("janus.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(20).joined(separator: "\n")
    }
}
