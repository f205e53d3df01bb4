import Foundation
import NodeIO
import SFU
import SFUMedia
import Synchronization
import WebRTCEdge

/// A thread sending garbage datagrams to one address as fast as a socket takes them: random bytes,
/// RTP- and DTLS-looking junk from an address that never passed ICE, malformed STUN.
final class Flood: @unchecked Sendable {
    let target: TransportAddress
    private let running = Mutex(true)
    private let done = DispatchSemaphore(value: 0)
    private var sent = 0
    private var seconds = 0.0

    init(target: TransportAddress) { self.target = target }

    func start() {
        let t = Thread { [self] in
            var rng = SplitMix64(seed: 0xF100D)
            let datagrams = (0..<256).map { _ in Soak.garbage(&rng) }
            guard let socket = try? UDPSocket(bind: TransportAddress("127.0.0.1:0")!) else { done.signal(); return }
            let begin = MonoClock.now()
            var n = 0
            while running.withLock({ $0 }) {
                for i in 0..<256 where socket.send(datagrams[i], to: target) { n += 1 }
            }
            sent = n
            seconds = (MonoClock.now() - begin).seconds
            done.signal()
        }
        t.name = "flood"
        t.start()
    }

    /// Stops the thread; returns how many datagrams it sent and over how long.
    func stop() -> (count: Int, seconds: Double) {
        running.withLock { $0 = false }
        done.wait()
        return (sent, seconds)
    }
}
