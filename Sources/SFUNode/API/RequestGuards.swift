import HTTPTypes
import Hummingbird

/// Keeps web pages from driving the API through a browser. A browser sends `Origin` with every cross-origin
/// request (and every WebSocket opening): an `Origin` not listed in `api.allowed_origins` is refused (403,
/// 6016). Non-browser clients send none, except swift-websocket's client (`SFUClient.EventStream`), which
/// always sends `ws://<host>` on its WebSocket opening and cannot be told not to: only that passes unlisted
/// (`isOwnWebSocketOrigin`); no browser sends a ws:// or wss:// origin at all. A request with a body must say
/// `Content-Type: application/json` (415, 6015), so a cross-origin "simple" request (text/plain, form data),
/// which a browser sends without asking first, never runs. Without an API key (loopback only) the `Host`
/// must be a loopback address or `localhost` (`isLoopback(host:)`), so a page whose DNS name is rebound to
/// 127.0.0.1 (`127.attacker.example`) is refused: its requests are same-origin and carry no `Origin`, and
/// were let through by a "127." prefix test.
struct BrowserGuard<Context: RequestContext>: RouterMiddleware {
    let allowedOrigins: Set<String>
    let loopbackHostOnly: Bool

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        if let origin = request.headers[.origin], !allowedOrigins.contains(origin), !Self.isOwnWebSocketOrigin(origin, request) {
            return ControlAPI.response(.forbidden, Refusal(result: 6016, msg: "origin \(origin.prefix(200)) is not allowed (api.allowed_origins)"))
        }
        if loopbackHostOnly, let host = request.headers[Self.hostField] ?? request.head.authority, !Self.isLoopback(host: host) {
            return ControlAPI.response(.forbidden, Refusal(result: 6016, msg: "host \(host.prefix(200)) is not a loopback name (set api.key to serve others)"))
        }
        if request.method == .post || request.method == .patch || request.method == .put {
            let type = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            guard type == "application/json" else {
                return ControlAPI.response(.unsupportedMediaType, Refusal(result: 6015, msg: "the body must be JSON with Content-Type: application/json"))
            }
        }
        return try await next(request, context)
    }

    /// The Origin swift-websocket's client sends: on a WebSocket opening, `ws://` or `wss://` and the name of
    /// the request's own Host (without its port). It used to be any ws:// or wss:// origin, on any request.
    static func isOwnWebSocketOrigin(_ origin: String, _ request: Request) -> Bool {
        guard request.headers[.upgrade]?.lowercased() == "websocket", let host = request.headers[hostField] ?? request.head.authority else {
            return false
        }
        var name = Substring(host)
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") { name = name[...close] } else if let colon = name.firstIndex(of: ":") {
            name = name[..<colon]
        }
        guard !name.isEmpty else { return false }
        let o = origin.lowercased(), n = name.lowercased()
        let bare = n.hasPrefix("[") ? String(n.dropFirst().dropLast()) : n
        return [n, bare].contains { o == "ws://" + $0 || o == "wss://" + $0 }
    }

    /// HTTP/1.1's Host, where a request kept it as a field rather than as its authority.
    static var hostField: HTTPField.Name { HTTPField.Name("Host")! }

    /// Whether `host` (a Host header or authority) names loopback in a form a DNS name cannot take, each with
    /// an optional `:port` (1-5 digits, 1-65535):
    /// - `localhost`, in any case (browsers resolve it to loopback themselves, never by DNS);
    /// - an IPv4 address in 127.0.0.0/8 written as four decimal octets 0-255 without leading zeros, the
    ///   form browsers send (they rewrite `127.1`, `0x7f.0.0.1` and `0177.0.0.1` to it): shorthand and
    ///   other spellings are refused, whatever `inet_aton` would make of them;
    /// - `[::1]` exactly (bare `::1` is not a valid Host: RFC 3986 brackets IPv6 literals).
    /// Anything else is refused, above all a name that only begins like an address (`127.attacker.example`,
    /// `127.0.0.1.evil.example`): its owner decides where it resolves.
    static func isLoopback(host: String) -> Bool {
        let u = Array(host.utf8)
        let name: ArraySlice<UInt8>, rest: ArraySlice<UInt8>
        if u.first == UInt8(ascii: "["), let close = u.firstIndex(of: UInt8(ascii: "]")) {
            (name, rest) = (u[...close], u[(close + 1)...])
        } else if let colon = u.firstIndex(of: UInt8(ascii: ":")) {
            (name, rest) = (u[..<colon], u[colon...])
        } else {
            (name, rest) = (u[...], [])
        }
        if !rest.isEmpty {
            guard rest.first == UInt8(ascii: ":"), isPort(rest.dropFirst()) else { return false }
        }
        return name.elementsEqual("[::1]".utf8) || name.map(lowercased).elementsEqual("localhost".utf8) || isLoopbackIPv4(name)
    }

    private static func lowercased(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c + 0x20 : c }

    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// 1-5 decimal digits, 1-65535.
    private static func isPort(_ digits: ArraySlice<UInt8>) -> Bool {
        guard (1...5).contains(digits.count), digits.allSatisfy(isDigit) else { return false }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return (1...65535).contains(value)
    }

    /// `127.a.b.c`: four parts, each 1-3 digits, 0-255, no leading zero.
    private static func isLoopbackIPv4(_ name: ArraySlice<UInt8>) -> Bool {
        let parts = name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        var octets: [Int] = []
        for p in parts {
            guard (1...3).contains(p.count), p.allSatisfy(isDigit), p.count == 1 || p.first != UInt8(ascii: "0") else { return false }
            let value = p.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard value <= 255 else { return false }
            octets.append(value)
        }
        return octets[0] == 127
    }
}

/// When an API key is configured, every request needs `Authorization: Bearer <key>`.
struct BearerKey<Context: RequestContext>: RouterMiddleware {
    let key: String

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        let given = request.headers[.authorization] ?? ""
        guard given.hasPrefix("Bearer "), constantTimeEqual(Array(given.utf8.dropFirst(7)), Array(key.utf8)) else {
            return ControlAPI.response(.unauthorized, Refusal(result: 6013, msg: "missing or wrong API key (Authorization: Bearer <key>)"))
        }
        return try await next(request, context)
    }

    func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
