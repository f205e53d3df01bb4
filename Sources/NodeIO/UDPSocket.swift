import CNodeIO
import Foundation
import SFU
import WebRTCEdge

/// A worker's UDP socket: non-blocking, batched both ways (`limits.md`: the kernel's per-packet work
/// dominates; GSO is what cuts it, where several equal-size datagrams go to one destination).
public final class UDPSocket {
    public struct Failure: Error, CustomStringConvertible {
        public var operation: String
        public var errno: Int32
        public var description: String { "\(operation) failed: errno \(errno)" }
    }

    public let local: TransportAddress
    private let fd: Int32
    var descriptor: Int32 { fd }
    // Scratch arrays for sends, allocated once.
    private let maxBatch = 1024
    private let sendBuffers: UnsafeMutablePointer<UnsafePointer<UInt8>?>
    private let sendLengths: UnsafeMutablePointer<Int32>
    private let sendAddresses: UnsafeMutablePointer<sfu_address>
    private let gsoScratch: UnsafeMutableRawBufferPointer
    /// Send order for GSO: (destination's low 32 bits << 32 | position) keys, sorted; grows once to the largest
    /// batch. Two destinations whose ids share their low 32 bits may interleave: each run still compares the
    /// whole id, so that costs at most a segmented send, never a misdirected datagram.
    private var order: UnsafeMutableBufferPointer<UInt64> = .allocate(capacity: 0)
    private var orderScratch: UnsafeMutableBufferPointer<UInt64> = .allocate(capacity: 0)
    /// Datagrams the kernel would not take (socket buffer full) or that had no destination.
    public private(set) var sendDrops = 0
    /// Datagrams the kernel refused for their own destination (the others of the batch still went).
    public private(set) var sendErrors = 0
    public private(set) var gsoSends = 0
    /// Segmented sends refused and sent again one datagram at a time.
    public private(set) var gsoFallbacks = 0
    /// Set on a dual-stack worker's sockets: datagrams to the other address family are left to the other socket
    /// (neither sent nor counted here).
    public var leavesOtherFamily = false
    /// Whether a datagram without a destination is counted here (all but a dual-stack worker's second socket).
    public var countsUnroutable = true
    /// Cleared when the kernel says it cannot segment: plain batches from then on.
    private var gsoWorks = true
    /// Socket-level totals for metrics (worker thread only, like every other member).
    public private(set) var datagramsReceived: UInt64 = 0
    public private(set) var bytesReceived: UInt64 = 0
    public private(set) var datagramsSent: UInt64 = 0
    public private(set) var bytesSent: UInt64 = 0

    public init(bind address: TransportAddress, socketBufferBytes: Int = 4 << 20) throws(Failure) {
        var requested = Self.cAddress(address)
        var bound = sfu_address()
        let r = sfu_udp_open(&requested, &bound, Int32(socketBufferBytes))
        guard r >= 0 else { throw Failure(operation: "bind \(address)", errno: -r) }
        fd = r
        local = Self.transportAddress(bound)
        sendBuffers = .allocate(capacity: maxBatch)
        sendLengths = .allocate(capacity: maxBatch)
        sendAddresses = .allocate(capacity: maxBatch)
        gsoScratch = .allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit {
        sfu_udp_close(fd)
        sendBuffers.deallocate()
        sendLengths.deallocate()
        sendAddresses.deallocate()
        gsoScratch.deallocate()
        order.deallocate()
        orderScratch.deallocate()
    }

    /// Waits for a datagram up to `timeoutMilliseconds` (0 polls); true when one is waiting.
    public func wait(timeoutMilliseconds: Int32) -> Bool { sfu_udp_wait(fd, timeoutMilliseconds) == 1 }

    /// Receives what is waiting, up to the batch's capacity, without blocking. Returns how many.
    @discardableResult
    public func receive(into batch: ReceiveBatch) throws(Failure) -> Int {
        let n = timestamps
            ? sfu_udp_recv_batch_timestamped(fd, batch.buffers, Int32(batch.bufferSize), batch.lengths, batch.sources, batch.timestamps, Int32(batch.capacity))
            : sfu_udp_recv_batch(fd, batch.buffers, Int32(batch.bufferSize), batch.lengths, batch.sources, Int32(batch.capacity))
        batch.stamped = timestamps
        guard n >= 0 else { throw Failure(operation: "recvmmsg", errno: -n) }
        batch.count = Int(n)
        datagramsReceived &+= UInt64(n)
        for i in 0..<Int(n) { bytesReceived &+= UInt64(batch.lengths[i]) }
        return Int(n)
    }

    /// Kernel receive times for every datagram from now on (`ReceiveBatch.arrival`): what the load generator
    /// measures latency with, free of its own polling delay.
    public func enableReceiveTimestamps() throws(Failure) {
        let r = sfu_udp_enable_timestamps(fd)
        guard r == 0 else { throw Failure(operation: "setsockopt SO_TIMESTAMPNS", errno: -r) }
        timestamps = true
    }

    private var timestamps = false

    /// Sends the engine's datagrams: each to the address its connection resolves to. With `gso`, the batch
    /// goes out grouped by destination (a stable order: each destination's datagrams keep theirs), and runs
    /// to one destination whose sizes are equal (the last may be shorter) go out as one UDP GSO send: a
    /// fan-out batch lists each incoming packet's copies one subscriber after another, so a video frame's
    /// packets received together reach each subscriber in one send instead of one per packet.
    /// Returns how many datagrams the kernel took.
    /// A datagram whose destination is a TCP connection's address (ICE-TCP) goes to `stream` instead: the
    /// worker's `TCPPort` frames it (and counts it when there is nothing to take it).
    @discardableResult
    public func send(_ batch: DatagramBatch, gso: Bool = false, to destination: (ConnectionID) -> TransportAddress?,
                     stream: ((UnsafeRawBufferPointer, TransportAddress) -> Void)? = nil) -> Int {
        var sent = 0
        var pending = 0
        let grouped = gso && batch.count > 1
        if grouped {
            if order.count < batch.count {
                order.deallocate()
                orderScratch.deallocate()
                order = .allocate(capacity: max(batch.count, batch.capacity))
                orderScratch = .allocate(capacity: order.count)
            }
            for k in 0..<batch.count { order[k] = (batch.destination(at: k).raw & 0xFFFF_FFFF) << 32 | UInt64(k) }
            mergeSort(order, count: batch.count, scratch: orderScratch)
        }
        /// The batch position of the k-th datagram to send.
        func at(_ k: Int) -> Int { grouped ? Int(truncatingIfNeeded: order[k] & 0xFFFF_FFFF) : k }
        /// Sends the pending datagrams. A datagram the kernel refuses for its own destination (unreachable,
        /// invalid address) is counted and the rest go on; a full socket buffer (EAGAIN, ENOBUFS) is shared
        /// by every destination, so then the rest are dropped and counted.
        func flush() {
            var start = 0
            while start < pending {
                let r = Int(sfu_udp_send_batch(fd, sendBuffers + start, sendLengths + start, sendAddresses + start, Int32(pending - start)))
                if r > 0 {
                    for k in start..<(start + r) { bytesSent &+= UInt64(sendLengths[k]) }
                    datagramsSent &+= UInt64(r)
                    sent += r
                    start += r
                    continue
                }
                if Self.bufferFull(-r) {
                    sendDrops += pending - start
                    break
                }
                sendDrops += 1
                sendErrors += 1
                start += 1
            }
            pending = 0
        }
        func enqueue(_ d: UnsafeRawBufferPointer, to: TransportAddress) {
            sendBuffers[pending] = d.baseAddress!.assumingMemoryBound(to: UInt8.self)
            sendLengths[pending] = Int32(d.count)
            sendAddresses[pending] = Self.cAddress(to)
            pending += 1
            if pending == maxBatch { flush() }
        }
        // Grouped, a destination's datagrams are adjacent: its address is looked up once per run of them.
        var lastID: ConnectionID?
        var lastTo: TransportAddress?
        var i = 0
        while i < batch.count {
            let id = batch.destination(at: at(i))
            if id != lastID {
                lastID = id
                lastTo = destination(id)
            }
            guard let to = lastTo else {
                // `.none`: discarded before the send, and counted there. On a dual-stack worker the first socket
                // counts the rest (each socket sees the whole batch).
                if id != .none, countsUnroutable { sendDrops += 1 }
                i += 1
                continue
            }
            let d = batch.datagram(at: at(i))
            if leavesOtherFamily, to.isIPv6 != local.isIPv6 {
                i += 1  // the worker's socket of that family sends it
                continue
            }
            if to.isTCP {
                if let stream { stream(d, to) } else { sendDrops += 1 }
                i += 1
                continue
            }
            if gso && gsoWorks {
                var run = 1
                while i + run < batch.count, run < 64, batch.destination(at: at(i + run)) == batch.destination(at: at(i)),
                      batch.datagram(at: at(i + run - 1)).count == d.count, batch.datagram(at: at(i + run)).count <= d.count,
                      (run + 1) * d.count <= gsoScratch.count {
                    run += 1
                }
                if run > 1 {
                    flush()
                    var offset = 0
                    for k in 0..<run {
                        let seg = batch.datagram(at: at(i + k))
                        UnsafeMutableRawBufferPointer(rebasing: gsoScratch[offset..<(offset + seg.count)]).copyMemory(from: seg)
                        offset += seg.count
                    }
                    var address = Self.cAddress(to)
                    let r = sfu_udp_send_gso(fd, gsoScratch.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(offset),
                                             Int32(d.count), &address)
                    if r > 0 {
                        sent += run
                        gsoSends += 1
                        datagramsSent &+= UInt64(run)
                        bytesSent &+= UInt64(offset)
                    } else if Self.bufferFull(-Int(r)) {
                        sendDrops += run
                    } else {
                        // The kernel refused the segmented send (no GSO on this route, or a bad destination):
                        // the run goes out one datagram at a time, each failing only for itself.
                        gsoFallbacks += 1
                        if Self.gsoUnsupported(-Int(r)) { gsoWorks = false }
                        for k in 0..<run { enqueue(batch.datagram(at: at(i + k)), to: to) }
                        flush()
                    }
                    i += run
                    continue
                }
            }
            enqueue(d, to: to)
            i += 1
        }
        flush()
        return sent
    }

    /// The socket's send buffer is full: every destination is refused alike.
    static func bufferFull(_ errno: Int) -> Bool { errno == Int(EAGAIN) || errno == Int(EWOULDBLOCK) || errno == Int(ENOBUFS) }

    /// The kernel or device does not segment (UDP GSO needs Linux 4.18 and a capable route).
    static func gsoUnsupported(_ errno: Int) -> Bool { errno == Int(EIO) || errno == Int(EOPNOTSUPP) || errno == Int(ENOPROTOOPT) }

    /// Sends one datagram (control traffic: STUN responses, DTLS flights).
    @discardableResult
    public func send(_ bytes: [UInt8], to: TransportAddress) -> Bool {
        var address = Self.cAddress(to)
        var length = Int32(bytes.count)
        return bytes.withUnsafeBufferPointer { b in
            var base: UnsafePointer<UInt8>? = b.baseAddress
            guard sfu_udp_send_batch(fd, &base, &length, &address, 1) == 1 else { sendDrops += 1; return false }
            datagramsSent &+= 1
            bytesSent &+= UInt64(bytes.count)
            return true
        }
    }

    static func cAddress(_ a: TransportAddress) -> sfu_address {
        var c = sfu_address()
        c.port = a.port
        withUnsafeMutableBytes(of: &c.address) { raw in
            switch a.ip {
            case .v4(let v):
                c.family = 4
                raw[0] = UInt8(v >> 24); raw[1] = UInt8((v >> 16) & 0xFF); raw[2] = UInt8((v >> 8) & 0xFF); raw[3] = UInt8(v & 0xFF)
            case .v6(let hi, let lo):
                c.family = 6
                for i in 0..<8 { raw[i] = UInt8(truncatingIfNeeded: hi >> (56 - 8 * UInt64(i))) }
                for i in 0..<8 { raw[8 + i] = UInt8(truncatingIfNeeded: lo >> (56 - 8 * UInt64(i))) }
            }
        }
        return c
    }

    static func transportAddress(_ c: sfu_address) -> TransportAddress {
        withUnsafeBytes(of: c.address) { raw in
            if c.family == 6 {
                let hi = raw[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let lo = raw[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                return TransportAddress(ip: .v6(hi, lo), port: c.port)
            }
            return TransportAddress(ip: .v4(raw[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }), port: c.port)
        }
    }
}

/// Buffers recvmmsg fills, allocated once per worker.
public final class ReceiveBatch {
    public let capacity: Int
    public let bufferSize: Int
    let storage: UnsafeMutableRawBufferPointer
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>
    let lengths: UnsafeMutablePointer<Int32>
    let sources: UnsafeMutablePointer<sfu_address>
    let timestamps: UnsafeMutablePointer<Int64>
    /// Whether the last receive read kernel stamps.
    var stamped = false
    public internal(set) var count = 0

    /// `bufferSize` leaves room past a full-MTU datagram for SRTP's in-place work.
    public init(capacity: Int = 64, bufferSize: Int = 2048) {
        self.capacity = capacity
        self.bufferSize = bufferSize
        storage = .allocate(byteCount: capacity * bufferSize, alignment: 16)
        buffers = .allocate(capacity: capacity)
        lengths = .allocate(capacity: capacity)
        sources = .allocate(capacity: capacity)
        timestamps = .allocate(capacity: capacity)
        timestamps.initialize(repeating: 0, count: capacity)
        for i in 0..<capacity { buffers[i] = storage.baseAddress!.advanced(by: i * bufferSize).assumingMemoryBound(to: UInt8.self) }
    }

    deinit {
        storage.deallocate()
        buffers.deallocate()
        lengths.deallocate()
        sources.deallocate()
        timestamps.deallocate()
    }

    /// When the kernel received datagram `i`, on the monotonic clock (`MonoClock`), if the socket stamps.
    public func arrival(_ i: Int) -> MonoTime? {
        let realtime = timestamps[i]
        return !stamped || realtime == 0 ? nil : MonoTime(nanoseconds: realtime - Self.realtimeMinusMonotonic)
    }

    /// CLOCK_REALTIME - CLOCK_MONOTONIC, read once: kernel stamps are on the first, the engine on the second.
    static let realtimeMinusMonotonic: Int64 = {
        var r = timespec(), m = timespec()
        clock_gettime(CLOCK_REALTIME, &r)
        clock_gettime(CLOCK_MONOTONIC, &m)
        return (Int64(r.tv_sec) - Int64(m.tv_sec)) * 1_000_000_000 + Int64(r.tv_nsec) - Int64(m.tv_nsec)
    }()

    /// The whole buffer of datagram `i` (for in-place decryption) and its length; a length above the buffer
    /// size means the datagram was truncated and must be dropped.
    public func buffer(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: buffers[i], count: bufferSize)
    }

    public func length(_ i: Int) -> Int { Int(lengths[i]) }
    public func isTruncated(_ i: Int) -> Bool { Int(lengths[i]) > bufferSize }
    public func source(_ i: Int) -> TransportAddress { UDPSocket.transportAddress(sources[i]) }
    public func datagram(_ i: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: buffers[i], count: min(length(i), bufferSize)) }
}

/// Sorts `keys[0..<count]` ascending with a bottom-up merge sort through `scratch` (as large): no allocation,
/// O(n log n), where the standard library's sort may allocate its merge buffer.
func mergeSort(_ keys: UnsafeMutableBufferPointer<UInt64>, count: Int, scratch: UnsafeMutableBufferPointer<UInt64>) {
    var from = keys, to = scratch
    var width = 1
    while width < count {
        var start = 0
        while start < count {
            let mid = min(start + width, count), end = min(start + 2 * width, count)
            var a = start, b = mid, o = start
            while a < mid, b < end {
                if from[b] < from[a] { to[o] = from[b]; b += 1 } else { to[o] = from[a]; a += 1 }
                o += 1
            }
            while a < mid { to[o] = from[a]; a += 1; o += 1 }
            while b < end { to[o] = from[b]; b += 1; o += 1 }
            start = end
        }
        swap(&from, &to)
        width *= 2
    }
    if from.baseAddress != keys.baseAddress { for k in 0..<count { keys[k] = from[k] } }
}
