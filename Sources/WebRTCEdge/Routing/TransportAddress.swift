/// An IP address and port, UDP or TCP, as a value: the edge never touches `sockaddr` (the node converts at the
/// socket). Hashable, so it keys the 5-tuple table (the local half is the worker's socket of that protocol).
/// A client's TCP connection is named by its remote address with `isTCP` set and the number its port gave the
/// connection (RFC 6544: each connection is a candidate pair of its own): the edge routes its framed STUN, DTLS
/// and SRTP exactly as it routes datagrams, and the shell finds the connection to write to. A later connection
/// from the same IP and port is another address, so what the first proved with its checks never passes to it.
public struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    public enum IP: Hashable, Sendable {
        case v4(UInt32)
        case v6(UInt64, UInt64)
    }

    public var ip: IP
    public var port: UInt16
    /// A TCP connection's remote end (or a TCP listening address) rather than a UDP one.
    public var isTCP: Bool
    /// Which of its port's connections a TCP remote end is (numbered from 1, never reused by the port); 0 for
    /// UDP, listening addresses and addresses read from text.
    public var connection: UInt64

    public init(ip: IP, port: UInt16, tcp: Bool = false, connection: UInt64 = 0) {
        self.ip = ip
        self.port = port
        isTCP = tcp
        self.connection = connection
    }

    /// The same address and port over the other protocol (no connection's number).
    public func over(tcp: Bool) -> TransportAddress { TransportAddress(ip: ip, port: port, tcp: tcp) }

    /// This TCP remote end as the port's connection number `n`.
    public func on(connection n: UInt64) -> TransportAddress { TransportAddress(ip: ip, port: port, tcp: isTCP, connection: n) }

    /// "udp" or "tcp", as SDP candidates and the API write it.
    public var protocolName: String { isTCP ? "tcp" : "udp" }

    /// "ipv4" or "ipv6".
    public var family: String { isIPv6 ? "ipv6" : "ipv4" }

    public var isIPv6: Bool { if case .v6 = ip { true } else { false } }

    /// Parses "a.b.c.d:port" or "[v6]:port" (full or "::"-compressed hex groups).
    public init?(_ text: String) {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            guard let ip = Self.parseV6(String(text[text.index(after: text.startIndex)..<close])),
                  text[text.index(after: close)...].first == ":",
                  let port = UInt16(text[text.index(close, offsetBy: 2)...]) else { return nil }
            self.init(ip: ip, port: port)
        } else {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let ip = Self.parseV4(String(parts[0])), let port = UInt16(parts[1]) else { return nil }
            self.init(ip: .v4(ip), port: port)
        }
    }

    static func parseV4(_ s: String) -> UInt32? {
        let octets = s.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return nil }
        var v: UInt32 = 0
        for o in octets {
            guard let b = UInt8(o), String(b) == o else { return nil }
            v = v << 8 | UInt32(b)
        }
        return v
    }

    static func parseV6(_ s: String) -> IP? {
        let halves = s.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ t: String) -> [UInt16]? {
            t.isEmpty ? [] : t.split(separator: ":", omittingEmptySubsequences: false).map { UInt16($0, radix: 16) }
                .reduce([UInt16]?([])) { acc, g in g.flatMap { g in acc.map { $0 + [g] } } }
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count < 8 else { return nil }
            all += [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard all.count == 8 else { return nil }
        let hi = all[0..<4].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        let lo = all[4..<8].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        return .v6(hi, lo)
    }

    public var description: String {
        switch ip {
        case .v4(let v): "\(v >> 24).\((v >> 16) & 0xFF).\((v >> 8) & 0xFF).\(v & 0xFF):\(port)"
        case .v6(let hi, let lo): "[\(Self.v6Text(hi, lo))]:\(port)"
        }
    }

    /// RFC 5952 text: lower-case hex groups without leading zeros, the longest run of two or more zero groups
    /// (the first of equal runs) written "::".
    static func v6Text(_ hi: UInt64, _ lo: UInt64) -> String {
        let groups = (0..<8).map { i in UInt16(truncatingIfNeeded: (i < 4 ? hi : lo) >> (48 - 16 * UInt64(i % 4))) }
        var best = (start: -1, length: 0), run = (start: -1, length: 0)
        for (i, g) in groups.enumerated() {
            if g == 0 {
                run = run.start < 0 ? (i, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        let text = groups.map { String($0, radix: 16) }
        guard best.length >= 2 else { return text.joined(separator: ":") }
        let head = text[..<best.start].joined(separator: ":"), tail = text[(best.start + best.length)...].joined(separator: ":")
        return head + "::" + tail
    }

    /// The address without the port, as SDP candidates write it.
    public var host: String {
        let d = description
        return String(d[..<d.lastIndex(of: ":")!]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
    }
}

import Foundation
