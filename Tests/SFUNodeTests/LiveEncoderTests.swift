import Foundation
import Synchronization
import Testing

@testable import SFUNode

/// When a live stream's encoder is asked for key frames (`EncoderPictureWatch`, on virtual seconds), how
/// FFmpeg's progress reports are read (`FFmpegProgressReader`), and the two wired together around a real
/// process (`LiveEncoder` running a stand-in for FFmpeg).
@Suite struct LiveEncoderTests {
    /// The times in `times` at which the watch asks, feeding it `frames(t)` first at each.
    static func asks(_ w: inout EncoderPictureWatch, at times: [Double], frames: (Double) -> Int? = { _ in nil }) -> [Double] {
        times.filter { t in
            if let n = frames(t) { _ = w.progress(frames: n, at: t) }
            return w.shouldAsk(at: t)
        }
    }

    /// Every 1/8 s (exact in binary, so the intervals compare exactly), as the encoder's 0.1 s timer would.
    static func ticks(from: Double, to: Double) -> [Double] { Array(stride(from: from, through: to, by: 0.125)) }

    @Test func anEncoderSlowToComeUpIsAskedEverySecondUntilItsFirstPicture() {
        var w = EncoderPictureWatch(startedAt: 100)
        // Twelve seconds with no picture (an encoder that took long to bind its ports): asked at 0.3 s and then
        // every second, not a fixed handful of times.
        let before = Self.asks(&w, at: Self.ticks(from: 100, to: 112))
        #expect(before.first == 100.375)
        #expect(before.count == 12)
        #expect(zip(before, before.dropFirst()).allSatisfy { $1 - $0 == 1 })
        #expect(!w.isUp)
        // The picture comes: it says so once, with the asks it took, and the asking stops while pictures flow.
        let first = w.progress(frames: 1, at: 112.0625), second = w.progress(frames: 30, at: 113)
        #expect(first && !second)
        #expect(w.asksBeforeUp == 12)
        let flowing = Self.asks(&w, at: Self.ticks(from: 112.125, to: 120)) { t in Int((t - 112) * 30) }
        #expect(flowing.isEmpty)
    }

    @Test func aStalledPictureIsAskedForEveryTwoSecondsAndARepeatedCountIsAStall() {
        var w = EncoderPictureWatch(startedAt: 0)
        let first = w.progress(frames: 1, at: 0.5), second = w.progress(frames: 40, at: 2)
        #expect(first && !second)
        // The count stops at 40 (FFmpeg still reports it twice a second): 2 s after it last grew, then every 2 s.
        let stalled = Self.asks(&w, at: Self.ticks(from: 2.125, to: 9)) { _ in 40 }
        #expect(stalled == [4.0, 6.0, 8.0])
        // It grows again: no more asks.
        let again = Self.asks(&w, at: Self.ticks(from: 9.125, to: 15)) { t in 40 + Int((t - 9) * 30) }
        #expect(again.isEmpty)
        #expect(w.asks == 3)
    }

    @Test func nothingIsAskedInTheFirstMomentsOfAStart() {
        var w = EncoderPictureWatch(startedAt: 5)
        #expect(Self.asks(&w, at: [5, 5.125, 5.25]).isEmpty)
        let answers = [5.375, 6.25, 6.375].map { w.shouldAsk(at: $0) }
        #expect(answers == [true, false, true])
    }

    @Test func progressReportsYieldTheirFrameCountsAcrossSplitReads() {
        // FFmpeg 5.1's `-progress pipe:1` block, cut at arbitrary places.
        let text = "frame=1\nfps=0.00\nstream_0_0_q=0.0\nbitrate=N/A\ntotal_size=N/A\nout_time_us=0\nprogress=continue\n"
            + "frame=35\r\nfps=34.88\nprogress=continue\nframe=51\n"
        let bytes = Array(text.utf8)
        for cut in [1, 7, 8, 50, bytes.count - 1] {
            var r = FFmpegProgressReader()
            let counts = r.feed(bytes[..<cut]) + r.feed(bytes[cut...])
            #expect(counts == [1, 35, 51], "cut at \(cut)")
        }
    }

    @Test func progressLinesThatAreNotFrameCountsAreSkippedAndTheNextOnesStillRead() {
        var r = FFmpegProgressReader()
        let junk = "frame=\nframe=12a\nframe=-3\nframe=1234567890123\nframes=9\n frame=4\n"
            + "frame=" + String(repeating: "7", count: 400) + "\n" + String(repeating: "x", count: 10_000) + "frame=8\nframe=9\n"
        #expect(r.feed(Array(junk.utf8)) == [9])
        #expect(r.feed(Array("frame=10\n".utf8)) == [10])
    }

    /// A stand-in for FFmpeg: a shell script that reports no picture until the test lets it (a file appears),
    /// then frames, as `-progress pipe:1` does.
    static func standIn(gate: String) throws -> String {
        try script("""
            while [ ! -e '\(gate)' ]; do echo 'progress=continue'; sleep 0.05; done
            n=1
            while true; do echo "frame=$n"; echo 'progress=continue'; n=$((n+3)); sleep 0.05; done
            """)
    }

    /// An encoder running `exe` for `url`, allowed to connect as `rule` says (by default: 127.0.0.1, any
    /// port: a test's stand-in).
    static func encoder(_ exe: String, url: String, rule: OutboundRule = OutboundRule(entries: [], defaultPorts: [], key: "test"),
                        onRestart: @escaping @Sendable (String) -> Void = { _ in },
                        onGiveUp: @escaping @Sendable (String) -> Void = { _ in }) throws -> LiveEncoder {
        try LiveEncoder(id: "live-test", sdp: "v=0\r\n", sdpPath: NSTemporaryDirectory() + "sfu-live-test-\(UUID().uuidString).sdp",
                        arguments: [], target: try #require(RTMPTarget(url)), rule: rule, executable: exe, onRestart: onRestart, onGiveUp: onGiveUp)
    }

    /// A shell script at a fresh temporary path, executable.
    static func script(_ body: String) throws -> String {
        let path = NSTemporaryDirectory() + "sfu-test-ffmpeg-\(UUID().uuidString).sh"
        try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o700)
        return path
    }

    @Test(.timeLimit(.minutes(1))) func theEncoderIsAskedForKeyFramesUntilItsProgressShowsAPictureAndNotAfterItStops() async throws {
        let gate = NSTemporaryDirectory() + "sfu-test-gate-\(UUID().uuidString)"
        let exe = try Self.standIn(gate: gate)
        defer { try? FileManager.default.removeItem(atPath: exe); try? FileManager.default.removeItem(atPath: gate) }
        let asks = Atomic<Int>(0)
        let up = Mutex<[Int]>([])
        let encoder = try Self.encoder(exe, url: "rtmp://127.0.0.1/live/key")
        encoder.onNeedsKeyframe = { asks.add(1, ordering: .relaxed) }
        encoder.onPictureUp = { _, n in up.withLock { $0.append(n) } }
        try encoder.start()
        // Asked again and again while no picture comes: five asks (at least 4.3 s), more than a fixed schedule
        // of four after the start would make.
        while asks.load(ordering: .relaxed) < 5 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(up.withLock { $0 }.isEmpty)
        #expect(FileManager.default.createFile(atPath: gate, contents: nil))
        while up.withLock({ $0 }).isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        #expect(up.withLock { $0 }.count == 1)
        #expect(up.withLock { $0 }.first.map { $0 >= 5 } == true)
        encoder.stop()
        let atStop = asks.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(1500))
        #expect(asks.load(ordering: .relaxed) == atStop, "no asks once stopped")
        #expect(up.withLock { $0 }.count == 1)
    }

    /// An FFmpeg that fails: the restart's reason carries its status and last error line, read from its log
    /// (its standard error, which still reaches the log with the node's descriptors close-on-exec), with the
    /// RTMP URL's stream key hidden.
    @Test(.timeLimit(.minutes(1))) func anEncoderThatFailsRestartsWithItsLastErrorAndTheStreamKeyHidden() async throws {
        let exe = try Self.script("""
            echo 'rtmp://127.0.0.1/live/secret-key: Connection refused' >&2
            echo 'Error opening output files: Connection refused' >&2
            exit 3
            """)
        defer { try? FileManager.default.removeItem(atPath: exe) }
        let reasons = Mutex<[String]>([])
        let encoder = try Self.encoder(exe, url: "rtmp://127.0.0.1/live/secret-key", onRestart: { why in reasons.withLock { $0.append(why) } })
        try encoder.start()
        while reasons.withLock({ $0 }).isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        encoder.stop()
        let why = reasons.withLock { $0 }.first ?? ""
        #expect(why == "ffmpeg exited with status 3: rtmp://127.0.0.1/...: Connection refused | Error opening output files: Connection refused")
        #expect(!why.contains("secret-key"))
    }
}
