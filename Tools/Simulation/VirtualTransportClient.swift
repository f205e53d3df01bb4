import SFU
import SFUMedia
import WebRTCEdge

/// The client end of one transport on a virtual network, as scenario tests and fuzz targets drive it: the
/// controlling side of ICE checks, a DTLS client, SRTP both ways. Datagrams go through the caller, never a
/// socket. Subclasses keep what they want of the media the node sends (`received(rtp:)`, `received(rtcp:)`).
open class VirtualTransportClient {
    public var address: TransportAddress
    public var ice: ICECredentials
    public var checks: ICEControllingClient?
    public var dtls: DTLSEndpoint?
    public var tx: SRTPSession?
    public var rx: SRTPSession?
    /// The last check sent and its transaction, to replay it or to read its answer.
    public var lastCheck: [UInt8]?
    public var lastTransaction: [UInt8]?
    public var checkAnswered = false
    public var datagramsReceived = 0
    public var rtpReceived = 0
    public var rtcpReceived = 0
    /// SRTP the client could not decrypt (none should reach it).
    public var undecryptable = 0
    private var scratch = [UInt8](repeating: 0, count: 2048)

    public init(address: TransportAddress, ice: ICECredentials) {
        self.address = address
        self.ice = ice
    }

    /// DTLS finished and SRTP is keyed.
    public var connected: Bool { tx != nil && dtls?.state == .connected }

    /// A Binding request with the node's credentials from its answer; nil before an answer.
    public func bindingRequest(nominate: Bool, transactionID: [UInt8]? = nil) -> [UInt8]? {
        guard let checks else { return nil }
        let tid = transactionID ?? ICEControllingClient.randomTransactionID()
        lastTransaction = tid
        checkAnswered = false
        let c = checks.bindingRequest(nominate: nominate, transactionID: tid)
        lastCheck = c
        return c
    }

    /// What the node sent: STUN answers (read), DTLS (fed to the client's endpoint; its replies returned),
    /// SRTP and SRTCP (decrypted and handed to the subclass).
    public func receive(_ d: [UInt8], now: MonoTime) -> [[UInt8]] {
        datagramsReceived += 1
        guard let first = d.first else { return [] }
        switch PacketClass(firstByte: first) {
        case .stun:
            if let tid = lastTransaction, case .success = checks?.check(response: d, transactionID: tid) { checkAnswered = true }
            return []
        case .dtls:
            guard let dtls else { return [] }
            let replies = d.withUnsafeBytes { dtls.receive($0, now: now) }
            if tx == nil, dtls.state == .connected, let k = dtls.keys {
                tx = try? SRTPSession(keys: k.outbound, direction: .outbound)
                rx = try? SRTPSession(keys: k.inbound, direction: .inbound)
            }
            return replies
        case .rtp:
            guard let rx, d.count <= scratch.count else { undecryptable += 1; return [] }
            let control = d.withUnsafeBytes { isRTCP($0) }
            scratch.withUnsafeMutableBytes { buf in
                buf.copyBytes(from: d)
                let r = control ? rx.unprotectRTCP(buf, length: d.count) : rx.unprotectRTP(buf, length: d.count)
                guard case .success(let n) = r else { undecryptable += 1; return }
                let plain = UnsafeRawBufferPointer(rebasing: buf[0..<n])
                if control {
                    rtcpReceived += 1
                    received(rtcp: plain)
                } else {
                    rtpReceived += 1
                    received(rtp: plain)
                }
            }
            return []
        default:
            return []
        }
    }

    open func received(rtp plain: UnsafeRawBufferPointer) {}
    open func received(rtcp plain: UnsafeRawBufferPointer) {}

    /// Protects a plain RTP or RTCP packet; nil before DTLS is done or when libsrtp refuses it.
    public func protect(_ plain: [UInt8]) -> [UInt8]? {
        guard let tx, plain.count + SRTPSession.maxOverhead <= scratch.count else { return nil }
        let control = plain.withUnsafeBytes { isRTCP($0) }
        return scratch.withUnsafeMutableBytes { buf -> [UInt8]? in
            buf.copyBytes(from: plain)
            let r = control ? tx.protectRTCP(buf, length: plain.count) : tx.protectRTP(buf, length: plain.count)
            guard case .success(let n) = r else { return nil }
            return Array(buf[0..<n])
        }
    }
}
