import SFU
import WebRTCEdge

/// One client's TCP connection to a worker's ICE-TCP port: its descriptor, its address (what the edge routes it
/// by: the remote end with `isTCP` set and this connection's number, `token`), and its framing both ways. Owned
/// by the worker's `TCPPort`.
final class TCPConnection {
    let fd: Int32
    let token: UInt64
    let remote: TransportAddress
    let accepted: MonoTime
    var reader = FrameReader()
    var writer: FrameWriter
    /// An ICE check from it passed: it carries a transport (`transport`).
    var authenticated = false
    var transport: ConnectionID?
    /// Whether epoll watches it for writability (only while frames wait).
    var watchingWrites = false
    /// In the port's list of connections with frames to write this pass.
    var dirty = false
    /// Since when frames have been refused without the buffer draining (a slow reader).
    var refusingSince: MonoTime?

    init(fd: Int32, token: UInt64, remote: TransportAddress, accepted: MonoTime, sendBufferBytes: Int) {
        self.fd = fd
        self.token = token
        self.remote = remote
        self.accepted = accepted
        writer = FrameWriter(capacity: sendBufferBytes)
    }
}
