import NodeIO
import SFU
import Testing
import WebRTCEdge

@Suite struct UDPSocketTimestampTests {
    @Test func kernelReceiveTimesLandOnTheMonotonicClockBetweenSendAndRead() throws {
        let receiver = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        try receiver.enableReceiveTimestamps()
        let sender = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let before = MonoClock.now()
        #expect(sender.send([1, 2, 3], to: receiver.local))
        #expect(receiver.wait(timeoutMilliseconds: 1000))
        let batch = ReceiveBatch(capacity: 4)
        #expect(try receiver.receive(into: batch) == 1)
        let after = MonoClock.now()
        let arrival = try #require(batch.arrival(0))
        // The clocks are related through one reading of both; allow a millisecond for that.
        #expect(arrival.nanoseconds >= before.nanoseconds - 1_000_000 && arrival.nanoseconds <= after.nanoseconds + 1_000_000)

        let plain = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        #expect(sender.send([4], to: plain.local))
        #expect(plain.wait(timeoutMilliseconds: 1000))
        #expect(try plain.receive(into: batch) == 1)
        #expect(batch.arrival(0) == nil, "sockets that did not ask get no stamp")
    }
}
