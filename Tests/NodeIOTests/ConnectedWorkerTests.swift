import SFUMedia
import SFUFuzzTargets
import SFUSimulation
import Testing

/// The benchmark fixture of the worker's whole per-datagram path (edge lookup, room, SRTP both ways) does
/// what the benchmark assumes, for longer than a consent lifetime.
@Suite struct ConnectedWorkerTests {
    @Test func everyVideoPacketReachesEverySubscriberThroughTheWorkerCore() {
        let w = ConnectedWorker(subscribers: 10)
        for _ in 0..<5 {
            var forwarded = 0
            for _ in 0..<1000 { forwarded += w.receive(w.videoPacket()) }  // 10 s of a 1 Mbit/s video
            #expect(forwarded >= 10_000, "each packet to 10 subscribers: \(forwarded)")
            w.runTimers()
        }
    }
}
