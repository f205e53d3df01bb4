import Foundation
import HummingbirdWSClient
import Logging

/// One event from the node's `/v1/events` stream.
public struct NodeEvent: @unchecked Sendable {
    public let type: String
    public let room: String?
    public let seq: UInt64?
    /// The whole object, for the event's own fields (`participant`, `slots`, ...).
    public let json: [String: Any]
    public let text: String

    public init?(text: String) {
        guard let o = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
              let type = o["type"] as? String else { return nil }
        self.type = type
        room = o["room"] as? String
        seq = (o["seq"] as? NSNumber)?.uint64Value
        json = o
        self.text = text
    }

    public subscript(key: String) -> Any? { json[key] }
}

/// Follows the node's event stream over a WebSocket, reconnecting after a drop and resuming after the last
/// event it saw (`since=<seq>`), so a restart of the signaling server's connection loses nothing the node
/// still keeps.
///
/// A connection that goes quiet is checked with pings (RFC 6455 section 5.5.2): one left unanswered for
/// `pingInterval` ends it and the stream reconnects. Without them a dead path (a node killed without a FIN,
/// a NAT that forgot the flow) or bytes lost behind the upgrade response (swift-nio's client upgrade can
/// drop frames and the FIN that arrive in the same read as the 101) left the stream waiting forever.
public struct EventStream: Sendable {
    public let api: URL
    public let key: String?
    public let room: String?
    public let pingInterval: Duration
    let logger: Logger

    public init(api: URL, key: String? = nil, room: String? = nil, pingInterval: Duration = .seconds(15),
                logger: Logger = Logger(label: "events")) {
        self.api = api
        self.key = key
        self.room = room
        self.pingInterval = pingInterval
        self.logger = logger
    }

    /// Runs until the task is cancelled, handing each event to `handle` in order.
    public func run(_ handle: @escaping @Sendable (NodeEvent) async -> Void) async {
        let lastSeq = LastSeq()
        while !Task.isCancelled {
            var components = URLComponents(url: api.appendingPathComponent("v1/events"), resolvingAgainstBaseURL: false)!
            components.scheme = api.scheme == "https" ? "wss" : "ws"
            var query: [URLQueryItem] = []
            if let room { query.append(URLQueryItem(name: "room", value: room)) }
            if let seq = await lastSeq.value { query.append(URLQueryItem(name: "since", value: String(seq))) }
            components.queryItems = query.isEmpty ? nil : query
            var configuration = WebSocketClientConfiguration(autoPing: .enabled(timePeriod: pingInterval))
            if let key { configuration.additionalHeaders[.authorization] = "Bearer \(key)" }
            do {
                try await WebSocketClient.connect(url: components.string!, configuration: configuration, logger: logger) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message, let event = NodeEvent(text: text) else { continue }
                        if let seq = event.seq { await lastSeq.set(seq) }
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

    private actor LastSeq {
        var value: UInt64?
        func set(_ v: UInt64) { value = v }
    }
}
