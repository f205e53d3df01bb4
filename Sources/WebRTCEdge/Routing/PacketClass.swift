/// What a datagram on a shared port is, by its first byte (RFC 7983 section 7): STUN 0-3, DTLS 20-63,
/// RTP/RTCP 128-191. Anything else (ZRTP, TURN channels, garbage) is not ours.
public enum PacketClass: Sendable, Equatable {
    case stun, dtls, rtp, unknown

    public init(firstByte b: UInt8) {
        switch b {
        case 0...3: self = .stun
        case 20...63: self = .dtls
        case 128...191: self = .rtp
        default: self = .unknown
        }
    }

    public init(_ datagram: UnsafeRawBufferPointer) {
        self = datagram.isEmpty ? .unknown : PacketClass(firstByte: datagram[0])
    }
}
