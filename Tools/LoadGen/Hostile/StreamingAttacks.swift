import Foundation
import SFUClient
import Synchronization

/// Attacks through live streaming (issue 40): a moderator is a client like any other, and its `rtmp_url` is a
/// connection the node makes and a secret the node holds.
enum StreamingAttacks {
    /// 22. A moderator points the stream at the node's own networks - a loopback listener's port in every
    /// spelling (`127.0.0.1`, `127.1`, `2130706433`, `[::ffff:127.0.0.1]`, `localhost`, upper-case `RTMP://`),
    /// private, link-local (a cloud's metadata address) and unique-local addresses, a listed host on another
    /// port: each refused with 5125 and no stream left, and the listener never connected to. Then a 1.6 KB stream
    /// key and token to the one listed server, which hangs up: the stream is told starting, then failed with
    /// FFmpeg's reason, and no piece of eight characters of the key or token is in any event, error body or
    /// line of the node's log.
    ///
    /// Its allowance is the first live stream's cost, not a leak: the node's first stream takes about 4 MiB once
    /// (measured on the debug build: FFmpeg's supervision threads and timer, the resolver's NSS modules, code
    /// first run); each further start-and-fail cycle adds 60-140 KiB, the events history filling.
    static let urls = Attack(number: 23, name: "live stream URLs", allowedGrowthBytes: 6 << 20) { ctx in
        var o = AttackOutcome()
        guard let sink = ctx.streamSink, let log = ctx.nodeLog else { o.fail("no RTMP sink or node log"); return o }
        let room = try await ctx.newRoom("live")
        try await ctx.admit(room, "mod", moderator: true)
        let bait = try TCPSink()
        defer { bait.close() }
        let key = (0..<50).map { _ in UUID().uuidString.replacingOccurrences(of: "-", with: "") }.joined()  // 1,600 hex digits
        let token = String(key.reversed().prefix(200))
        let p = bait.port
        let targets = ["rtmp://127.0.0.1:\(p)/live/k", "rtmp://127.1:\(p)/live/k", "rtmp://2130706433:\(p)/live/k",
                       "rtmp://[::ffff:127.0.0.1]:\(p)/live/k", "rtmp://localhost:\(p)/live/k", "RTMP://127.0.0.1:\(p)/live/k",
                       "rtmp://127.0.0.1/live/k", "rtmp://[::1]/live/k", "rtmp://10.0.0.1/live/k", "rtmp://192.168.0.1/live/k",
                       "rtmp://169.254.169.254/latest/meta-data", "rtmp://[fd00::1]/live/k", "rtmp://0.0.0.0/live/k",
                       "rtmp://127.0.0.1:\(sink.port + 1 == p ? sink.port + 2 : sink.port + 1)/live/k",
                       "rtmps://127.0.0.1:\(p)/live/\(key)"]
        var refused = 0
        var bodies: [String] = []
        for url in targets {
            let r = try await ctx.api.call("POST", "v1/rooms/\(room)/streaming/start", ["by": "mod", "rtmp_url": url])
            bodies.append("\(r.json)")
            if r.status == 400 && r.result == 5125 { refused += 1 } else { o.fail("\(url.prefix(60)) got \(r.status)/\(r.result ?? -1)") }
        }
        o.check(refused == targets.count, "\(refused) targets refused 400/5125", "\(targets.count - refused) targets were not refused")
        try await ctx.sleep(0.5)
        o.check(bait.accepted == 0, "the node's loopback listener never connected to", "the loopback listener got \(bait.accepted) connections")
        let state = try await ctx.api.call("GET", "v1/rooms/\(room)")
        o.check(state.json["streaming"] is NSNull, "no stream left", "a refused start left \(state.json["streaming"] ?? "?")")

        // The long key, to the listed server.
        let since = ctx.events.count
        let url = "rtmp://127.0.0.1:\(sink.port)/live/\(key)?token=\(token)"
        let r = try await ctx.api.call("POST", "v1/rooms/\(room)/streaming/start", ["by": "mod", "rtmp_url": url])
        bodies.append("\(r.json)")
        o.check(r.status == 200, "a 1.6 KB key to the listed server starts", "the listed server's start got \(r.status)/\(r.result ?? -1) \(r.json)")
        let failed = await ctx.events.wait(since: since, timeout: 20) { $0.type == "streaming" && $0.room == room && $0.json["state"] as? String == "failed" }
        let told = ctx.events.find(since: since) { $0.type == "streaming" && $0.room == room }
        o.check(!failed.isEmpty && told.first?.json["state"] as? String == "starting",
                "told starting, then failed: \((failed.first?.json["reason"] as? String ?? "").prefix(80))",
                "the stream was told \(told.map { $0.json["state"] as? String ?? "?" }), not starting then failed")
        o.check(sink.accepted >= 1, "FFmpeg reached the listed server (\(sink.accepted) connections)", "FFmpeg never reached the listed server")
        let pieces = Set((0...(key.count - 8)).map { String(key.dropFirst($0).prefix(8)) } + (0...(token.count - 8)).map { String(token.dropFirst($0).prefix(8)) })
        func leaks(_ text: String) -> Bool {
            let t = Array(text.utf8)
            guard t.count >= 8 else { return false }
            return (0...(t.count - 8)).contains { pieces.contains(String(decoding: t[$0..<$0 + 8], as: UTF8.self)) }
        }
        let events = ctx.events.find(since: 0) { $0.room == room }.map(\.text)
        let logText = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        o.check(!events.contains(where: leaks), "no piece of the key in \(events.count) events", "a piece of the key is in an event")
        o.check(!bodies.contains(where: leaks), "nor in \(bodies.count) answers", "a piece of the key is in an API answer")
        o.check(!logText.isEmpty, "the node logged the failure", "the node's log is empty: the stream's failure was not logged, or not captured")
        o.check(!logText.split(separator: "\n").contains { leaks(String($0)) },
                "no piece of the key in the node's log (\(logText.split(separator: "\n").count) lines)", "a piece of the key is in the node's log")
        await ctx.deleteRoom(room)
        return o
    }
}

/// A TCP listener on a loopback port that accepts every connection, counts it and hangs up (an RTMP server
/// that refuses everything, or a service the node must never reach).
final class TCPSink: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let count = Atomic<Int>(0)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw LoadError("cannot listen on a loopback port") }
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        self.fd = fd
        port = UInt16(bigEndian: a.sin_port)
        let t = Thread { [self] in
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 { if errno == EINTR { continue } else { break } }
                count.add(1, ordering: .relaxed)
                Glibc.close(c)
            }
        }
        t.name = "hostile-tcp-sink"
        t.start()
    }

    var accepted: Int { count.load(ordering: .relaxed) }

    /// Stops listening (the accepting thread ends).
    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }
}
