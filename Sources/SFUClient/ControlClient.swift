import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client of the node's control API (docs/openapi.yaml), as the load generator and the example signaling
/// server call it: JSON in, JSON out, the HTTP status kept beside the body.
public struct ControlClient: Sendable {
    public let base: URL
    public let key: String?

    public init(base: URL, key: String? = nil) {
        self.base = base
        self.key = key
    }

    public struct Reply: @unchecked Sendable {
        public var status: Int
        public var json: [String: Any]
        public var result: Int? { json["result"] as? Int }

        public init(status: Int, json: [String: Any]) {
            self.status = status
            self.json = json
        }
    }

    @discardableResult
    public func call(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Reply {
        var request = URLRequest(url: base.appendingPathComponent(path))
        request.httpMethod = method
        request.timeoutInterval = 10
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        if let body { request.httpBody = try JSONSerialization.data(withJSONObject: body) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return Reply(status: status, json: json)
    }

    /// Calls and insists on success.
    @discardableResult
    public func require(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Reply {
        let r = try await call(method, path, body)
        guard (200..<300).contains(r.status) else { throw APIRefusal(method: method, path: path, status: r.status, json: r.json) }
        return r
    }

    /// Which of a participant's transports an SDP offer is for.
    public enum OfferDirection: String, Sendable {
        case publish, subscribe
    }

    /// Sends a participant's SDP offer (`POST .../publish` or `.../subscribe`), the first of a transport or a
    /// later one, and insists on an answer (`sdp`, and `change`: what the offer did to the transport).
    /// `screenShareMids` names the offer's video m-lines that are screen shares (publish) or screen slots
    /// (subscribe): browsers give a display capture's stream a random id, so only the page that added the
    /// transceiver knows which m-line is the screen. The field is left out when empty, so a node from before
    /// screen share takes the same body as before.
    @discardableResult
    public func offer(_ direction: OfferDirection, room: String, participant: String, sdp: String,
                      screenShareMids: [String] = []) async throws -> Reply {
        var body: [String: Any] = ["sdp": sdp]
        if !screenShareMids.isEmpty { body["screen_share_mids"] = screenShareMids }
        return try await require("POST", "v1/rooms/\(room)/participants/\(participant)/\(direction.rawValue)", body)
    }

    /// Where a participant of `room` should go (`POST /v1/placements`): in a cluster, the node the registry
    /// chose and why; on a node without a registry, that node itself (`node` "local").
    public func place(room: String, participant: String? = nil) async throws -> (node: String, controlURL: URL?, reason: String) {
        var body: [String: Any] = ["room": room]
        if let participant { body["participant"] = participant }
        let r = try await require("POST", "v1/placements", body)
        return (r.json["node"] as? String ?? "", (r.json["control_url"] as? String).flatMap(URL.init(string:)), r.json["reason"] as? String ?? "")
    }

    /// The text of `/metrics`.
    public func metrics() async throws -> String {
        var request = URLRequest(url: base.appendingPathComponent("metrics"))
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        let (data, _) = try await URLSession.shared.data(for: request)
        return String(decoding: data, as: UTF8.self)
    }
}

/// A call the node refused: the status, the node's result code and message.
public struct APIRefusal: Error, CustomStringConvertible, @unchecked Sendable {
    public var method: String
    public var path: String
    public var status: Int
    public var json: [String: Any]
    public var result: Int? { json["result"] as? Int }
    public var message: String { json["msg"] as? String ?? "" }

    public init(method: String, path: String, status: Int, json: [String: Any]) {
        self.method = method
        self.path = path
        self.status = status
        self.json = json
    }

    public var description: String { "\(method) \(path): \(status) \(result.map(String.init) ?? "-") \(message)" }
}
