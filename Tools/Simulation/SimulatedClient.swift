import SFUMedia
@_spi(Measurement) import SFU

/// The client end of one connection: the SRTP contexts a real client would hold after DTLS, with random keys
/// mirrored into the node's connection (what the node's inbound session decrypts, this client protected).
public final class SimulatedClient {
    public let connection: ConnectionID
    public let nodeInbound: SRTPKeyingMaterial
    public let nodeOutbound: SRTPKeyingMaterial
    private let toNode: SRTPSession
    private let fromNode: SRTPSession
    private var scratch = [UInt8](repeating: 0, count: 2048)

    /// `nullCipher` (measurement only) makes both ends use libsrtp's null cipher and authentication.
    public init(connection: ConnectionID, profile: SRTPProfile = .aeadAES128GCM, seed: UInt64, nullCipher: Bool = false) {
        var rng = SplitMix64(seed: seed)
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        self.connection = connection
        var outbound = SRTPKeyingMaterial(profile: profile, masterKey: bytes(profile.masterKeyLength), masterSalt: bytes(profile.masterSaltLength))
        var inbound = SRTPKeyingMaterial(profile: profile, masterKey: bytes(profile.masterKeyLength), masterSalt: bytes(profile.masterSaltLength))
        inbound.nullCipher = nullCipher
        outbound.nullCipher = nullCipher
        nodeInbound = inbound
        nodeOutbound = outbound
        toNode = try! SRTPSession(keys: nodeInbound, direction: .outbound)
        fromNode = try! SRTPSession(keys: nodeOutbound, direction: .inbound)
    }

    /// Encrypts a plain RTP or RTCP packet as this client would send it.
    public func protect(_ plain: [UInt8]) -> [UInt8] {
        guard let p = tryProtect(plain) else { fatalError("client could not protect a \(plain.count)-byte packet") }
        return p
    }

    /// Encrypts, or nil when libsrtp refuses the packet (too short or too long to be RTP/RTCP).
    public func tryProtect(_ plain: [UInt8]) -> [UInt8]? {
        guard plain.count + SRTPSession.maxOverhead <= scratch.count else { return nil }
        let isControl = plain.withUnsafeBytes { isRTCP($0) }
        return scratch.withUnsafeMutableBytes { buf -> [UInt8]? in
            buf.copyBytes(from: plain)
            let r = isControl ? toNode.protectRTCP(buf, length: plain.count) : toNode.protectRTP(buf, length: plain.count)
            guard case .success(let n) = r else { return nil }
            return Array(buf[0..<n])
        }
    }

    /// Decrypts what the node sent; nil when authentication fails.
    public func unprotect(_ datagram: [UInt8]) -> [UInt8]? {
        let isControl = datagram.withUnsafeBytes { isRTCP($0) }
        return scratch.withUnsafeMutableBytes { buf -> [UInt8]? in
            buf.copyBytes(from: datagram)
            let r = isControl ? fromNode.unprotectRTCP(buf, length: datagram.count)
                : fromNode.unprotectRTP(buf, length: datagram.count)
            guard case .success(let n) = r else { return nil }
            return Array(buf[0..<n])
        }
    }
}

/// Makes a publisher's RTP packets: sequence numbers, timestamps and the audio level extension.
public struct RTPStreamWriter {
    public var ssrc: UInt32
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var audioLevelExtensionID: UInt8?

    public init(ssrc: UInt32, payloadType: UInt8, sequenceNumber: UInt16 = 1000, timestamp: UInt32 = 50_000,
                audioLevelExtensionID: UInt8? = nil) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.audioLevelExtensionID = audioLevelExtensionID
    }

    /// One packet; advances the sequence number (not the timestamp: callers advance it per frame). With
    /// `transportSequence` it carries the transport-wide sequence number under extension id 5.
    public mutating func packet(_ payload: [UInt8], marker: Bool = false, level: UInt8? = nil,
                                transportSequence: UInt16? = nil) -> [UInt8] {
        var exts: [(id: UInt8, value: [UInt8])] = []
        if let id = audioLevelExtensionID, let level { exts.append((id, [AudioLevelExtension(voiceActivity: level < 127, level: level).byte])) }
        if let t = transportSequence { exts.append((5, [UInt8(t >> 8), UInt8(t & 0xFF)])) }
        var out = [UInt8](repeating: 0, count: payload.count + 64)
        let n = payload.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { o in
                RTPPacketBuilder(payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp,
                                 ssrc: ssrc, marker: marker).write(extensions: exts, payload: p, into: o)
            }
        }
        sequenceNumber &+= 1
        return Array(out[0..<n!])
    }
}
