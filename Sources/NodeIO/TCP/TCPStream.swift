import CNodeIO
import Glibc
import SFU
import WebRTCEdge

/// The client's end of an ICE-TCP connection (RFC 6544 active candidate, RFC 4571 framing), for the load
/// generator, the hostile suite and tests: the same calls as a `UDPSocket` (`send`, `receive(into:)`), one
/// frame per packet. Not used by the node.
public final class TCPStream {
    public let local: TransportAddress
    public let remote: TransportAddress
    private var fd: Int32
    private var reader = FrameReader()
    private var writer = FrameWriter(capacity: 4 << 20)
    /// The node closed the connection (or it failed).
    public private(set) var isClosed = false
    public private(set) var framesSent = 0
    public private(set) var framesReceived = 0

    /// Connects to `remote` (a TCP candidate's address), from `from` when given (a client reconnecting from the
    /// port of a connection it reset).
    public init(connect remote: TransportAddress, from: TransportAddress? = nil) throws(UDPSocket.Failure) {
        var r = UDPSocket.cAddress(remote)
        var l = sfu_address()
        let fd: Int32
        if let from {
            var f = UDPSocket.cAddress(from)
            fd = sfu_tcp_connect(&r, &f, &l)
        } else {
            fd = sfu_tcp_connect(&r, nil, &l)
        }
        guard fd >= 0 else { throw UDPSocket.Failure(operation: "connect tcp \(remote)", errno: -fd) }
        self.fd = fd
        self.remote = remote.over(tcp: true)
        local = UDPSocket.transportAddress(l).over(tcp: true)
    }

    deinit { sfu_tcp_close(fd, 0) }

    /// Sends one packet as a frame; false when the connection is closed or its buffer full.
    @discardableResult
    public func send(_ packet: [UInt8]) -> Bool {
        guard !isClosed, packet.withUnsafeBytes({ writer.append($0) }) else { return false }
        framesSent += 1
        flush()
        return !isClosed
    }

    /// Writes bytes as they are, unframed (a hostile client's garbage, a length that lies).
    @discardableResult
    public func sendRaw(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { Int(sfu_tcp_write(fd, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32($0.count))) }
    }

    /// Writes what waits, as far as the kernel takes it.
    public func flush() {
        while !writer.isEmpty, !isClosed {
            let p = writer.pending
            let r = Int(sfu_tcp_write(fd, p.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(p.count)))
            if r > 0 { writer.consumed(r); continue }
            if r == -Int(EAGAIN) || r == -Int(EINTR) { return }
            isClosed = true
        }
    }

    /// Reads whole frames into `batch` as datagrams from `remote`, up to its capacity, without waiting.
    @discardableResult
    public func receive(into batch: ReceiveBatch) -> Int {
        flush()
        var n = 0
        func take() {
            while n < batch.capacity, let frame = reader.next() {
                let count = min(frame.count, batch.bufferSize)
                batch.buffers[n]!.update(from: frame.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count)
                batch.lengths[n] = Int32(count)
                batch.sources[n] = UDPSocket.cAddress(remote)
                batch.timestamps[n] = 0
                n += 1
            }
        }
        take()
        while n < batch.capacity, !isClosed {
            let space = reader.space()
            let r = Int(sfu_tcp_read(fd, space.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(space.count)))
            if r == -Int(EAGAIN) || r == -Int(EINTR) { break }
            if r <= 0 { isClosed = true; break }
            reader.received(r)
            take()
        }
        batch.count = n
        batch.stamped = false
        framesReceived += n
        return n
    }

    /// Resets the connection (RST, no TIME_WAIT: the local port is free at once for another connection).
    public func reset() {
        guard fd >= 0 else { return }
        isClosed = true
        sfu_tcp_close(fd, 1)
        fd = -1
    }

    /// Shuts the connection down both ways (the descriptor is closed with the stream).
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        shutdown(fd, Int32(SHUT_RDWR))
    }
}
