import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NodeIO
import SFU
import SFUClient
import SFUMedia
import SFUSimulation
import Synchronization
import WebRTCEdge

/// Attacks on the control API: every cap and malformed name, a browser page's cross-origin request, and a
/// flood at the worker's port while the API is used.
enum APIAttacks {
    /// Result codes of the browser guard (docs/openapi.yaml, `ResultCode`).
    static let notJSON = 6015
    static let originRefused = 6016

    /// 13. Rooms, participants, slots and tracks past their caps (409 or 400 with 6006); ids with a slash,
    /// a newline or 10 kB (400, 6010); a cross-origin "simple" POST (text/plain from http://evil.example:
    /// 403, 6016; text/plain without an Origin: 415, 6015), which must create nothing.
    static let capsAndNames = Attack(number: 13, name: "caps and names") { ctx in
        var o = AttackOutcome()
        func expect(_ r: ControlClient.Reply?, _ status: Int, _ code: Int, _ what: String) {
            let got = r.map { "\($0.status)/\($0.result ?? -1)" } ?? "no refusal"
            o.check(r?.status == status && r?.result == code, "\(what) \(status)/\(code)", "\(what): expected \(status)/\(code), got \(got) \(r?.json["msg"] ?? "")")
        }
        let before = try await ctx.metrics()
        // Rooms up to the cap, then one more.
        let existing = (try await ctx.api.call("GET", "v1/rooms").json["rooms"] as? [String])?.count ?? 0
        var refused: ControlClient.Reply?
        var made: [String] = []
        for i in 0...(ctx.limits.rooms - existing) {
            let r = try await ctx.api.call("POST", "v1/rooms", ["room": "cap-\(i)"])
            if r.status == 201 || r.status == 200 { made.append("cap-\(i)"); ctx.createdRooms.append("cap-\(i)") } else { refused = r; break }
        }
        expect(refused, 409, 6006, "room \(existing + made.count + 1)")
        guard let room = made.first else { o.fail("no room could be made"); return o }
        refused = nil
        for i in 0...ctx.limits.participantsPerRoom {
            let r = try await ctx.api.call("POST", "v1/rooms/\(room)/participants", ["participant": "p\(i)", "role": i == 0 ? "moderator" : "participant"])
            if r.status != 201 && r.status != 200 { refused = r; break }
        }
        expect(refused, 409, 6006, "participant \(ctx.limits.participantsPerRoom + 1)")
        let many = try ctx.subscriber(audio: ctx.limits.slotsPerSubscription + 1)
        expect(try await ctx.offer(room, "p0", many, "subscribe"), 400, 6006, "\(ctx.limits.slotsPerSubscription + 1) slots")
        let wide = try ctx.publisher(audio: true, video: true)
        expect(try await ctx.offer(room, "p0", wide, "publish", sdp: Self.withExtraAudio(wide.offer(), count: ctx.limits.tracksPerPublish - 1)),
               400, 6006, "\(ctx.limits.tracksPerPublish + 1) tracks")

        // Two m-lines with one mid, and an offer without BUNDLE: malformed, refused (400), nothing bound.
        let twin = try ctx.publisher()
        let twinSDP = Self.withExtraAudio(twin.offer(), count: 1).replacingOccurrences(of: "a=mid:x0", with: "a=mid:0")
            .replacingOccurrences(of: "BUNDLE x0 ", with: "BUNDLE ")
        let r1 = try await ctx.offer(room, "p1", twin, "publish", sdp: twinSDP)
        // Refused, or answered with one live m-line per mid (the copy rejected with port 0).
        let liveMids = (r1.json["sdp"] as? String).map { sdp in
            sdp.components(separatedBy: "\r\nm=").dropFirst().filter { !$0.hasPrefix("audio 0 ") && !$0.hasPrefix("video 0 ") }
                .compactMap { $0.components(separatedBy: "\r\n").first { $0.hasPrefix("a=mid:") } }
        } ?? []
        o.check(r1.status == 400 || (r1.status == 200 && Set(liveMids).count == liveMids.count),
                r1.status == 400 ? "duplicate mid 400/\(r1.result ?? -1)" : "duplicate mid: copy rejected (port 0)",
                "an offer with a duplicate mid got \(r1.status)/\(r1.result ?? -1) with live mids \(liveMids)")
        await ctx.remove(room, "p1")
        let loose = try ctx.subscriber(audio: 2)
        let r2 = try await ctx.offer(room, "p2", loose, "subscribe", sdp: loose.offer().replacingOccurrences(of: "a=group:BUNDLE 0 1\r\n", with: ""))
        o.check(r2.status == 400, "no BUNDLE \(r2.status)/\(r2.result ?? -1)", "an offer without BUNDLE got \(r2.status)/\(r2.result ?? -1)")
        let after = try await ctx.metrics()
        for limit in ["rooms", "participants_per_room", "slots_per_subscription", "tracks_per_publish"] {
            let n = after.sum("sfu_limit_refusals_total", label: "limit=\"\(limit)\"") - before.sum("sfu_limit_refusals_total", label: "limit=\"\(limit)\"")
            o.check(n == 1, "refusals{\(limit)} +1", "sfu_limit_refusals_total{limit=\"\(limit)\"} rose by \(n), not 1")
        }

        // Names.
        let tenKB = String(repeating: "a", count: 10_000)
        for (label, bad) in [("a/b", "a/b"), ("newline", "a\nb"), ("10 kB", tenKB), (".hidden", ".hidden")] {
            expect(try await ctx.api.call("POST", "v1/rooms", ["room": bad]), 400, 6010, "room id \(label)")
            expect(try await ctx.api.call("POST", "v1/rooms/\(room)/participants", ["participant": bad]), 400, 6010, "participant id \(label)")
        }
        for (label, path) in [("%2F in path", "v1/rooms/a%2Fb"), ("%0A in path", "v1/rooms/a%0Ab"), ("10 kB path", "v1/rooms/" + tenKB)] {
            let r = try await Self.raw(ctx.api.base, "GET", path)
            o.check(r.status == 400 || r.status == 404 || r.status == 414 || r.status == 431, "\(label) \(r.status)", "\(label): got \(r.status)/\(r.result ?? -1)")
        }

        // A page on another origin posting a "simple" request (no preflight).
        let body = Data(#"{"room":"evil"}"#.utf8)
        expect(try await Self.raw(ctx.api.base, "POST", "v1/rooms", body: body, headers: ["Content-Type": "text/plain", "Origin": "http://evil.example"]),
               403, originRefused, "text/plain from evil origin")
        expect(try await Self.raw(ctx.api.base, "POST", "v1/rooms", body: body, headers: ["Content-Type": "text/plain"]), 415, notJSON, "text/plain")
        expect(try await Self.raw(ctx.api.base, "POST", "v1/rooms", body: body, headers: ["Content-Type": "application/json", "Origin": "https://evil.example"]),
               403, originRefused, "JSON from evil origin")
        let rooms = try await ctx.api.call("GET", "v1/rooms").json["rooms"] as? [String] ?? []
        o.check(!rooms.contains("evil"), "no room 'evil'", "a cross-origin request created a room")
        for r in made { await ctx.deleteRoom(r) }
        return o
    }

    /// An offer with `count` more sendonly audio m-lines (copies of the first, each its own mid and SSRC).
    static func withExtraAudio(_ offer: String, count: Int) -> String {
        let body = offer.hasSuffix("\r\n") ? String(offer.dropLast(2)) : offer
        var sections = body.components(separatedBy: "\r\nm=")
        guard sections.count > 1 else { return offer }
        let audio = sections[1]
        for i in 0..<count {
            let lines = audio.components(separatedBy: "\r\n").map { line in
                if line == "a=mid:0" { return "a=mid:x\(i)" }
                if line.hasPrefix("a=ssrc:") { return "a=ssrc:\(UInt32.random(in: 1...UInt32.max)) cname:load" }
                return line
            }
            sections.append(lines.joined(separator: "\r\n"))
        }
        var text = sections.joined(separator: "\r\nm=") + "\r\n"
        if let r = text.range(of: "a=group:BUNDLE ") {
            text.insert(contentsOf: (0..<count).map { "x\($0) " }.joined(), at: r.upperBound)
        }
        return text
    }

    /// A request as a browser or a hostile script would make it: any method, path, body and headers.
    static func raw(_ base: URL, _ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:]) async throws -> ControlClient.Reply {
        guard let url = URL(string: base.absoluteString + "/" + path) else { return ControlClient.Reply(status: 400, json: [:]) }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 10
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ControlClient.Reply(status: (response as? HTTPURLResponse)?.statusCode ?? 0, json: json)
    }

    /// 14. One sender floods the worker's port with garbage as fast as it can while rooms are created,
    /// joined and destroyed through the API: every call answers within `limits.command_timeout_ms`, the
    /// garbage is counted, and the victim's audio keeps flowing.
    static let floodFairness = Attack(number: 14, name: "flood fairness") { ctx in
        var o = AttackOutcome()
        guard let target = ctx.victim.publisher.nodeAddress else { o.fail("no worker address"); return o }
        let before = try await ctx.metrics()
        let kernelBefore = KernelUDPDrops.count(port: target.port)
        let flood = Flood(target: target)
        flood.start()
        try await ctx.sleep(0.3)
        var latencies: [Double] = []
        var failures: [String] = []
        let start = Date()
        var i = 0
        while Date().timeIntervalSince(start) < 5 {
            let room = "flood-\(i)"
            i += 1
            let pub = try ctx.publisher()
            let calls: [(String, String, [String: Any]?)] = [
                ("POST", "v1/rooms", ["room": room]),
                ("POST", "v1/rooms/\(room)/participants", ["participant": "a", "role": "moderator"]),
                ("POST", "v1/rooms/\(room)/participants/a/publish", ["sdp": pub.offer()]),
                ("GET", "v1/rooms/\(room)", nil),
                ("PATCH", "v1/rooms/\(room)", ["max_active_talkers": 3]),
                ("DELETE", "v1/rooms/\(room)", nil),
            ]
            for (method, path, body) in calls {
                let t0 = Date()
                let r = try await ctx.api.call(method, path, body)
                latencies.append(Date().timeIntervalSince(t0) * 1000)
                if !(200..<300).contains(r.status) { failures.append("\(method) \(path): \(r.status)/\(r.result ?? -1)") }
            }
        }
        let sent = flood.stop()
        try await ctx.sleep(0.5)
        let after = try await ctx.metrics()
        let counted = after.dropsSince(before).values.reduce(0, +)
        let read = after.sum("sfu_udp_datagrams_received_total") - before.sum("sfu_udp_datagrams_received_total")
        let kernel = KernelUDPDrops.count(port: target.port) - kernelBefore
        let worst = latencies.max() ?? 0
        o.counted.append(String(format: "%d garbage in %.1f s, kernel dropped %d, worker read %d, %d counted as drops", sent.count, sent.seconds, kernel, read, counted))
        o.check(failures.isEmpty, "\(latencies.count) API calls ok", "API calls failed under the flood: \(failures.prefix(3))")
        o.check(worst < Double(ctx.limits.commandTimeoutMs), String(format: "max API latency %.0f ms", worst),
                String(format: "an API call took %.0f ms (limit %d ms)", worst, ctx.limits.commandTimeoutMs))
        // The kernel drops what the worker cannot read in time; what it reads must be counted.
        // What the kernel dropped at the worker's full socket never reached it; what it read must be counted.
        let reached = sent.count - kernel
        o.check(counted >= reached * 95 / 100, "drops counted", "only \(counted) drops counted for \(reached) garbage datagrams that reached the worker")
        return o
    }
}

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

/// A thread sending garbage datagrams to one address as fast as a socket takes them: random bytes,
/// RTP- and DTLS-looking junk from an address that never passed ICE, malformed STUN.
final class Flood: @unchecked Sendable {
    let target: TransportAddress
    private let running = Mutex(true)
    private let done = DispatchSemaphore(value: 0)
    private var sent = 0
    private var seconds = 0.0

    init(target: TransportAddress) { self.target = target }

    func start() {
        let t = Thread { [self] in
            var rng = SplitMix64(seed: 0xF100D)
            let datagrams = (0..<256).map { _ in Soak.garbage(&rng) }
            guard let socket = try? UDPSocket(bind: TransportAddress("127.0.0.1:0")!) else { done.signal(); return }
            let begin = MonoClock.now()
            var n = 0
            while running.withLock({ $0 }) {
                for i in 0..<256 where socket.send(datagrams[i], to: target) { n += 1 }
            }
            sent = n
            seconds = (MonoClock.now() - begin).seconds
            done.signal()
        }
        t.name = "flood"
        t.start()
    }

    /// Stops the thread; returns how many datagrams it sent and over how long.
    func stop() -> (count: Int, seconds: Double) {
        running.withLock { $0 = false }
        done.wait()
        return (sent, seconds)
    }
}
