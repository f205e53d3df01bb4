/// How a client's transport reaches the node, as the node sees the ICE pair the client nominated: UDP or
/// TCP (RFC 6544), IPv4 or IPv6, and whether the client's end is a TURN relay (its offer listed the address
/// as a `typ relay` candidate; a trickled or candidate-less offer leaves it unknown, reported as false).
/// Reported in `participant_state` (connected), room stats and `/metrics`.
public struct TransportPath: Sendable, Hashable, CustomStringConvertible {
    public enum Carrier: String, Sendable, CaseIterable { case udp, tcp }
    public enum Family: String, Sendable, CaseIterable { case ipv4, ipv6 }

    public var carrier: Carrier
    public var family: Family
    public var relayed: Bool

    public init(carrier: Carrier, family: Family, relayed: Bool = false) {
        self.carrier = carrier
        self.family = family
        self.relayed = relayed
    }

    public var description: String { "\(carrier.rawValue)/\(family.rawValue)\(relayed ? "/relayed" : "")" }
}
