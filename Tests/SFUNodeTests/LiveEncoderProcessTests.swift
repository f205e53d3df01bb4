import Foundation
import NodeIO
import Synchronization
import Testing

@testable import SFUNode

/// The encoder's process as the node runs it (issue 40), around stand-ins for FFmpeg: a stop reaches it as
/// SIGTERM whatever thread launched it; its output opening is what makes the stream live; the RTMP URL's
/// secrets stay out of what it reports however long the URL; a connection to an address the rule refuses
/// kills it.
@Suite(.timeLimit(.minutes(1))) struct LiveEncoderProcessTests {
    /// A Python script at a fresh temporary path, executable (Python leaves its signal mask as it found it, and
    /// `signal.getsignal` shows the dispositions it inherited for the signals it does not set itself; dash
    /// clears the mask for its children).
    static func python(_ body: String) throws -> String {
        let path = NSTemporaryDirectory() + "sfu-test-ffmpeg-\(UUID().uuidString).py"
        try ("#!/usr/bin/python3\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o700)
        return path
    }

    /// Runs `body` on a new thread that blocks every signal it can, as libdispatch's worker threads and Swift
    /// concurrency's do (an encoder restarts from one, the API starts it from one).
    static func onThreadBlockingEverySignal(_ body: @escaping @Sendable () throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        let t = Thread {
            var all = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_SETMASK, &all, nil)
            do { try body() } catch { failure.withLock { $0 = error } }
            done.signal()
        }
        t.start()
        done.wait()
        if let e = failure.withLock({ $0 }) { throw e }
    }

    /// Waits until `condition` holds, 15 s at most (then the test's expectations say what did not come).
    static func wait(until condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    }

    @Test func anEncoderLaunchedFromAThreadThatBlocksEverySignalStartsCleanAndEndsOnSIGTERM() async throws {
        let dir = NSTemporaryDirectory() + "sfu-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let exe = try Self.python("""
            import signal, sys, time
            blocked = [l.split()[1] for l in open('/proc/self/status') if l.startswith('SigBlk:')]
            ignored = [s for s in ('SIGTERM', 'SIGUSR2', 'SIGHUP') if signal.getsignal(getattr(signal, s)) == signal.SIG_IGN]
            open('\(dir)/signals', 'w').write(' '.join(blocked + ignored))
            def stop(*_):
                open('\(dir)/terminated', 'w').write('clean')
                sys.exit(0)
            signal.signal(signal.SIGTERM, stop)
            print('progress=continue', flush=True)
            while True:
                time.sleep(0.05)
            """)
        defer { try? FileManager.default.removeItem(atPath: exe) }
        let encoder = try LiveEncoderTests.encoder(exe, url: "rtmp://127.0.0.1/live/key")
        let opened = Atomic<Int>(0)
        encoder.onOutputOpen = { opened.add(1, ordering: .relaxed) }
        // The node ignores signals it catches with a signal source (ServiceLifecycle: SIGTERM, SIGINT); a test
        // cannot ignore those without side effects, so SIGUSR2 stands in for them.
        let before = signal(SIGUSR2, SIG_IGN)
        defer { signal(SIGUSR2, before) }
        try Self.onThreadBlockingEverySignal { try encoder.start() }
        try await Self.wait { opened.load(ordering: .relaxed) == 1 && FileManager.default.fileExists(atPath: dir + "/signals") }
        encoder.stop()
        // It started with no signal blocked or ignored, and the stop's SIGTERM reached it (not the SIGKILL that
        // follows `stopGrace` later: with SIGTERM blocked, Foundation's Process gave it 5 s, then killed it).
        let signals = try String(contentsOfFile: dir + "/signals", encoding: .utf8)
        #expect(signals == "0000000000000000", "SigBlk, then the signals left ignored")
        #expect((try? String(contentsOfFile: dir + "/terminated", encoding: .utf8)) == "clean")
    }

    @Test func theStreamIsLiveOnlyOnceTheEncoderReportsAndAStreamThatNeverWasGivesUpAtItsSecondExit() async throws {
        // An FFmpeg that cannot open its output writes no progress report, and exits with its reason.
        let exe = try LiveEncoderTests.script("""
            echo 'RTMP://127.0.0.1/live/key: Protocol not found' >&2
            exit 1
            """)
        defer { try? FileManager.default.removeItem(atPath: exe) }
        let restarts = Mutex<[String]>([]), gaveUp = Mutex<String?>(nil), opened = Atomic<Int>(0)
        let encoder = try LiveEncoderTests.encoder(exe, url: "RTMP://127.0.0.1/live/key", onRestart: { why in restarts.withLock { $0.append(why) } },
                                                   onGiveUp: { why in gaveUp.withLock { $0 = why } })
        encoder.onOutputOpen = { opened.add(1, ordering: .relaxed) }
        try encoder.start()
        try await Self.wait { gaveUp.withLock { $0 } != nil }
        encoder.stop()
        #expect(restarts.withLock { $0 }.count == 1, "one retry (after 1 s), not half a minute of them")
        #expect(gaveUp.withLock { $0 } == "ffmpeg exited with status 1: rtmp://127.0.0.1/...: Protocol not found")
        #expect(opened.load(ordering: .relaxed) == 0)
    }

    /// Issue 40: the key was hidden by matching the whole URL after FFmpeg's log had been cut to its last 600
    /// bytes, so a URL longer than that (a signed ingest URL with a token) went out in the reason, from its cut
    /// on. Every piece of the secret parts is hidden now, before anything is cut.
    @Test func aLongStreamKeyNeverReachesTheReasonWholeOrInPieces() async throws {
        let key = (0..<24).map { _ in UUID().uuidString.replacingOccurrences(of: "-", with: "") }.joined()  // 768 hex digits
        let token = String(key.reversed())
        let url = "rtmp://127.0.0.1:1935/live/\(key)?token=\(token)"
        // FFmpeg's lines as it writes them (its own cut at 1024 bytes for some), then its last words.
        let exe = try LiveEncoderTests.script("""
            echo '[tcp @ 0x55641b4aca00] Connection to tcp://127.0.0.1:1935?tcp_nodelay=0 failed: Connection refused' >&2
            echo '\(String("[rtmp @ 0x55] Publishing \(url)".prefix(1024)))' >&2
            echo '[rtmp @ 0x55] Server error: Invalid stream key \(key)' >&2
            echo '\(url): Connection refused' >&2
            exit 1
            """)
        defer { try? FileManager.default.removeItem(atPath: exe) }
        let reasons = Mutex<[String]>([])
        let encoder = try LiveEncoderTests.encoder(exe, url: url, onRestart: { why in reasons.withLock { $0.append(why) } },
                                                   onGiveUp: { why in reasons.withLock { $0.append(why) } })
        try encoder.start()
        try await Self.wait { reasons.withLock { $0 }.count == 2 }
        encoder.stop()
        for why in reasons.withLock({ $0 }) {
            #expect(why.hasSuffix("Server error: Invalid stream key *** | rtmp://127.0.0.1/...: Connection refused"), "\(why)")
            let pieces = (0...(key.count - 8)).map { key.dropFirst($0).prefix(8) } + (0...(token.count - 8)).map { token.dropFirst($0).prefix(8) }
            #expect(!pieces.contains { why.contains($0) }, "no 8 characters of the key or the token")
        }
    }

    /// A name that resolved to a public address for the node may resolve to another for FFmpeg: the address
    /// FFmpeg actually connected to is checked, and a refused one ends the stream for good.
    @Test func aConnectionToARefusedAddressKillsTheEncoderAndTheStreamFails() async throws {
        let listener = try TCPListener()
        defer { listener.close() }
        // A busy node has many sockets: the connection is listed past the first page of /proc/net/tcp, which
        // is all Foundation's String(contentsOfFile:) reads (a refused connection went unseen).
        let crowd = try (0..<100).map { _ in try TCPListener() }
        defer { for l in crowd { l.close() } }
        let exe = try Self.python("""
            import socket, time
            s = socket.create_connection(('127.0.0.1', \(listener.port)))
            print('progress=continue', flush=True)
            time.sleep(30)
            """)
        defer { try? FileManager.default.removeItem(atPath: exe) }
        // The default rule, on the listener's port: a public address only.
        let rule = OutboundRule(entries: [], defaultPorts: [listener.port], key: "streaming.rtmp_hosts")
        let gaveUp = Mutex<String?>(nil), restarts = Atomic<Int>(0)
        let encoder = try LiveEncoderTests.encoder(exe, url: "rtmp://ingest.example.com:\(listener.port)/live/key", rule: rule,
                                                   onRestart: { _ in restarts.add(1, ordering: .relaxed) }, onGiveUp: { why in gaveUp.withLock { $0 = why } })
        try encoder.start()
        try await Self.wait { gaveUp.withLock { $0 } != nil }
        encoder.stop()
        #expect(gaveUp.withLock { $0 } == "refused connection: ingest.example.com is at 127.0.0.1, a loopback address (list it in streaming.rtmp_hosts to allow it)")
        #expect(restarts.load(ordering: .relaxed) == 0)
        // Listed, the same connection is the operator's choice: it stays.
        let listed = OutboundRule(entries: [try #require(.init("ingest.example.com:\(listener.port)"))], defaultPorts: [1935, 443], key: "streaming.rtmp_hosts")
        let kept = try LiveEncoderTests.encoder(exe, url: "rtmp://ingest.example.com:\(listener.port)/live/key", rule: listed,
                                                onGiveUp: { why in gaveUp.withLock { $0 = why } })
        gaveUp.withLock { $0 = nil }
        let opened = Atomic<Int>(0)
        kept.onOutputOpen = { opened.add(1, ordering: .relaxed) }
        try kept.start()
        try await Self.wait { opened.load(ordering: .relaxed) == 1 }
        try await Task.sleep(for: .milliseconds(500))  // five checks of its connections
        kept.stop()
        #expect(gaveUp.withLock { $0 } == nil)
    }
}

/// A TCP socket listening on a loopback port, accepting whatever comes (the kernel's backlog holds it).
final class TCPListener {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard bound == 0, listen(fd, 8) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        port = UInt16(bigEndian: a.sin_port)
    }

    func close() { _ = Glibc.close(fd) }
}
