import Foundation
import HummingbirdWSClient
import Logging

/// One event from the node's `/v1/events` stream.
public struct NodeEvent: @unchecked Sendable {
    public let type: String
    public let room: String?
    public let seq: UInt64?
    /// The node process's numbering this message belongs to (16 hex digits, new at every node start); nil
    /// on a refused query's `error` and from nodes that predate it.
    public let stream: String?
    /// The whole object, for the event's own fields (`participant`, `slots`, ...).
    public let json: [String: Any]
    public let text: String

    public init?(text: String) {
        guard let o = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
              let type = o["type"] as? String else { return nil }
        self.type = type
        room = o["room"] as? String
        seq = (o["seq"] as? NSNumber)?.uint64Value
        stream = o["stream"] as? String
        json = o
        self.text = text
    }

    public subscript(key: String) -> Any? { json[key] }
}

/// Follows the node's event stream over a WebSocket, reconnecting after a drop and resuming after the last
/// event it saw (`since=<seq>&stream=<its stream>`), so a restart of the signaling server's connection loses
/// nothing the node still keeps.
///
/// When the node cannot honour the resume point (it restarted: its numbering starts again, under a new
/// `stream`) it sends `events_reset` and then only new events. The stream logs it, hands it to `handle` like
/// any message (whatever the consumer derived from events may be stale: read the state again) and resumes
/// from the reset's `next_seq` from then on, so it does not send the same dead resume point again. A
/// refused query (`error`) forgets the resume point too: the next connection starts with new events.
///
/// A connection that goes quiet is checked with pings (RFC 6455 section 5.5.2): one left unanswered for
/// `pingInterval` ends it and the stream reconnects. Without them a dead path (a node killed without a FIN,
/// a NAT that forgot the flow) or bytes lost behind the upgrade response (swift-nio's client upgrade can
/// drop frames and the FIN that arrive in the same read as the 101) left the stream waiting forever.
public struct EventStream: Sendable {
    public let api: URL
    public let key: String?
    public let room: String?
    /// Where the first connection resumes: after this `seq` of this `stream` (a consumer that kept both
    /// across its own restart); nil starts with the next event.
    public let since: UInt64?
    public let stream: String?
    public let pingInterval: Duration
    let logger: Logger

    public init(api: URL, key: String? = nil, room: String? = nil, since: UInt64? = nil, stream: String? = nil,
                pingInterval: Duration = .seconds(15), logger: Logger = Logger(label: "events")) {
        self.api = api
        self.key = key
        self.room = room
        self.since = since
        self.stream = stream
        self.pingInterval = pingInterval
        self.logger = logger
    }

    /// Runs until the task is cancelled, handing each event to `handle` in order.
    public func run(_ handle: @escaping @Sendable (NodeEvent) async -> Void) async {
        let resume = ResumePoint(seq: since, stream: stream)
        while !Task.isCancelled {
            var components = URLComponents(url: api.appendingPathComponent("v1/events"), resolvingAgainstBaseURL: false)!
            components.scheme = api.scheme == "https" ? "wss" : "ws"
            var query: [URLQueryItem] = []
            if let room { query.append(URLQueryItem(name: "room", value: room)) }
            let (since, stream) = await resume.current
            if let since {
                query.append(URLQueryItem(name: "since", value: String(since)))
                if let stream { query.append(URLQueryItem(name: "stream", value: stream)) }
            }
            components.queryItems = query.isEmpty ? nil : query
            var configuration = WebSocketClientConfiguration(autoPing: .enabled(timePeriod: pingInterval))
            if let key { configuration.additionalHeaders[.authorization] = "Bearer \(key)" }
            do {
                try await WebSocketClient.connect(url: components.string!, configuration: configuration, logger: logger) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message, let event = NodeEvent(text: text) else { continue }
                        switch event.type {
                        case "events_reset":
                            logger.warning("the node could not resume the event stream (it restarted?); new events only from here",
                                           metadata: ["reason": "\(event["reason"] ?? "")", "since": "\(since.map(String.init) ?? "")",
                                                      "next_seq": "\(event["next_seq"] ?? "")", "stream": "\(event.stream ?? "")"])
                            await resume.reset(nextSeq: (event["next_seq"] as? NSNumber)?.uint64Value, stream: event.stream)
                        case "error":
                            logger.error("the node refused the event stream's query; starting over without a resume point",
                                         metadata: ["result": "\(event["result"] ?? "")", "msg": "\(event["msg"] ?? "")"])
                            await resume.reset(nextSeq: nil, stream: nil)
                        default:
                            if let seq = event.seq { await resume.set(seq, stream: event.stream) }
                        }
                        await handle(event)
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("event stream dropped; reconnecting", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// The last event seen (`seq` and the `stream` it belongs to): where the next connection resumes.
    private actor ResumePoint {
        var seq: UInt64?
        var stream: String?

        init(seq: UInt64?, stream: String?) {
            self.seq = seq
            self.stream = stream
        }

        var current: (UInt64?, String?) { (seq, stream) }

        func set(_ seq: UInt64, stream: String?) {
            self.seq = seq
            if let stream { self.stream = stream }
        }

        /// After a reset the stream goes on with event `nextSeq` of `stream`: resume just before it. Without
        /// a next_seq (a refused query), resume nothing.
        func reset(nextSeq: UInt64?, stream: String?) {
            if let nextSeq, nextSeq > 0 {
                seq = nextSeq - 1
                self.stream = stream
            } else {
                seq = nil
                self.stream = nil
            }
        }
    }
}
