@testable import NodeIO
import SFU
import Testing
import WebRTCEdge

/// Loopback only (127.0.0.1), bounded counts.
@Suite struct UDPSocketTests {
    func pair() throws -> (UDPSocket, UDPSocket) {
        (try UDPSocket(bind: TransportAddress("127.0.0.1:0")!), try UDPSocket(bind: TransportAddress("127.0.0.1:0")!))
    }

    /// Receives until `expected` datagrams arrived or the socket stays quiet for 1 s.
    func drain(_ s: UDPSocket, expected: Int) throws -> [(TransportAddress, [UInt8])] {
        let batch = ReceiveBatch(capacity: 64)
        var got: [(TransportAddress, [UInt8])] = []
        while got.count < expected, s.wait(timeoutMilliseconds: 1000) {
            try s.receive(into: batch)
            for i in 0..<batch.count { got.append((batch.source(i), Array(batch.datagram(i)))) }
        }
        return got
    }

    @Test func aBatchGoesOutWithSendmmsgAndComesBackWithRecvmmsg() throws {
        let (a, b) = try pair()
        #expect(a.local.port != 0 && a.local.host == "127.0.0.1")
        let out = DatagramBatch(capacity: 100)
        for i in 0..<100 {
            let buf = try #require(out.nextBuffer())
            for k in 0..<(100 + i) { buf[k] = UInt8(truncatingIfNeeded: i + k) }
            out.commit(length: 100 + i, to: ConnectionID(1))
        }
        #expect(a.send(out) { _ in b.local } == 100)
        let got = try drain(b, expected: 100)
        #expect(got.count == 100)
        #expect(got.allSatisfy { $0.0 == a.local })
        #expect(got.map(\.1.count) == (0..<100).map { 100 + $0 }, "order and lengths kept")
    }

    @Test func equalSizedRunsToOneDestinationGoOutAsOneGSOSend() throws {
        let (a, b) = try pair()
        let out = DatagramBatch(capacity: 16)
        for i in 0..<8 {  // one "frame": seven 1000-byte packets and a 300-byte last one
            let buf = try #require(out.nextBuffer())
            let n = i == 7 ? 300 : 1000
            for k in 0..<n { buf[k] = UInt8(i) }
            out.commit(length: n, to: ConnectionID(1))
        }
        #expect(a.send(out, gso: true) { _ in b.local } == 8)
        #expect(a.gsoSends == 1)
        let got = try drain(b, expected: 8)
        #expect(got.map(\.1.count) == [1000, 1000, 1000, 1000, 1000, 1000, 1000, 300])
        #expect(got.enumerated().allSatisfy { i, d in d.1.allSatisfy { $0 == UInt8(i) } }, "segments arrive whole and in order")
    }

    @Test func aFanOutBatchIsGroupedByDestinationSoEachSubscribersFrameGoesOutInOneGSOSend() throws {
        // Three packets of one frame, each copied to two subscribers as the engine writes them: A B A B A B.
        let (a, b) = try pair()
        let c = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let out = DatagramBatch(capacity: 16)
        for packet in 0..<3 {
            for subscriber in [1, 2] {
                let buf = try #require(out.nextBuffer())
                let n = packet == 2 ? 400 : 1000
                for k in 0..<n { buf[k] = UInt8(packet * 10 + subscriber) }
                out.commit(length: n, to: ConnectionID(UInt64(subscriber)))
            }
        }
        #expect(a.send(out, gso: true) { $0 == ConnectionID(1) ? b.local : c.local } == 6)
        #expect(a.gsoSends == 2, "one send per subscriber")
        for (socket, subscriber) in [(b, 1), (c, 2)] {
            let got = try drain(socket, expected: 3)
            #expect(got.map(\.1.count) == [1000, 1000, 400])
            #expect(got.enumerated().allSatisfy { i, d in d.1.allSatisfy { $0 == UInt8(i * 10 + subscriber) } }, "each subscriber's order kept")
        }
    }

    @Test func theMergeSortOrdersLikeTheStandardLibrary() {
        var generator = SystemRandomNumberGenerator()
        for count in [0, 1, 2, 3, 7, 64, 100, 1000] {
            let values = (0..<count).map { _ in UInt64.random(in: 0...50, using: &generator) << 32 | UInt64.random(in: 0...1000, using: &generator) }
            let keys = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: max(count, 1))
            let scratch = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: max(count, 1))
            defer { keys.deallocate(); scratch.deallocate() }
            for (i, v) in values.enumerated() { keys[i] = v }
            mergeSort(keys, count: count, scratch: scratch)
            #expect(Array(keys[0..<count]) == values.sorted())
        }
    }

    @Test func datagramsWithoutADestinationAreCountedNotSent() throws {
        let (a, b) = try pair()
        let out = DatagramBatch(capacity: 4)
        for c in [1, 2, 1] {
            _ = try #require(out.nextBuffer())
            out.commit(length: 10, to: ConnectionID(UInt64(c)))
        }
        #expect(a.send(out) { $0 == ConnectionID(1) ? b.local : nil } == 2)
        #expect(a.sendDrops == 1)
        #expect(try drain(b, expected: 2).count == 2)
    }

    @Test func anOversizedDatagramIsReportedTruncated() throws {
        let (a, b) = try pair()
        #expect(a.send([UInt8](repeating: 7, count: 3000), to: b.local))
        let batch = ReceiveBatch(capacity: 4, bufferSize: 2048)
        #expect(b.wait(timeoutMilliseconds: 1000))
        #expect(try b.receive(into: batch) == 1)
        #expect(batch.isTruncated(0))
    }

    @Test func waitingOnAQuietSocketTimesOut() throws {
        let (a, _) = try pair()
        #expect(a.wait(timeoutMilliseconds: 10) == false)
        #expect(try a.receive(into: ReceiveBatch(capacity: 4)) == 0)
    }

    @Test func bindingATakenPortFails() throws {
        let (a, _) = try pair()
        #expect(throws: UDPSocket.Failure.self) { try UDPSocket(bind: a.local) }
    }
}

@Suite(.timeLimit(.minutes(1))) struct SendErrorTests {
    /// A batch with a datagram the kernel refuses (port 0 is not a destination) between two good ones.
    @Test func aDatagramTheKernelRefusesDropsOnlyItself() throws {
        let node = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let a = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!), c = try UDPSocket(bind: TransportAddress("127.0.0.1:0")!)
        let batch = DatagramBatch(capacity: 8)
        let destinations: [UInt64: TransportAddress] = [1: a.local, 2: TransportAddress("127.0.0.1:0")!, 3: c.local]
        for (conn, size) in [(1, 100), (2, 100), (3, 100), (3, 100)] {
            let buf = batch.nextBuffer()!
            for i in 0..<size { buf[i] = UInt8(conn) }
            batch.commit(length: size, to: ConnectionID(UInt64(conn)))
        }
        for gso in [false, true] {
            let sent = node.send(batch, gso: gso) { destinations[$0.raw] }
            #expect(sent == 3, "gso \(gso): the refused datagram took nobody else with it")
            let rx = ReceiveBatch(capacity: 8)
            #expect(a.wait(timeoutMilliseconds: 1000))
            #expect(try a.receive(into: rx) == 1)
            #expect(c.wait(timeoutMilliseconds: 1000))
            #expect(try c.receive(into: rx) == 2)
        }
        #expect(node.sendErrors == 2 && node.sendDrops == 2)
    }
}
