import SFU

/// The transport-wide sequence number of a received RTP packet, read from its header, which SRTP leaves in
/// clear (RFC 3711 section 3.1), with the engine's own header and RFC 8285 extension parsers: a transport-cc
/// subscriber records it for every packet without decrypting (the generator decrypts only a sample of video).
public enum TransportWideSequence {
    public static func read(_ p: UnsafeRawBufferPointer, id: UInt8) -> UInt16? {
        guard case .success(let header) = RTPHeader.parse(p, checkPadding: false),
              let value = header.extensions(in: p).find(id), value.count == 2 else { return nil }
        return UInt16(p[value.lowerBound]) << 8 | UInt16(p[value.lowerBound + 1])
    }
}
