import Foundation
import NodeIO
import Synchronization
import WebRTCEdge

/// The FFmpeg process of one live stream (Debian's `ffmpeg`), supervised: it reads the room's slots as plain RTP
/// (an SDP file naming one port per slot), composes the view - the first talker's camera large, every audio slot
/// mixed - and pushes it to the RTMP URL.
///
/// - Its output opening (its first progress report, `FFmpegProgressReader`) is what makes the stream live
///   (`onOutputOpen`), not its launch.
/// - An exit the node did not ask for restarts it after a back-off (1, 2, 4, 8, 16 s; back to 1 s after a
///   minute of running); the sixth exit in a row without a minute of running gives up, and so does the second
///   exit of a stream whose output never opened (a wrong URL, a server that refuses the key: said at once, not
///   after half a minute of retries). Each exit's reason (the status and FFmpeg's last error lines, the URL's
///   secrets hidden: `EncoderLog`) goes to the callbacks.
/// - The connections it makes are checked against the stream's `OutboundRule` (`EncoderConnections`): one to a
///   refused address kills it and gives up.
/// - While it runs, its progress reports say whether pictures come out, and the node asks the talker for key
///   frames until they do (`EncoderPictureWatch`).
/// - It runs as a `ChildProcess`, so SIGTERM reaches it: a stop ends the RTMP stream cleanly (`stopGrace`).
final class LiveEncoder: @unchecked Sendable {
    let id: String
    let arguments: [String]
    let sdpPath: String
    /// Debian's FFmpeg, or `streaming.ffmpeg`; a test names a stand-in.
    let executable: String
    let target: RTMPTarget
    let rule: OutboundRule
    /// Told of an exit that restarts (reason), and of the one that gives up (reason).
    private let onRestart: @Sendable (String) -> Void
    private let onGiveUp: @Sendable (String) -> Void
    /// Called when a (re)started FFmpeg's output has opened: the stream is live at the server.
    var onOutputOpen: (@Sendable () -> Void)?
    /// Called whenever FFmpeg needs a key frame to show anything (`EncoderPictureWatch`), from a timer's queue.
    var onNeedsKeyframe: (@Sendable () -> Void)?
    /// Called when a (re)started FFmpeg puts out its first picture: seconds since its start, key frames asked.
    var onPictureUp: (@Sendable (_ seconds: Double, _ asks: Int) -> Void)?

    private struct State {
        var process: ChildProcess?
        var stopped = false
        var failures = 0
        var startedAt = 0.0
        /// Some FFmpeg of this stream opened its output.
        var everOpen = false
        /// The running process's; nil between an exit and the restart.
        var watch: EncoderPictureWatch?
        var connections: EncoderConnections?
        /// Why the running process is being killed for good (a refused connection).
        var refused: String?
        var timer: DispatchSourceTimer?
    }
    private let state = Mutex(State())
    private let watchQueue = DispatchQueue(label: "sfu-live-watch")
    /// How often the watch is asked and the connections looked at (`EncoderPictureWatch`'s intervals are
    /// multiples of it or longer).
    static let watchTick = 0.1
    static let backoff: [Double] = [1, 2, 4, 8, 16]
    static let stableAfter = 60.0
    /// Exits a stream whose output never opened may have before it gives up.
    static let attemptsBeforeOpen = 2
    /// A stop waits this long for FFmpeg to close the stream (measured: 0.1-0.3 s), sending SIGTERM again half
    /// way (FFmpeg's second signal interrupts a write blocked on the network), then kills it.
    static let stopGrace = 1.0

    init(id: String, sdp: String, sdpPath: String, arguments: [String], target: RTMPTarget, rule: OutboundRule,
         executable: String = "/usr/bin/ffmpeg",
         onRestart: @escaping @Sendable (String) -> Void, onGiveUp: @escaping @Sendable (String) -> Void) throws {
        self.id = id
        self.executable = executable
        self.sdpPath = sdpPath
        self.arguments = arguments
        self.target = target
        self.rule = rule
        self.onRestart = onRestart
        self.onGiveUp = onGiveUp
        // Readable by the node's user only.
        guard FileManager.default.createFile(atPath: sdpPath, contents: Data(sdp.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
    }

    private static var uptime: Double { ProcessInfo.processInfo.systemUptime }

    func start() throws {
        guard !state.withLock({ $0.stopped }) else { return }
        // Its messages go to a file beside the SDP, its progress reports to a pipe read to its end by a thread
        // of its own (the pipe closes when FFmpeg exits). The node's ends are close-on-exec; the child gets its
        // own by dup2, and no other descriptor (`ChildProcess`).
        let logPath = sdpPath + ".log"
        let log = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            if log >= 0 { close(log) }
            throw ChildProcess.Failure(executable: executable, errno: errno)
        }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // Each attempt counts from its own start (a launch that fails is a quick exit, not a long run's).
        state.withLock {
            $0.startedAt = Self.uptime
            $0.watch = EncoderPictureWatch(startedAt: Self.uptime)
        }
        let process: ChildProcess
        do {
            process = try ChildProcess(executable: executable, arguments: arguments, environment: ChildProcess.inheritedEnvironment,
                                       stdout: ends[1], stderr: log >= 0 ? log : nil) { [weak self] exit in
                self?.exited(exit, log: logPath)
            }
        } catch {
            for fd in ends + [log] where fd >= 0 { close(fd) }
            throw error
        }
        close(ends[1])
        if log >= 0 { close(log) }
        // A stop that came while it was being launched: it goes at once. One that already exited (its handler
        // may have run before this) is not recorded as running.
        let stopped = state.withLock { s -> Bool in
            if process.isRunning {
                s.process = process
                s.connections = EncoderConnections(pid: process.pid)
            }
            return s.stopped
        }
        if stopped { process.signal(SIGTERM) }
        let reader = ends[0]
        let thread = Thread { [weak self] in
            var lines = FFmpegProgressReader()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                if n <= 0 { break }
                let before = lines.reports
                let frames = lines.feed(buffer[..<n])
                if before == 0, lines.reports > 0 { self?.outputOpened(process) }
                for f in frames { self?.progress(frames: f, of: process) }
            }
            close(reader)
        }
        thread.name = "sfu-live-progress"
        thread.start()
        startWatching()
    }

    /// `process`'s FFmpeg wrote its first progress report: its output is open.
    private func outputOpened(_ process: ChildProcess) {
        let current = state.withLock { s -> Bool in
            guard s.process === process, !s.stopped else { return false }
            s.everOpen = true
            return true
        }
        if current { onOutputOpen?() }
    }

    /// One report from `process`'s FFmpeg (a late one from an exited process is ignored).
    private func progress(frames: Int, of process: ChildProcess) {
        let up: (Double, Int)? = state.withLock { s in
            guard s.process === process, var w = s.watch else { return nil }
            let now = Self.uptime
            let first = w.progress(frames: frames, at: now)
            s.watch = w
            return first ? (now - w.startedAt, w.asksBeforeUp ?? 0) : nil
        }
        if let up { onPictureUp?(up.0, up.1) }
    }

    /// The timer that asks the watch and looks at the connections, started with the first process and ended by
    /// `stop`.
    private func startWatching() {
        let timer: DispatchSourceTimer? = state.withLock { s in
            guard s.timer == nil, !s.stopped else { return nil }
            let t = DispatchSource.makeTimerSource(queue: watchQueue)
            s.timer = t
            return t
        }
        guard let timer else { return }
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.schedule(deadline: .now() + Self.watchTick, repeating: Self.watchTick)
        timer.resume()
    }

    private func tick() {
        let ask = state.withLock { s -> Bool in
            guard !s.stopped, s.process != nil, var w = s.watch else { return false }
            let due = w.shouldAsk(at: Self.uptime)
            s.watch = w
            return due
        }
        if ask { onNeedsKeyframe?() }
        checkConnections()
    }

    /// A connection of the running FFmpeg to an address the rule refuses: it is killed, and the stream fails.
    private func checkConnections() {
        guard var c = state.withLock({ s in s.stopped || s.refused != nil ? nil : s.connections }) else { return }
        let peers = c.new()
        var refusal: String?
        for peer in peers {
            do { try rule.check(host: target.host, address: peer) } catch { refusal = "refused connection: \(error)"; break }
        }
        let kill = state.withLock { s -> ChildProcess? in
            guard s.connections?.pid == c.pid else { return nil }
            s.connections = c
            guard let refusal, !s.stopped, s.refused == nil else { return nil }
            s.refused = refusal
            return s.process
        }
        kill?.signal(SIGKILL)
    }

    /// An exit (`exit`, with FFmpeg's log at `log`), or a launch that failed (`failure`).
    private func exited(_ exit: ChildProcess.Exit, log: String, failure: Error? = nil) {
        let errors = failure.map { target.redact("\($0)") } ?? EncoderLog.lastLines(of: log, redactedBy: target)
        let why = (failure == nil ? "ffmpeg \(exit)" : "ffmpeg could not start") + (errors.isEmpty ? "" : ": " + errors)
        enum Next { case nothing, restart(Double), giveUp(String) }
        let next: Next = state.withLock { s in
            s.process = nil
            s.watch = nil
            s.connections = nil
            guard !s.stopped else { return .nothing }
            if let refused = s.refused { return .giveUp(refused) }
            if Self.uptime - s.startedAt > Self.stableAfter { s.failures = 0 }
            s.failures += 1
            if !s.everOpen, s.failures >= Self.attemptsBeforeOpen { return .giveUp(why) }
            return s.failures <= Self.backoff.count ? .restart(Self.backoff[s.failures - 1]) : .giveUp(why)
        }
        switch next {
        case .nothing: return
        case .giveUp(let reason):
            stopWatching()
            onGiveUp(reason)
        case .restart(let delay):
            onRestart(why)
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
                guard !state.withLock({ $0.stopped }) else { return }
                do { try start() } catch { exited(.status(-1), log: "", failure: error) }
            }
        }
    }

    private func stopWatching() {
        state.withLock { s in
            s.timer?.cancel()
            s.timer = nil
        }
    }

    /// Stops it for good, off the caller's thread (it may wait up to `stopGrace`).
    func stopped() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { [self] in
                stop()
                c.resume()
            }
        }
    }

    func stop() { Self.finishStop(Self.beginStop([self])) }

    /// Encoders asked to stop, and the processes to wait for.
    struct Stopping {
        let encoders: [LiveEncoder]
        let processes: [ChildProcess]
        let since: Double
    }

    /// Stops every encoder of `all` at once: no restart or key frame ask from now on, and each FFmpeg is sent
    /// SIGTERM (it ends its RTMP stream cleanly). `finishStop` waits for them.
    static func beginStop(_ all: [LiveEncoder]) -> Stopping {
        Stopping(encoders: all, processes: all.compactMap { $0.requestStop() }, since: uptime)
    }

    /// Waits for the processes of `stopping` within one shared `stopGrace` from its start, sending SIGTERM again
    /// half way, then kills what is left and removes the encoders' files.
    static func finishStop(_ stopping: Stopping) {
        var again = false
        while stopping.processes.contains(where: \.isRunning), uptime - stopping.since < stopGrace {
            if !again, uptime - stopping.since >= stopGrace / 2 {
                again = true
                for p in stopping.processes { p.signal(SIGTERM) }
            }
            usleep(10_000)
        }
        for p in stopping.processes { p.signal(SIGKILL) }
        for e in stopping.encoders { e.removeFiles() }
    }

    /// Marks it stopped (no restart, no ask after this returns) and sends SIGTERM; returns the process to wait for.
    private func requestStop() -> ChildProcess? {
        let p = state.withLock { s -> ChildProcess? in
            s.stopped = true
            s.timer?.cancel()
            s.timer = nil
            return s.process
        }
        // A tick that decided to ask before the stop finishes before this returns: no ask comes after it.
        watchQueue.sync {}
        guard let p, p.signal(SIGTERM) else { return nil }
        return p
    }

    private func removeFiles() {
        try? FileManager.default.removeItem(atPath: sdpPath)
        try? FileManager.default.removeItem(atPath: sdpPath + ".log")
    }
}
