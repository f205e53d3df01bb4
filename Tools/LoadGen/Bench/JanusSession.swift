import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One session on Janus's plain HTTP API (the REST transport, janus.transport.http): `create` a session,
/// `attach` plugin handles, send `message`s. A plugin answers a message at once (`success`) or acknowledges it
/// (`ack`) and answers later in an `event` with the same transaction, delivered through the session's long
/// poll (`GET /janus/<session>`), which one task keeps open.
final class JanusSession: @unchecked Sendable {
    /// A plugin's answer: its `plugindata.data` and the JSEP that came with it.
    struct Reply: @unchecked Sendable {
        var data: [String: Any]
        var jsep: [String: Any]?
        var sdp: String? { jsep?["sdp"] as? String }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        /// The plugin's `error_code`, when the plugin refused.
        var code: Int? = nil
    }

    /// A decoded JSON object handed between the poll task and a waiter (read by one side at a time).
    struct Object: @unchecked Sendable {
        var json: [String: Any]
    }

    let base: URL
    let id: Int64
    /// Who waits for which transaction, and events whose transaction nobody waits for yet (the event
    /// overtook the POST's acknowledgement); one lock, so an event and its waiter cannot miss each other.
    private struct Pending {
        var waiting: [String: CheckedContinuation<Object, Error>] = [:]
        var early: [String: Object] = [:]
    }
    private let pending = Mutex(Pending())
    private var poller: Task<Void, Never>?
    /// Set by `close`: the long poll ends after its current request. (Cancelling the task instead deadlocks
    /// in swift-corelibs-foundation when the request completes at the same moment: URLSession's cancel
    /// handler waits on its queue while that queue waits on the task's status lock.)
    private let closed = Atomic<Bool>(false)

    /// Creates a session on the server at `base` (e.g. http://127.0.0.1:8088/janus) and starts its long poll.
    static func create(base: URL) async throws -> JanusSession {
        let reply = try await post(base, ["janus": "create"])
        guard let id = ((reply["data"] as? [String: Any])?["id"] as? NSNumber)?.int64Value else {
            throw Failure(description: "janus: create gave no session id: \(reply)")
        }
        let session = JanusSession(base: base, id: id)
        session.poller = Task { await session.poll() }
        return session
    }

    private init(base: URL, id: Int64) {
        self.base = base
        self.id = id
    }

    /// Ends the long poll after its current request (Janus answers it at once when the session is destroyed).
    func close() { closed.store(true, ordering: .relaxed) }

    /// Destroys the session on the server: every handle hangs up (Janus then stops at once on SIGTERM).
    func destroy() async {
        close()
        _ = try? await Self.post(base.appendingPathComponent("\(id)"), ["janus": "destroy"])
    }

    /// Attaches a handle of `plugin` to this session.
    func attach(_ plugin: String = "janus.plugin.videoroom") async throws -> Int64 {
        let reply = try await Self.post(base.appendingPathComponent("\(id)"), ["janus": "attach", "plugin": plugin])
        guard let handle = ((reply["data"] as? [String: Any])?["id"] as? NSNumber)?.int64Value else {
            throw Failure(description: "janus: attach gave no handle id: \(reply)")
        }
        return handle
    }

    /// Detaches a handle: its PeerConnection hangs up and the plugin forgets it.
    func detach(_ handle: Int64) async {
        _ = try? await Self.post(base.appendingPathComponent("\(id)/\(handle)"), ["janus": "detach"])
    }

    /// Sends a plugin message (with an optional JSEP) and returns the plugin's answer, synchronous or
    /// through the long poll; a plugin error (`error_code`) throws.
    func message(_ handle: Int64, _ body: [String: Any], jsep: [String: Any]? = nil) async throws -> Reply {
        let transaction = UUID().uuidString
        var request: [String: Any] = ["janus": "message", "body": body, "transaction": transaction]
        if let jsep { request["jsep"] = jsep }
        var reply = try await Self.post(base.appendingPathComponent("\(id)/\(handle)"), request)
        if reply["janus"] as? String == "ack" { reply = try await event(transaction).json }
        let data = (reply["plugindata"] as? [String: Any])?["data"] as? [String: Any] ?? [:]
        if let code = (data["error_code"] as? NSNumber)?.intValue {
            throw Failure(description: "janus: \(body["request"] ?? "?") refused (\(code)): \(data["error"] ?? "")", code: code)
        }
        return Reply(data: data, jsep: reply["jsep"] as? [String: Any])
    }

    /// Waits for the event answering `transaction` (at most 10 s).
    private func event(_ transaction: String) async throws -> Object {
        let timeout = Task { [weak self] in
            try await Task.sleep(for: .seconds(10))
            self?.resume(transaction, with: .failure(Failure(description: "janus: no answer to transaction \(transaction) in 10 s")))
        }
        defer { timeout.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let arrived = pending.withLock { p -> Object? in
                if let e = p.early.removeValue(forKey: transaction) { return e }
                p.waiting[transaction] = continuation
                return nil
            }
            if let arrived { continuation.resume(returning: arrived) }
        }
    }

    private func resume(_ transaction: String, with result: Result<Object, Error>) {
        let waiter = pending.withLock { p -> CheckedContinuation<Object, Error>? in
            if let c = p.waiting.removeValue(forKey: transaction) { return c }
            if case .success(let e) = result { p.early[transaction] = e }
            return nil
        }
        guard let c = waiter else { return }
        switch result {
        case .success(let e): c.resume(returning: e)
        case .failure(let f): c.resume(throwing: f)
        }
    }

    /// The long poll: up to 16 events per request; events answering a transaction go to their waiter.
    private func poll() async {
        let url = URL(string: "\(base.absoluteString)/\(id)?maxev=16")!
        while !closed.load(ordering: .relaxed) {
            var request = URLRequest(url: url)
            request.timeoutInterval = 70  // Janus answers an idle poll with a keepalive after 30 s
            guard let (data, _) = try? await URLSession.shared.data(for: request),
                  let json = try? JSONSerialization.jsonObject(with: data) else {
                try? await Task.sleep(for: .milliseconds(100))
                continue
            }
            let events = (json as? [[String: Any]]) ?? [(json as? [String: Any]) ?? [:]]
            for e in events {
                if let transaction = e["transaction"] as? String, e["janus"] as? String == "event" {
                    resume(transaction, with: .success(Object(json: e)))
                }
            }
        }
    }

    /// One request to the API; a Janus-level `error` throws.
    static func post(_ url: URL, _ body: [String: Any]) async throws -> [String: Any] {
        var body = body
        if body["transaction"] == nil { body["transaction"] = UUID().uuidString }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.timeoutInterval = 10
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, _) = try await URLSession.shared.data(for: request)
        guard let reply = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw Failure(description: "janus: \(body["janus"] ?? "?") answered \(String(decoding: data, as: UTF8.self))")
        }
        if reply["janus"] as? String == "error" {
            throw Failure(description: "janus: \(body["janus"] ?? "?") failed: \(reply["error"] ?? reply)")
        }
        return reply
    }
}
