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
