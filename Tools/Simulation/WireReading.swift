import SFU
import SFUMedia

/// Reading what a test received: an RTP header, or the packets of an RTCP compound.
public func parseRTP(_ b: [UInt8]) -> Result<RTPHeader, DropReason> { b.withUnsafeBytes { RTPHeader.parse($0) } }

public func rtcpPackets(_ b: [UInt8]) -> ([RTCPPacket], DropReason?) {
    var pkts: [RTCPPacket] = []
    let r = b.withUnsafeBytes { RTCPCompound.forEach($0) { pkts.append($0) } }
    return (pkts, r)
}

extension Result {
    public var failureValue: Failure? { if case .failure(let f) = self { return f } else { return nil } }
    public var successValue: Success? { if case .success(let s) = self { return s } else { return nil } }
}
