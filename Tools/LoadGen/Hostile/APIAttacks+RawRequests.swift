import Foundation
import SFUClient

/// The API attacks whose requests are written byte for byte on a connection of their own: a WebSocket upgrade
/// with any resume query, and any Host header (which URLSession will not send).
extension APIAttacks {
    /// 15. The events WebSocket opened with resume points the node never numbered: `since` at UInt64's end
    /// (it trapped on `since + 1` and one such request took the node down), far past the node's counter, and
    /// a valid `since` with another process's `stream`. Each opening must get an `events_reset` notice first
    /// (since_ahead, since_ahead, stream_changed) naming the node's real `next_seq` and `stream`; a `since`
    /// past UInt64 and a malformed `stream` get the `error` message (6010). The suite's own consumer goes on
    /// receiving, and every opening's consumer is gone once it closed.
    static let eventsSince = Attack(number: 15, name: "events since") { ctx in
        var o = AttackOutcome()
        let consumersBefore = try await ctx.metrics().sum("sfu_event_consumers")
        let last = ctx.events.all.last { $0.seq != nil }
        let lastSeq = last?.seq ?? 0, stream = last?.stream ?? "0123456789abcdef"
        o.check(last?.stream != nil, "events carry their stream", "the suite's consumer has no event with a seq and a stream")
        var wrong = Array(stream)
        wrong[0] = wrong[0] == "0" ? "1" : "0"
        let cases: [(query: String, expect: String)] = [
            ("since=18446744073709551615", "since_ahead"),
            ("since=\(lastSeq + 1_000_000)", "since_ahead"),
            ("since=\(lastSeq)&stream=\(String(wrong))", "stream_changed"),
            ("since=18446744073709551616", "error"),
            ("since=\(lastSeq)&stream=\(stream)x", "error"),
        ]
        let rounds = 20
        var outcomes: [String: Int] = [:]
        for round in 0..<rounds {
            for (query, expect) in cases {
                let opened = try await Self.openEvents(ctx.api.base, query: query)
                let got = opened.first
                let type = got?["type"] as? String
                let ok: Bool
                if expect == "error" {
                    ok = type == "error" && got?["result"] as? Int == 6010
                } else {
                    let next = (got?["next_seq"] as? NSNumber)?.uint64Value ?? 0
                    ok = type == "events_reset" && got?["reason"] as? String == expect && got?["seq"] == nil
                        && (last?.stream == nil || got?["stream"] as? String == stream) && next > lastSeq
                }
                if ok {
                    outcomes[expect, default: 0] += 1
                } else if outcomes["bad", default: 0] < 3 {
                    outcomes["bad", default: 0] += 1
                    o.fail("/v1/events?\(query.prefix(60)): \(opened.status.isEmpty ? "no answer" : opened.status), first message \(got.map { "\($0)" } ?? "none")")
                }
                guard (try? await ctx.api.call("GET", "healthz"))?.status == 200 else {
                    o.fail("the node stopped answering after /v1/events?\(query)")
                    return o
                }
            }
        }
        o.check(outcomes["since_ahead"] == 2 * rounds, "\(2 * rounds) since_ahead resets (UInt64.max, far ahead)",
                "since_ahead resets: \(outcomes["since_ahead"] ?? 0) of \(2 * rounds)")
        o.check(outcomes["stream_changed"] == rounds, "\(rounds) stream_changed resets", "stream_changed resets: \(outcomes["stream_changed"] ?? 0) of \(rounds)")
        o.check(outcomes["error"] == 2 * rounds, "\(2 * rounds) malformed since/stream 6010", "6010 refusals: \(outcomes["error"] ?? 0) of \(2 * rounds)")

        // The suite's own consumer still follows the stream: a new event reaches it.
        let mark = ctx.events.count
        let room = try await ctx.newRoom("since")
        try await ctx.admit(room, "after-reset")
        let seen = await ctx.events.wait(since: mark, timeout: 5) { $0.room == room && $0["participant"] as? String == "after-reset" }
        o.check(!seen.isEmpty && (seen.first?.seq ?? 0) > lastSeq && seen.first?.stream == stream, "the suite's consumer still receives",
                "the suite's consumer saw no event after the attack")
        var consumers = 0
        for _ in 0..<40 {
            consumers = try await ctx.metrics().sum("sfu_event_consumers")
            if consumers <= consumersBefore { break }
            try await ctx.sleep(0.05)
        }
        o.check(consumers == consumersBefore, "consumers back to \(consumersBefore)", "sfu_event_consumers is \(consumers), was \(consumersBefore)")
        return o
    }

    /// 16. A page on a DNS name rebound to 127.0.0.1 reading the API as its own origin (same-origin GETs carry
    /// no Origin): GET the room list, the victim room's state and stats, and /metrics with `Host:
    /// 127.attacker.example` and the other forms only a DNS name or a non-canonical spelling can take. All must
    /// be 403 (6016) without a byte of the room; the same GETs with Host 127.0.0.1 answer 200 (the control),
    /// and a ws:// Origin on a plain GET is refused too.
    static let rebindingHost = Attack(number: 16, name: "rebinding host") { ctx in
        var o = AttackOutcome()
        let port = ctx.api.base.port ?? 80
        let hosts = ["127.attacker.example", "127.attacker.example:\(port)", "127.0.0.1.evil.example", "localhost.evil", "127.1",
                     "0x7f.0.0.1", "0177.0.0.1", "127.0.0.256", "127.0.0", "[::1]evil", "[::2]", "", "127.0.0.1:", "127.0.0.1:99999",
                     "127.0.0.1:80x", "::1"]
        let paths = ["v1/rooms", "v1/rooms/\(VictimPump.room)", "v1/rooms/\(VictimPump.room)/stats", "metrics"]
        var refused = 0, shown = 0
        for host in hosts {
            for path in paths {
                let r = try Self.rawRequest(ctx.api.base, "GET /\(path) HTTP/1.1\r\nHost: \(host)\r\n")
                if r.status == 403 && r.json["result"] as? Int == Self.originRefused && !r.body.contains("vpub") {
                    refused += 1
                } else if shown < 4 {
                    shown += 1
                    o.fail("GET /\(path) with Host '\(host)': \(r.status) \(r.body.prefix(60).replacingOccurrences(of: "\n", with: " "))")
                }
            }
        }
        o.check(refused == hosts.count * paths.count, "\(refused) reads with a rebound Host 403/\(Self.originRefused)",
                "\(hosts.count * paths.count - refused) reads with a rebound Host were not refused")
        var served = 0
        for path in paths {
            let r = try Self.rawRequest(ctx.api.base, "GET /\(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n")
            if r.status == 200 { served += 1 } else { o.fail("control GET /\(path) with Host 127.0.0.1: \(r.status)") }
        }
        o.check(served == paths.count, "control: Host 127.0.0.1 200", "the loopback control was refused")
        let ws = try Self.rawRequest(ctx.api.base, "GET /v1/rooms HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: ws://127.0.0.1\r\n")
        o.check(ws.status == 403 && ws.json["result"] as? Int == Self.originRefused, "ws:// Origin 403/\(Self.originRefused)",
                "a GET with Origin ws://127.0.0.1 got \(ws.status)")
        return o
    }

    /// One HTTP/1.1 request as written (request line and headers, no final empty line; `Connection: close` is
    /// added) on a fresh connection: status, body and its JSON. URLSession cannot send just any Host.
    static func rawRequest(_ base: URL, _ head: String) throws -> (status: Int, body: String, json: [String: Any]) {
        let c = try RawTCP(port: UInt16(base.port ?? 80))
        try c.send(Array((head + "Connection: close\r\n\r\n").utf8))
        var bytes: [UInt8] = []
        while let chunk = c.receive() { bytes += chunk }
        let text = String(decoding: bytes, as: UTF8.self)
        let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, body, (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:])
    }

    /// Opens `/v1/events?<query>` as a WebSocket over a raw connection, reads the status and the first text
    /// message, then closes (a masked close frame, then the socket).
    static func openEvents(_ base: URL, query: String) async throws -> (status: String, first: [String: Any]?) {
        let c = try RawTCP(port: UInt16(base.port ?? 80))
        try c.send(Array(("GET /v1/events?\(query) HTTP/1.1\r\nHost: 127.0.0.1:\(base.port ?? 80)\r\nUpgrade: websocket\r\n"
            + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
        var bytes: [UInt8] = []
        var status = "", first: [String: Any]?
        reading: while let chunk = c.receive() {
            bytes += chunk
            guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: [13, 10, 13, 10]) }) else { continue }
            status = String(decoding: bytes[..<end].prefix { $0 != 13 }, as: UTF8.self)
            var i = end + 4
            while i + 2 <= bytes.count {  // server frames: unmasked; 7-, 16- or 64-bit length
                let short = Int(bytes[i + 1] & 0x7F)
                let extra = short == 126 ? 2 : short == 127 ? 8 : 0
                guard i + 2 + extra <= bytes.count else { break }
                let length = extra == 0 ? short : bytes[(i + 2)..<(i + 2 + extra)].reduce(0) { $0 << 8 | Int($1) }
                let start = i + 2 + extra
                guard start + length <= bytes.count else { break }
                if bytes[i] & 0x0F == 1 {
                    first = (try? JSONSerialization.jsonObject(with: Data(bytes[start..<start + length]))) as? [String: Any]
                    break reading
                }
                i = start + length
            }
        }
        let mask: [UInt8] = [7, 7, 7, 7]
        try? c.send([0x88, 0x82] + mask + [0x03 ^ 7, 0xE8 ^ 7])  // 1000, normal closure
        return (status, first)
    }
}

/// A blocking TCP connection to a loopback port with a 5 s timeout on every read and write: for requests
/// written byte for byte.
final class RawTCP {
    private let fd: Int32

    init(port: UInt16, timeout: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LoadError("socket() failed: errno \(errno)") }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0 else {
            close(fd)
            throw LoadError("connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw LoadError("send failed: errno \(errno)") }
            sent += n
        }
    }

    /// The next bytes, or nil at the end of the stream, a timeout or an error.
    func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buffer[0..<n]) : nil
    }
}
