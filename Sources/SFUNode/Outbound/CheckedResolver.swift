import Foundation
import WebRTCEdge

/// Resolves a host a caller named and checks every address it resolves to against an `OutboundRule`: a name
/// with one public and one private address is refused, since the connecting program may pick either. IP
/// literals go through the resolver too, so every spelling the C library accepts (`127.1`, `2130706433`,
/// `0x7f.0.0.1`) is judged by the address it means.
public enum CheckedResolver {
    /// The addresses of `host` (TCP), each allowed for `port` by `rule`. Throws the rule's refusal, or a
    /// `Refusal` when the name does not resolve. The lookup blocks (getaddrinfo), on a thread of the system's
    /// pool rather than a task's.
    public static func resolve(_ host: String, port: UInt16, rule: OutboundRule) async throws(OutboundRule.Refusal) -> [TransportAddress] {
        try rule.check(host: host, port: port)
        let bare = OutboundRule.bare(host)
        let found: Result<[TransportAddress], OutboundRule.Refusal> = await withCheckedContinuation { c in
            DispatchQueue.global().async { c.resume(returning: lookup(bare, port: port)) }
        }
        let addresses = try found.get()
        for a in addresses { try rule.check(host: host, address: a) }
        return addresses
    }

    static func lookup(_ host: String, port: UInt16) -> Result<[TransportAddress], OutboundRule.Refusal> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let r = getaddrinfo(host, nil, &hints, &list)
        guard r == 0 else { return .failure(.init(description: "\(host) does not resolve (\(String(cString: gai_strerror(r))))")) }
        defer { freeaddrinfo(list) }
        var out: [TransportAddress] = []
        var next = list
        while let a = next {
            if let ip = address(a.pointee.ai_addr), !out.contains(where: { $0.ip == ip }) { out.append(TransportAddress(ip: ip, port: port, tcp: true)) }
            next = a.pointee.ai_next
        }
        return out.isEmpty ? .failure(.init(description: "\(host) has no address")) : .success(out)
    }

    private static func address(_ sa: UnsafeMutablePointer<sockaddr>?) -> TransportAddress.IP? {
        guard let sa else { return nil }
        switch Int32(sa.pointee.sa_family) {
        case AF_INET:
            return sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { .v4(UInt32(bigEndian: $0.pointee.sin_addr.s_addr)) }
        case AF_INET6:
            return sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
                withUnsafeBytes(of: p.pointee.sin6_addr) { b in
                    .v6(b.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }, b.suffix(8).reduce(0) { $0 << 8 | UInt64($1) })
                }
            }
        default:
            return nil
        }
    }
}
