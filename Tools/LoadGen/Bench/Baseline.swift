import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// The host's raw UDP capacity on loopback with the node's own I/O path (sendmmsg batches of 64, optionally
/// UDP GSO; recvmmsg): one thread sends datagrams of one size as fast as it can, another receives them. Each
/// thread's CPU time is measured, so the figure is per core: what share of it the node reaches is the
/// question the bench answers.
public enum Baseline {
    public struct Result: Codable, Sendable {
        public var packetSize: Int
        public var gso: Bool
        public var seconds: Double
        public var sent: Double
        public var received: Double
        public var senderCPUSeconds: Double
        public var receiverCPUSeconds: Double
        public var sentPerCoreSecond: Double { senderCPUSeconds > 0 ? sent / senderCPUSeconds : 0 }
        public var receivedPerCoreSecond: Double { receiverCPUSeconds > 0 ? received / receiverCPUSeconds : 0 }

        public var text: String {
            String(format: "baseline %d-byte datagrams%@: sent %.0f/s (%.0f per sender core-second), received %.0f/s (%.0f per receiver core-second), %.2f %% lost in the kernel",
                   packetSize, gso ? " with GSO" : "", sent / seconds, sentPerCoreSecond, received / seconds, receivedPerCoreSecond,
                   sent > 0 ? max(0, 1 - received / sent) * 100 : 0)
        }
    }

    static func threadCPU() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Runs for `seconds` and reports.
    public static func measure(packetSize: Int, seconds: Double, gso: Bool = false) throws -> Result {
        let receiver = SendableBox(try UDPSocket(bind: TransportAddress("127.0.0.1:0")!, socketBufferBytes: 16 << 20))
        let sender = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!, socketBufferBytes: 16 << 20)
        let target = receiver.value.local
        let stop = Atomic(false)
        let received = Atomic(0)
        let receiverCPU = Atomic(0.0)
        let done = DispatchSemaphore(value: 0)
        let rx = Thread {
            let batch = ReceiveBatch(capacity: 64, bufferSize: 2048)
            let cpu0 = threadCPU()
            var n = 0
            while !stop.load(ordering: .relaxed) {
                if receiver.value.wait(timeoutMilliseconds: 50), let got = try? receiver.value.receive(into: batch) { n += got }
            }
            while let got = try? receiver.value.receive(into: batch), got > 0 { n += got }
            received.store(n, ordering: .relaxed)
            receiverCPU.store(threadCPU() - cpu0, ordering: .relaxed)
            done.signal()
        }
        rx.start()
        let batch = DatagramBatch(capacity: 64, bufferSize: max(packetSize, 64) + SRTPSession.maxOverhead)
        let conn = ConnectionID(1)
        var sent = 0
        let cpu0 = threadCPU()
        let start = MonoClock.now()
        let end = start + .seconds(seconds)
        while MonoClock.now() < end {
            batch.removeAll()
            for _ in 0..<64 {
                guard let b = batch.nextBuffer() else { break }
                b.baseAddress!.initializeMemory(as: UInt8.self, repeating: 0x80, count: packetSize)
                batch.commit(length: packetSize, to: conn)
            }
            sent += sender.send(batch, gso: gso) { _ in target }
        }
        let senderCPU = threadCPU() - cpu0
        let elapsed = (MonoClock.now() - start).seconds
        Thread.sleep(forTimeInterval: 0.2)
        stop.store(true, ordering: .relaxed)
        done.wait()
        return Result(packetSize: packetSize, gso: gso, seconds: elapsed, sent: Double(sent), received: Double(received.load(ordering: .relaxed)),
                      senderCPUSeconds: senderCPU, receiverCPUSeconds: receiverCPU.load(ordering: .relaxed))
    }
}

import Synchronization

/// Hands an object to exactly one other thread, which alone uses it from then on.
final class SendableBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
