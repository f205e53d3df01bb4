import SFU
import WebRTCEdge

/// The worker's ICE-TCP port in its loop (RFC 6544): frames read from the connections reach the core as
/// datagrams from the connections' addresses; once a second the port closes what has outlived its bounds; the
/// core is told of every connection that closed, so that nothing its checks proved outlives it.
extension Worker {
    /// Reads what the TCP connections have, up to `budget` frames; returns how many.
    func receiveTCP(_ core: WorkerCore, _ rx: ReceiveBatch, budget: Int) -> Int {
        tcpReady = false
        var n = 0
        for tcp in tcpPorts {
            let now = MonoClock.now()
            // The UDP batch has been processed: its first buffer is the scratch a frame is decrypted in.
            n += tcp.receive(budget: budget / tcpPorts.count, scratch: rx.buffer(0), now: now,
                             transportOf: { core.edge.transport(of: $0, now: now) },
                             deliver: { [self] buffer, length, from in
                                 core.receive(buffer, length: length, from: from, now: now)
                                 // As for datagrams: out before the batch fills (a frame may fan out to many).
                                 if needsFlush(core) { flush(core) }
                             })
        }
        forgetClosedTCP(core)
        if n > 0 { flush(core) }
        return n
    }

    /// The port's bounds, checked once a second; connections closed since the last pass, every pass.
    func tickTCP(_ core: WorkerCore) {
        let now = MonoClock.now()
        if now >= nextTCPTick {
            nextTCPTick = now + .seconds(1)
            for tcp in tcpPorts { tcp.tick(now: now, transportOf: { core.edge.transport(of: $0, now: now) }) }
        }
        forgetClosedTCP(core)
    }

    /// Tells the core which connections closed (read, write, bound or reset): their checks die with them.
    private func forgetClosedTCP(_ core: WorkerCore) {
        var any = false
        for tcp in tcpPorts {
            for address in tcp.takeClosed() {
                core.pathClosed(address, now: MonoClock.now())
                any = true
            }
        }
        if any { flush(core) }
    }
}
