import WebRTCEdge

/// Where this node's control API is reached: what the cluster registry keeps for it, and what a node without a
/// registry names in its placement answers. `api.listen` is where the API binds, not an address anyone can be
/// sent to: 0.0.0.0 or [::] binds every address and names none, and a dual-stack node binds two.
extension NodeConfiguration {
    /// The control URL this node registers in the cluster registry - where placements send signaling servers
    /// and where the other nodes open their relay channels: `cluster.control_url`, else `http://<api.listen>`
    /// when that is one address. A node listening on every address must say its URL (checked at start-up,
    /// `validate`). A dual-stack `api.listen` registers its first address unless `cluster.control_url` says otherwise.
    public func registeredControlURL() throws(ConfigError) -> String {
        if !clusterControlURL.isEmpty { return clusterControlURL }
        guard !apiListen.isWildcard else {
            throw ConfigError(key: "cluster.control_url", origin: "configuration",
                              message: "api.listen \(apiListen) is every address, not one other nodes and signaling servers can be sent to: set cluster.control_url")
        }
        return "http://\(apiListen)"
    }

    /// The control URL a node without a registry answers with (`POST /v1/placements`, `GET /v1/nodes`):
    /// `cluster.control_url`, else the address the request came to (`host`, its Host: one the asker reaches by
    /// construction - on a node listening on every address, or on IPv4 and IPv6, the one it used), else the
    /// first of `api.listen` that is one address, else loopback on its port.
    public func answeredControlURL(host: String?) -> String {
        if !clusterControlURL.isEmpty { return clusterControlURL }
        if let host, Self.isHostField(host) { return "http://\(host)" }
        return localControlURL
    }

    /// The control API as a client on this host reaches it (`sfu demo`'s signaling server): the first of
    /// `api.listen` that is one address, else loopback on its port.
    public var localControlURL: String {
        if let concrete = ([apiListen] + apiListenAlso).first(where: { !$0.isWildcard }) { return "http://\(concrete)" }
        return apiListen.isIPv6 ? "http://[::1]:\(apiListen.port)" : "http://127.0.0.1:\(apiListen.port)"
    }

    /// A Host a URL can be made of: a name or address and an optional port, 1-255 characters of letters, digits
    /// and `. - : [ ]` (nothing that would end the authority or start a path).
    static func isHostField(_ host: String) -> Bool {
        let u = host.utf8
        return (1...255).contains(u.count) && u.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x2D || c == 0x3A
                || c == 0x5B || c == 0x5D
        }
    }
}

extension TransportAddress {
    /// 0.0.0.0 or [::]: every address of the host.
    var isWildcard: Bool { ip == .v4(0) || ip == .v6(0, 0) }
}
