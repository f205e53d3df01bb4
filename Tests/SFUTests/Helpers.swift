import SFU

func parseRTP(_ b: [UInt8]) -> Result<RTPHeader, DropReason> { b.withUnsafeBytes { RTPHeader.parse($0) } }

func rtcpPackets(_ b: [UInt8]) -> ([RTCPPacket], DropReason?) {
    var pkts: [RTCPPacket] = []
    let r = b.withUnsafeBytes { RTCPCompound.forEach($0) { pkts.append($0) } }
    return (pkts, r)
}

extension Result {
    var failureValue: Failure? { if case .failure(let f) = self { return f } else { return nil } }
    var successValue: Success? { if case .success(let s) = self { return s } else { return nil } }
}
