import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket

extension ControlAPI {
    /// `GET /v1/events[?room=<room>][&since=<seq>[&stream=<id>]]`, upgraded to a WebSocket: one text message per
    /// event (see `EventHub`, and its `events_reset` notice for a resume point it cannot honour). What the
    /// consumer sends is read and ignored; closing either side ends the stream.
    ///
    /// A bad query is answered after the upgrade, with an `error` message (`result`, `msg` naming the
    /// parameter) and a close frame (1008, policy violation): a consumer that reads the stream reads why. What
    /// is refused before the upgrade (the API key, the origin) is answered as any request (`WebSocketRefusals`).
    static func addEvents(_ router: Router<Context>, node: Node) {
        router.ws("/v1/events") { request, _ in
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                throw APIError(.upgradeRequired, code: 6014, "GET /v1/events is a WebSocket: send Upgrade: websocket")
            }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let query: EventsQuery
            do { query = try EventsQuery(context.request.uri) } catch {
                // The refusal as a message (the API's error shape), then a close with the reason.
                let e = APIError.from(error)
                try await outbound.write(.text(EventJSON.encode(.error(result: e.code, msg: e.message), room: nil, seq: nil, stream: nil,
                                                                time: Int64(Date().timeIntervalSince1970 * 1000))))
                try await outbound.close(.policyViolation, reason: e.message)
                return
            }
            let subscription = node.events.subscribe(room: query.room, since: query.since, stream: query.stream)
            if let reset = subscription.reset {
                context.logger.info("events consumer's resume point reset", metadata: [
                    "reason": "\(reset.rawValue)", "since": "\(query.since.map(String.init) ?? "")", "stream": "\(query.stream ?? "")"])
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in inbound {}  // ends when the consumer closes
                }
                group.addTask {
                    for await message in subscription.messages {
                        if let loss = subscription.takeLoss() {
                            try await outbound.write(.text(subscription.notice(loss, now: Int64(Date().timeIntervalSince1970 * 1000))))
                        }
                        try await outbound.write(.text(message.text))
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// The query of `/v1/events`: an optional room filter and an optional resume point (`since`, and the
    /// `stream` its `seq` belongs to).
    struct EventsQuery {
        var room: String?
        var since: UInt64?
        /// 16 hex digits, lowercased (the form the node writes).
        var stream: String?

        init(_ uri: URI) throws {
            let q = uri.queryParameters
            for (key, _) in q where key != "room" && key != "since" && key != "stream" {
                throw APIError(.badRequest, code: 6010, "unknown query parameter '\(key)' (known: room, since, stream)")
            }
            room = q.get("room").flatMap { $0.isEmpty ? nil : $0 }
            if let text = q.get("since") {
                // Any UInt64 is accepted (the hub only compares it); nothing else is.
                guard let value = UInt64(text) else { throw APIError(.badRequest, code: 6010, "query parameter 'since' must be a sequence number") }
                since = value
            }
            if let text = q.get("stream") {
                guard Self.isStream(text) else {
                    throw APIError(.badRequest, code: 6010, "query parameter 'stream' must be 16 hex digits (the 'stream' of an event)")
                }
                stream = text.lowercased()
            }
        }

        /// Exactly 16 characters 0-9, a-f, A-F (no sign, no 0x, no space: `UInt64(_:radix:)` would take a `+`).
        static func isStream(_ text: String) -> Bool {
            let u = Array(text.utf8)
            return u.count == 16 && u.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
            }
        }
    }
}
