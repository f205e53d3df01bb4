/// STUN (RFC 8489) messages as ICE uses them: parsed in place, checked (MESSAGE-INTEGRITY with a short-term
/// key, FINGERPRINT), and built into byte arrays (STUN is control traffic: a few packets per client per
/// second, so building allocates).
public struct STUNMessage: Sendable {
    public static let magicCookie: UInt32 = 0x2112_A442
    public static let headerSize = 20

    public enum Class: UInt16, Sendable { case request = 0, indication = 1, success = 2, error = 3 }

    public enum Attribute {
        public static let mappedAddress: UInt16 = 0x0001
        public static let username: UInt16 = 0x0006
        public static let messageIntegrity: UInt16 = 0x0008
        public static let errorCode: UInt16 = 0x0009
        public static let xorMappedAddress: UInt16 = 0x0020
        public static let priority: UInt16 = 0x0024  // RFC 8445 section 16.1
        public static let useCandidate: UInt16 = 0x0025
        public static let software: UInt16 = 0x8022
        public static let fingerprint: UInt16 = 0x8028
        public static let iceControlled: UInt16 = 0x8029
        public static let iceControlling: UInt16 = 0x802A
    }

    public static let bindingMethod: UInt16 = 0x001

    public var method: UInt16
    public var messageClass: Class
    /// The 96-bit transaction ID, as bytes 8..<20 of the message.
    public var transactionID: [UInt8]
    public var length: Int
    public var username: Range<Int>?
    /// Offset of the MESSAGE-INTEGRITY attribute header and the range of its 20-byte value.
    public var integrity: (offset: Int, value: Range<Int>)?
    public var fingerprint: (offset: Int, value: UInt32)?
    public var priority: UInt32?
    public var useCandidate = false
    public var iceControlled: UInt64?
    public var iceControlling: UInt64?
    public var xorMappedAddress: Range<Int>?
    public var errorCode: Int?

    /// Message type bits: method M0-M11 interleaved with class bits C0 (bit 4) and C1 (bit 8), section 5.
    public static func type(method: UInt16, class c: Class) -> UInt16 {
        let m = method & 0x0FFF
        return (m & 0x000F) | ((m & 0x0070) << 1) | ((m & 0x0F80) << 2)
            | ((c.rawValue & 1) << 4) | ((c.rawValue & 2) << 7)
    }

    /// Parses and locates the attributes ICE needs. Attributes after MESSAGE-INTEGRITY other than
    /// FINGERPRINT are ignored (section 14.5); FINGERPRINT must be last (section 14.7).
    public static func parse(_ p: UnsafeRawBufferPointer) -> Result<STUNMessage, EdgeDropReason> {
        guard p.count >= headerSize else { return .failure(.stunMalformed) }
        let type = UInt16(p[0]) << 8 | UInt16(p[1])
        guard type & 0xC000 == 0 else { return .failure(.stunMalformed) }
        let length = Int(UInt16(p[2]) << 8 | UInt16(p[3]))
        guard length % 4 == 0, headerSize + length == p.count else { return .failure(.stunMalformed) }
        guard read32(p, 4) == magicCookie else { return .failure(.stunMalformed) }
        let method = (type & 0x000F) | ((type & 0x00E0) >> 1) | ((type & 0x3E00) >> 2)
        let cls = Class(rawValue: ((type >> 4) & 1) | ((type >> 7) & 2))!
        var m = STUNMessage(method: method, messageClass: cls, transactionID: Array(p[8..<20]), length: length)
        var o = headerSize
        while o < p.count {
            guard o + 4 <= p.count else { return .failure(.stunMalformed) }
            let attr = UInt16(p[o]) << 8 | UInt16(p[o + 1])
            let len = Int(UInt16(p[o + 2]) << 8 | UInt16(p[o + 3]))
            let value = (o + 4)..<(o + 4 + len)
            guard value.upperBound <= p.count else { return .failure(.stunMalformed) }
            if m.fingerprint != nil { return .failure(.stunMalformed) }  // nothing may follow FINGERPRINT
            if attr == Attribute.fingerprint {
                guard len == 4 else { return .failure(.stunMalformed) }
                m.fingerprint = (o, read32(p, o + 4))
            } else if m.integrity == nil {
                switch attr {
                case Attribute.username: m.username = value
                case Attribute.messageIntegrity:
                    guard len == HMACSHA1.length else { return .failure(.stunMalformed) }
                    m.integrity = (o, value)
                case Attribute.priority:
                    guard len == 4 else { return .failure(.stunMalformed) }
                    m.priority = read32(p, o + 4)
                case Attribute.useCandidate: m.useCandidate = true
                case Attribute.iceControlled:
                    guard len == 8 else { return .failure(.stunMalformed) }
                    m.iceControlled = UInt64(read32(p, o + 4)) << 32 | UInt64(read32(p, o + 8))
                case Attribute.iceControlling:
                    guard len == 8 else { return .failure(.stunMalformed) }
                    m.iceControlling = UInt64(read32(p, o + 4)) << 32 | UInt64(read32(p, o + 8))
                case Attribute.xorMappedAddress: m.xorMappedAddress = value
                case Attribute.errorCode:
                    guard len >= 4 else { return .failure(.stunMalformed) }
                    m.errorCode = Int(p[o + 6] & 0x7) * 100 + Int(p[o + 7])
                default: break  // comprehension-optional or unknown: ignored (requests with unknown
                                // comprehension-required attributes are rare in ICE; we answer them anyway)
                }
            }
            o = value.upperBound + (4 - len % 4) % 4
        }
        guard o == p.count else { return .failure(.stunMalformed) }
        return .success(m)
    }

    static func read32(_ p: UnsafeRawBufferPointer, _ o: Int) -> UInt32 {
        UInt32(p[o]) << 24 | UInt32(p[o + 1]) << 16 | UInt32(p[o + 2]) << 8 | UInt32(p[o + 3])
    }

    public func usernameString(in p: UnsafeRawBufferPointer) -> String? {
        username.map { String(decoding: p[$0], as: UTF8.self) }
    }

    /// Checks MESSAGE-INTEGRITY: HMAC-SHA1 with `key` over the message up to the attribute, with the header
    /// length counting up to the end of MESSAGE-INTEGRITY (section 14.5).
    public func verifyIntegrity(_ p: UnsafeRawBufferPointer, key: [UInt8]) -> Bool {
        guard let (offset, value) = integrity else { return false }
        var prefix = Array(p[0..<offset])
        let adjusted = offset + 4 + HMACSHA1.length - Self.headerSize
        prefix[2] = UInt8(adjusted >> 8)
        prefix[3] = UInt8(adjusted & 0xFF)
        let mac = prefix.withUnsafeBytes { HMACSHA1.mac(key: key, data: $0) }
        return HMACSHA1.equal(mac, UnsafeRawBufferPointer(rebasing: p[value]))
    }

    /// Checks FINGERPRINT: CRC-32 of the message before it, XOR 0x5354554e (section 14.7).
    public func verifyFingerprint(_ p: UnsafeRawBufferPointer) -> Bool {
        guard let (offset, value) = fingerprint else { return false }
        return CRC32.checksum(UnsafeRawBufferPointer(rebasing: p[0..<offset])) ^ 0x5354_554E == value
    }

    /// The address an XOR-MAPPED-ADDRESS attribute carries (section 14.2).
    public func mappedAddress(in p: UnsafeRawBufferPointer) -> TransportAddress? {
        guard let r = xorMappedAddress, r.count >= 8 else { return nil }
        let o = r.lowerBound
        let port = (UInt16(p[o + 2]) << 8 | UInt16(p[o + 3])) ^ UInt16(Self.magicCookie >> 16)
        switch p[o + 1] {
        case 1:
            return TransportAddress(ip: .v4(Self.read32(p, o + 4) ^ Self.magicCookie), port: port)
        case 2 where r.count >= 20:
            let key = [UInt8](arrayLiteral: 0x21, 0x12, 0xA4, 0x42) + transactionID
            var a = [UInt8](repeating: 0, count: 16)
            for i in 0..<16 { a[i] = p[o + 4 + i] ^ key[i] }
            let hi = a[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let lo = a[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return TransportAddress(ip: .v6(hi, lo), port: port)
        default:
            return nil
        }
    }
}

/// Builds a STUN message attribute by attribute; integrity and fingerprint are computed over what was added.
public struct STUNMessageBuilder {
    public private(set) var bytes: [UInt8]

    public init(method: UInt16 = STUNMessage.bindingMethod, class c: STUNMessage.Class, transactionID: [UInt8]) {
        precondition(transactionID.count == 12)
        let t = STUNMessage.type(method: method, class: c)
        bytes = [UInt8(t >> 8), UInt8(t & 0xFF), 0, 0, 0x21, 0x12, 0xA4, 0x42] + transactionID
    }

    private mutating func setLength(_ n: Int) {
        bytes[2] = UInt8(n >> 8)
        bytes[3] = UInt8(n & 0xFF)
    }

    /// Adds an attribute padded to 32 bits; RFC 8489 lets the padding be any value (RFC 5769 uses spaces).
    public mutating func add(_ type: UInt16, _ value: [UInt8], padding: UInt8 = 0) {
        bytes += [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value
        bytes += [UInt8](repeating: padding, count: (4 - value.count % 4) % 4)
        setLength(bytes.count - STUNMessage.headerSize)
    }

    public mutating func add(_ type: UInt16, u32 v: UInt32) {
        add(type, [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)])
    }

    public mutating func add(_ type: UInt16, u64 v: UInt64) {
        add(type, (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * UInt64($0))) })
    }

    public mutating func addXORMappedAddress(_ a: TransportAddress) {
        let xport = a.port ^ UInt16(STUNMessage.magicCookie >> 16)
        switch a.ip {
        case .v4(let ip):
            let x = ip ^ STUNMessage.magicCookie
            add(STUNMessage.Attribute.xorMappedAddress,
                [0, 1, UInt8(xport >> 8), UInt8(xport & 0xFF), UInt8(x >> 24), UInt8((x >> 16) & 0xFF), UInt8((x >> 8) & 0xFF), UInt8(x & 0xFF)])
        case .v6(let hi, let lo):
            let key = Array(bytes[4..<20])
            let raw = (0..<8).map { UInt8(truncatingIfNeeded: hi >> (56 - 8 * UInt64($0))) }
                + (0..<8).map { UInt8(truncatingIfNeeded: lo >> (56 - 8 * UInt64($0))) }
            add(STUNMessage.Attribute.xorMappedAddress, [0, 2, UInt8(xport >> 8), UInt8(xport & 0xFF)] + zip(raw, key).map { $0 ^ $1 })
        }
    }

    public mutating func addErrorCode(_ code: Int, reason: String) {
        add(STUNMessage.Attribute.errorCode, [0, 0, UInt8(code / 100), UInt8(code % 100)] + Array(reason.utf8))
    }

    /// MESSAGE-INTEGRITY over everything added so far (section 14.5).
    public mutating func addMessageIntegrity(key: [UInt8]) {
        setLength(bytes.count + 4 + HMACSHA1.length - STUNMessage.headerSize)
        let mac = bytes.withUnsafeBytes { HMACSHA1.mac(key: key, data: $0) }
        add(STUNMessage.Attribute.messageIntegrity, mac)
    }

    /// FINGERPRINT, last (section 14.7).
    public mutating func addFingerprint() {
        setLength(bytes.count + 8 - STUNMessage.headerSize)
        let crc = bytes.withUnsafeBytes { CRC32.checksum($0) } ^ 0x5354_554E
        add(STUNMessage.Attribute.fingerprint, u32: crc)
    }
}

/// Why the edge discarded a datagram.
public enum EdgeDropReason: Int, CaseIterable, Sendable, Error, CustomStringConvertible {
    case stunMalformed
    case stunBadFingerprint
    case stunUnknownUsername
    case stunUnauthenticated
    case stunUnexpected
    case unvalidatedAddress
    case unknownPacketClass
    /// A valid check whose transaction ID came before from another address: replayed.
    case stunReplay

    public var description: String {
        switch self {
        case .stunMalformed: "stun_malformed"
        case .stunBadFingerprint: "stun_bad_fingerprint"
        case .stunUnknownUsername: "stun_unknown_username"
        case .stunUnauthenticated: "stun_unauthenticated"
        case .stunUnexpected: "stun_unexpected"
        case .unvalidatedAddress: "unvalidated_address"
        case .unknownPacketClass: "unknown_packet_class"
        case .stunReplay: "stun_replay"
        }
    }
}
