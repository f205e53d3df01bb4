import WebRTCEdge

/// Where the node may connect when a caller - not the operator - chose the target: a moderator's `rtmp_url`.
/// Left open, a moderator could make the node reach its own loopback services, the hosts of its private
/// networks or a cloud's metadata service (server-side request forgery), and any port of any of them.
///
/// - With no list (the default): a public address only (`AddressScope.global`: no loopback, private, link-local,
///   unique-local or reserved address), and only the default ports (1935 and 443 for RTMP).
/// - With a list (`streaming.rtmp_hosts`): only the hosts listed. A host listed alone may be reached on the
///   default ports; `host:port` on that port only. A listed host may be anywhere, a private address included:
///   the operator named it (a local nginx-rtmp is `"127.0.0.1:1935"`).
///
/// Every check is made on what the name resolves to (`CheckedResolver`), and again on the address the
/// connection was made to (`EncoderConnections`, for the FFmpeg that resolves the name itself).
public struct OutboundRule: Sendable, Equatable {
    public struct Entry: Sendable, Equatable, CustomStringConvertible {
        /// Lower case; an IPv6 address without its brackets.
        public var host: String
        public var port: UInt16?

        /// "host", "host:port", "[v6]" or "[v6]:port"; a bare IPv6 address has no port. Nil for anything else.
        public init?(_ text: String) {
            guard !text.isEmpty, text.utf8.count <= 255, !text.contains(where: { " /?#@".contains($0) }) else { return nil }
            var host = Substring(text.lowercased()), port: UInt16?
            if host.hasPrefix("[") {
                guard let close = host.firstIndex(of: "]") else { return nil }
                let rest = host[host.index(after: close)...]
                host = host[host.index(after: host.startIndex)..<close]
                if !rest.isEmpty {
                    guard rest.first == ":", let p = UInt16(rest.dropFirst()), p > 0 else { return nil }
                    port = p
                }
            } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
                guard let p = UInt16(host[host.index(after: colon)...]), p > 0 else { return nil }
                port = p
                host = host[..<colon]
            }
            guard !host.isEmpty else { return nil }
            self.host = OutboundRule.bare(String(host))
            self.port = port
        }

        public var description: String {
            let h = host.contains(":") ? "[\(host)]" : host
            return port.map { "\(h):\($0)" } ?? h
        }
    }

    /// Why a target was refused; its text says what to change.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public var entries: [Entry]
    public var defaultPorts: [UInt16]
    /// The configuration key that holds the list, for the refusals' text.
    public var key: String

    public init(entries: [Entry], defaultPorts: [UInt16], key: String) {
        self.entries = entries
        self.defaultPorts = defaultPorts
        self.key = key
    }

    /// The listed entries of `host` (nil when no list is set: the default rule).
    private func listed(_ host: String) -> [Entry]? {
        guard !entries.isEmpty else { return nil }
        let h = Self.bare(host)
        return entries.filter { $0.host == h }
    }

    /// Whether `host` may be reached on `port`, before knowing its addresses.
    public func check(host: String, port: UInt16) throws(Refusal) {
        let ports = defaultPorts.map(String.init).joined(separator: " or ")
        guard let listed = listed(host) else {
            guard defaultPorts.contains(port) else {
                throw Refusal(description: "port \(port) is not allowed (\(ports); list \(Self.bare(host)):\(port) in \(key) to allow it)")
            }
            return
        }
        guard !listed.isEmpty else { throw Refusal(description: "\(Self.bare(host)) is not among \(key)") }
        guard listed.contains(where: { $0.port.map { $0 == port } ?? defaultPorts.contains(port) }) else {
            throw Refusal(description: "port \(port) of \(Self.bare(host)) is not allowed by \(key)")
        }
    }

    /// Whether a connection to `host` may go to `address` (one it resolved to, or the one a connection reached).
    public func check(host: String, address: TransportAddress) throws(Refusal) {
        try check(host: host, port: address.port)
        guard listed(host) == nil else { return }
        let scope = AddressScope(address.ip)
        guard scope == .global else {
            throw Refusal(description: "\(Self.bare(host)) is at \(address.host), a \(scope.rawValue) address (list it in \(key) to allow it)")
        }
    }

    /// Lower case, without an IPv6 address's brackets; an IP address in its canonical text (RFC 5952 for IPv6),
    /// so that `[0:0::1]` is the listed `[::1]`.
    static func bare(_ host: String) -> String {
        var h = host.lowercased()
        if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        return TransportAddress(h.contains(":") ? "[\(h)]:0" : "\(h):0")?.host ?? h
    }
}
