import WebRTCEdge

/// What part of the network an IP address belongs to, for deciding whether the node may connect there when a
/// caller chose the target (`OutboundRule`). Anything but `.global` is this host, its networks or no place at
/// all: the special-purpose registries (RFC 6890, and the IANA IPv4 and IPv6 special-purpose address registries
/// it set up), RFC 1918 private networks, RFC 6598 shared address space, RFC 3927 and RFC 4291 link-local, RFC
/// 4193 unique-local. An address that embeds an IPv4 address (IPv4-mapped, NAT64 well-known prefix RFC 6052,
/// 6to4 RFC 3056) is judged by the embedded one: `::ffff:127.0.0.1` is loopback.
public enum AddressScope: String, Sendable, Equatable {
    case global
    case loopback
    case privateNetwork = "private"
    case linkLocal = "link-local"
    case uniqueLocal = "unique-local"
    /// "This network", documentation, benchmarking, multicast, reserved and broadcast ranges.
    case reserved

    public init(_ ip: TransportAddress.IP) {
        switch ip {
        case .v4(let a): self = Self.v4(a)
        case .v6(let hi, let lo): self = Self.v6(hi, lo)
        }
    }

    private static func v4(_ a: UInt32) -> AddressScope {
        func within(_ base: UInt32, _ bits: UInt32) -> Bool { bits == 0 || a >> (32 - bits) == base >> (32 - bits) }
        if within(0x7F00_0000, 8) { return .loopback }  // 127/8
        if within(0x0A00_0000, 8) || within(0xAC10_0000, 12) || within(0xC0A8_0000, 16) { return .privateNetwork }  // RFC 1918
        if within(0x6440_0000, 10) { return .privateNetwork }  // 100.64/10, RFC 6598 (carrier-grade NAT)
        if within(0xA9FE_0000, 16) { return .linkLocal }  // 169.254/16 (cloud metadata services live here)
        let reserved: [(UInt32, UInt32)] = [
            (0x0000_0000, 8),  // 0/8 "this network"
            (0xC000_0000, 24),  // 192.0.0/24 IETF protocol assignments
            (0xC000_0200, 24), (0xC633_6400, 24), (0xCB00_7100, 24),  // documentation (RFC 5737)
            (0xC612_0000, 15),  // 198.18/15 benchmarking (RFC 2544)
            (0xE000_0000, 4),  // multicast
            (0xF000_0000, 4),  // 240/4 reserved, 255.255.255.255 broadcast
        ]
        return reserved.contains { within($0.0, $0.1) } ? .reserved : .global
    }

    private static func v6(_ hi: UInt64, _ lo: UInt64) -> AddressScope {
        if hi == 0 && lo == 1 { return .loopback }  // ::1
        if hi == 0 && lo == 0 { return .reserved }  // ::
        if hi == 0 && lo >> 32 == 0xFFFF { return v4(UInt32(truncatingIfNeeded: lo)) }  // ::ffff:a.b.c.d
        if hi == 0 && lo >> 32 == 0 { return .reserved }  // ::a.b.c.d (IPv4-compatible, deprecated)
        if hi == 0x0064_FF9B_0000_0000 && lo >> 32 == 0 { return v4(UInt32(truncatingIfNeeded: lo)) }  // 64:ff9b::/96
        if hi >> 48 == 0x2002 { return v4(UInt32(truncatingIfNeeded: hi >> 16)) }  // 6to4 2002::/16
        let top16 = hi >> 48
        if top16 & 0xFFC0 == 0xFE80 { return .linkLocal }  // fe80::/10
        if top16 & 0xFFC0 == 0xFEC0 { return .uniqueLocal }  // fec0::/10 (site-local, deprecated)
        if top16 & 0xFE00 == 0xFC00 { return .uniqueLocal }  // fc00::/7
        if top16 & 0xFF00 == 0xFF00 { return .reserved }  // multicast
        if hi >> 32 == 0x2001_0DB8 { return .reserved }  // 2001:db8::/32 documentation
        if hi == 0x0100_0000_0000_0000 { return .reserved }  // 100::/64 discard
        if hi >> 32 == 0x2001_0000 { return .reserved }  // 2001::/32 Teredo: the IPv4 end is not checkable here
        if top16 & 0xE000 != 0x2000 { return .reserved }  // outside 2000::/3, nothing is globally routed
        return .global
    }
}
