import Foundation
import Synchronization

/// The FFmpeg process of one live stream (Debian's `ffmpeg`), supervised: it reads the room's slots as plain RTP
/// (an SDP file naming one port per slot), composes the view - the first talker's camera large, every audio slot
/// mixed - and pushes it to the RTMP URL. An exit the node did not ask for restarts it after a back-off (1, 2,
/// 4, 8, 16 s; back to 1 s after a minute of running); the sixth exit in a row without a minute of running gives
/// up. Each exit's reason (the status and FFmpeg's last error lines) goes to the callbacks.
final class LiveEncoder: @unchecked Sendable {
    let id: String
    let arguments: [String]
    let sdpPath: String
    /// Told of an exit that restarts (reason), and of the one that gives up (reason).
    private let onRestart: @Sendable (String) -> Void
    private let onGiveUp: @Sendable (String) -> Void
    /// Called a few times after each (re)start, as FFmpeg comes up: it needs a key frame to show anything.
    var onStarted: (@Sendable () -> Void)?

    private struct State {
        var process: Process?
        var stopped = false
        var failures = 0
        var startedAt = Date()
    }
    private let state = Mutex(State())
    static let backoff: [Double] = [1, 2, 4, 8, 16]
    static let stableAfter: TimeInterval = 60

    /// What of the RTMP URL may be shown (its scheme and host): its path holds the stream key.
    let shownURL: String
    let secretURL: String

    init(id: String, sdp: String, sdpPath: String, arguments: [String], url: String, onRestart: @escaping @Sendable (String) -> Void,
         onGiveUp: @escaping @Sendable (String) -> Void) throws {
        self.id = id
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
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = arguments
        // Its messages go to a file beside the SDP (a pipe nobody reads fast enough would stall it), whose last
        // lines say why it exited.
        let logPath = sdpPath + ".log"
        FileManager.default.createFile(atPath: logPath, contents: nil, attributes: [.posixPermissions: 0o600])
        let log = FileHandle(forWritingAtPath: logPath)
        p.standardError = log ?? FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        p.terminationHandler = { [weak self] proc in
            try? log?.close()
            guard let self else { return }
            exited(status: proc.terminationStatus, reason: proc.terminationReason,
                   errors: Self.lastLines(of: logPath).replacingOccurrences(of: secretURL, with: shownURL))
        }
        // Each attempt counts from its own start (a launch that fails is a quick exit, not a long run's).
        state.withLock { $0.startedAt = Date() }
        try p.run()
        // A stop that came while it was being launched: it goes at once.
        let stopped = state.withLock { s -> Bool in
            s.process = p
            return s.stopped
        }
        if stopped { p.terminate() }
        // FFmpeg binds its ports a little after it starts: a key frame sent before is lost to it.
        if let onStarted {
            for delay in [0.3, 1.0, 2.5, 5.0] {
                DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
                    guard let self, !state.withLock({ $0.stopped }) else { return }
                    onStarted()
                }
            }
        }
    }

    private func exited(status: Int32, reason: Process.TerminationReason, errors: String) {
        let why = (reason == .uncaughtSignal ? "ffmpeg killed by signal \(status)" : "ffmpeg exited with status \(status)")
            + (errors.isEmpty ? "" : ": " + errors)
        let next: Double? = state.withLock { s in
            s.process = nil
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
            return s.process
        }
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
