import Foundation
import Synchronization

/// The FFmpeg process of one live stream (Debian's `ffmpeg`), supervised: it reads the room's slots as plain RTP
/// (an SDP file naming one port per slot), composes the view - the first talker's camera large, every audio slot
/// mixed - and pushes it to the RTMP URL. An exit the node did not ask for restarts it after a back-off (1, 2,
/// 4, 8, 16 s; back to 1 s after a minute of running); the sixth exit in a row without a minute of running gives
/// up. Each exit's reason (the status and FFmpeg's last error lines) goes to the callbacks. While it runs, its
/// progress reports (`-progress pipe:1`) say whether pictures come out, and the node asks the talker for key
/// frames until they do (`EncoderPictureWatch`).
final class LiveEncoder: @unchecked Sendable {
    let id: String
    let arguments: [String]
    let sdpPath: String
    /// Debian's FFmpeg; a test names a stand-in.
    let executable: String
    /// Told of an exit that restarts (reason), and of the one that gives up (reason).
    private let onRestart: @Sendable (String) -> Void
    private let onGiveUp: @Sendable (String) -> Void
    /// Called whenever FFmpeg needs a key frame to show anything (`EncoderPictureWatch`), from a timer's queue.
    var onNeedsKeyframe: (@Sendable () -> Void)?
    /// Called when a (re)started FFmpeg puts out its first picture: seconds since its start, key frames asked.
    var onPictureUp: (@Sendable (_ seconds: Double, _ asks: Int) -> Void)?

    private struct State {
        var process: Process?
        var stopped = false
        var failures = 0
        var startedAt = Date()
        /// The running process's; nil between an exit and the restart.
        var watch: EncoderPictureWatch?
        var timer: DispatchSourceTimer?
    }
    private let state = Mutex(State())
    private let watchQueue = DispatchQueue(label: "sfu-live-watch")
    /// How often the watch is asked (`EncoderPictureWatch`'s intervals are multiples of it or longer).
    static let watchTick = 0.1
    static let backoff: [Double] = [1, 2, 4, 8, 16]
    static let stableAfter: TimeInterval = 60

    /// What of the RTMP URL may be shown (its scheme and host): its path holds the stream key.
    let shownURL: String
    let secretURL: String

    init(id: String, sdp: String, sdpPath: String, arguments: [String], url: String, executable: String = "/usr/bin/ffmpeg",
         onRestart: @escaping @Sendable (String) -> Void, onGiveUp: @escaping @Sendable (String) -> Void) throws {
        self.id = id
        self.executable = executable
        self.sdpPath = sdpPath
        self.arguments = arguments
        self.onRestart = onRestart
        self.onGiveUp = onGiveUp
        secretURL = url
        let c = URLComponents(string: url)
        shownURL = "\(c?.scheme ?? "rtmp")://\(c?.host ?? "")/..."
        // Readable by the node's user only: the log may name the URL.
        guard FileManager.default.createFile(atPath: sdpPath, contents: Data(sdp.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
    }

    func start() throws {
        guard !state.withLock({ $0.stopped }) else { return }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        // Its messages go to a file beside the SDP (a pipe nobody reads fast enough would stall it), whose last
        // lines say why it exited.
        let logPath = sdpPath + ".log"
        FileManager.default.createFile(atPath: logPath, contents: nil, attributes: [.posixPermissions: 0o600])
        let log = FileHandle(forWritingAtPath: logPath)
        p.standardError = log ?? FileHandle.nullDevice
        // Its progress reports: read to their end by a thread of their own (the pipe closes when FFmpeg exits).
        let progress = Pipe()
        // Close-on-exec, so that another stream's FFmpeg launched at the same moment does not inherit them (its
        // copy of the write end would keep this reader waiting until that one exits); FFmpeg gets its own by
        // dup2, which clears the flag.
        for fd in [progress.fileHandleForReading.fileDescriptor, progress.fileHandleForWriting.fileDescriptor, log?.fileDescriptor].compactMap({ $0 }) {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        p.standardOutput = progress
        p.standardInput = FileHandle.nullDevice
        p.terminationHandler = { [weak self] proc in
            try? log?.close()
            guard let self else { return }
            exited(status: proc.terminationStatus, reason: proc.terminationReason,
                   errors: Self.lastLines(of: logPath).replacingOccurrences(of: secretURL, with: shownURL))
        }
        // Each attempt counts from its own start (a launch that fails is a quick exit, not a long run's).
        state.withLock {
            $0.startedAt = Date()
            $0.watch = EncoderPictureWatch(startedAt: Self.uptime)
        }
        try p.run()
        // A stop that came while it was being launched: it goes at once. One that already exited (its handler
        // may have run before this) is not recorded as running.
        let stopped = state.withLock { s -> Bool in
            if p.isRunning { s.process = p }
            return s.stopped
        }
        if stopped { p.terminate() }
        let reader = progress.fileHandleForReading
        let thread = Thread { [weak self] in
            var lines = FFmpegProgressReader()
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                for n in lines.feed(data) { self?.progress(frames: n, of: p) }
            }
            try? reader.close()
        }
        thread.name = "sfu-live-progress"
        thread.start()
        startWatching()
    }

    private static var uptime: Double { ProcessInfo.processInfo.systemUptime }

    /// One report from `process`'s FFmpeg (a late one from an exited process is ignored).
    private func progress(frames: Int, of process: Process) {
        let up: (Double, Int)? = state.withLock { s in
            guard s.process === process, var w = s.watch else { return nil }
            let now = Self.uptime
            let first = w.progress(frames: frames, at: now)
            s.watch = w
            return first ? (now - w.startedAt, w.asksBeforeUp ?? 0) : nil
        }
        if let up { onPictureUp?(up.0, up.1) }
    }

    /// The timer that asks the watch, started with the first process and ended by `stop`.
    private func startWatching() {
        let timer: DispatchSourceTimer? = state.withLock { s in
            guard s.timer == nil, !s.stopped else { return nil }
            let t = DispatchSource.makeTimerSource(queue: watchQueue)
            s.timer = t
            return t
        }
        guard let timer else { return }
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            let ask = state.withLock { s -> Bool in
                guard !s.stopped, s.process != nil, var w = s.watch else { return false }
                let due = w.shouldAsk(at: Self.uptime)
                s.watch = w
                return due
            }
            if ask { onNeedsKeyframe?() }
        }
        timer.schedule(deadline: .now() + Self.watchTick, repeating: Self.watchTick)
        timer.resume()
    }

    private func exited(status: Int32, reason: Process.TerminationReason, errors: String) {
        let why = (reason == .uncaughtSignal ? "ffmpeg killed by signal \(status)" : "ffmpeg exited with status \(status)")
            + (errors.isEmpty ? "" : ": " + errors)
        let next: Double? = state.withLock { s in
            s.process = nil
            s.watch = nil
            guard !s.stopped else { return nil }
            if Date().timeIntervalSince(s.startedAt) > Self.stableAfter { s.failures = 0 }
            s.failures += 1
            return s.failures <= Self.backoff.count ? Self.backoff[s.failures - 1] : -1
        }
        guard let next else { return }
        guard next >= 0 else { return onGiveUp(why) }
        onRestart(why)
        DispatchQueue.global().asyncAfter(deadline: .now() + next) { [self] in
            guard !state.withLock({ $0.stopped }) else { return }
            do { try start() } catch { exited(status: -1, reason: .exit, errors: "\(error)") }
        }
    }

    /// Stops it for good, off the caller's thread (it may wait up to 5 s): SIGTERM (FFmpeg ends the RTMP stream
    /// cleanly), SIGKILL after 5 s.
    func stopped() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { [self] in
                stop()
                c.resume()
            }
        }
    }

    func stop() {
        let p = state.withLock { s -> Process? in
            s.stopped = true
            s.timer?.cancel()
            s.timer = nil
            return s.process
        }
        // A tick that decided to ask before the stop finishes before this returns: no ask comes after it.
        watchQueue.sync {}
        if let p, p.isRunning {
            p.terminate()
            let deadline = Date().addingTimeInterval(5)
            while p.isRunning, Date() < deadline { usleep(20_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        }
        try? FileManager.default.removeItem(atPath: sdpPath)
        try? FileManager.default.removeItem(atPath: sdpPath + ".log")
    }

    /// The last two lines of a log file (at most its last 600 bytes).
    static func lastLines(of path: String) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "" }
        return String(decoding: data.suffix(600), as: UTF8.self).split(separator: "\n").suffix(2).joined(separator: " | ")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
