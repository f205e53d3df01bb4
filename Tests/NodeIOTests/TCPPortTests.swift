import Foundation
@testable import NodeIO
import SFU
import Testing
import WebRTCEdge

/// A worker's ICE-TCP port on loopback, driven with the time it is given: what it reads and how it bounds
/// what clients may hold (connections, silent ones, slow readers, transports that are gone).
@Suite(.serialized) struct TCPPortTests {
    final class Harness {
        let port: TCPPort
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        var received: [(TransportAddress, [UInt8])] = []
        /// Clients whose check passed, by their address (the port's connections from it add their number).
        var known: Set<TransportAddress> = []
        /// The transport a known address routes to: its own (by port) unless set here.
        var transportOf: [TransportAddress: ConnectionID] = [:]
        func transport(_ a: TransportAddress) -> ConnectionID? {
            let client = a.on(connection: 0)
            return known.contains(client) ? transportOf[client] ?? ConnectionID(UInt64(a.port)) : nil
        }

        init(_ limits: TCPLimits = .init()) throws {
            port = try TCPPort(bind: TransportAddress("127.0.0.1:0")!, limits: limits)
        }

        deinit { scratch.deallocate() }

        /// Runs the port's reads until `done` or 2 s pass (loopback: what was written is there at once).
        func pump(now: MonoTime = .seconds(1), until done: () -> Bool) {
            let end = Date().addingTimeInterval(2)
            repeat {
                _ = port.receive(budget: 1000, scratch: scratch, now: now, transportOf: { self.transport($0) }) { buf, n, from in
                    self.received.append((from, Array(UnsafeRawBufferPointer(rebasing: buf[0..<n]))))
                }
                if done() { return }
                usleep(1000)
            } while Date() < end
        }

        func connect() throws -> TCPStream { try TCPStream(connect: port.local.over(tcp: false)) }
    }

    @Test func framesReachTheCoreAsDatagramsFromTheConnectionsTCPAddress() throws {
        let h = try Harness()
        #expect(h.port.local.isTCP && h.port.local.port != 0)
        let c = try h.connect()
        #expect(c.send([1, 2, 3]))
        c.sendRaw([0, 2, 9])  // a frame in two writes
        h.pump { h.received.count == 1 }
        c.sendRaw([8])
        h.pump { h.received.count == 2 }
        #expect(h.received.map(\.1) == [[1, 2, 3], [9, 8]])
        // From the client's address, marked TCP and numbered as the port's connection.
        #expect(h.received.allSatisfy { $0.0.on(connection: 0) == c.local && $0.0.isTCP && $0.0.connection != 0 })
        #expect(h.port.isOpen(c.local))
        // The port's frames reach the client whole (sent to the connection's address; its IP and port alone name
        // no connection).
        #expect(![UInt8](repeating: 5, count: 1200).withUnsafeBytes { h.port.send($0, to: c.local, now: .seconds(1)) })
        #expect([UInt8](repeating: 5, count: 1200).withUnsafeBytes { h.port.send($0, to: h.received[0].0, now: .seconds(1)) })
        h.port.writePending(now: .seconds(1))
        let rx = ReceiveBatch(capacity: 8)
        var n = 0
        for _ in 0..<200 where n == 0 { n = c.receive(into: rx); usleep(1000) }
        #expect(n == 1 && rx.length(0) == 1200)
        #expect(h.port.snapshot.framesIn == 2 && h.port.snapshot.framesOut == 1 && h.port.snapshot.accepted == 1)
        #expect(h.port.snapshot.sendDrops == 1)
    }

    @Test func aSilentConnectionIsClosedAfterItsTime() throws {
        var limits = TCPLimits()
        limits.unauthenticatedTimeout = .seconds(5)
        let h = try Harness(limits)
        let silent = try h.connect()
        let talker = try h.connect()
        h.pump(now: .seconds(1)) { h.port.connectionCount == 2 }
        h.known.insert(talker.local)  // its check passed
        h.port.tick(now: .seconds(5.9)) { h.transport($0) }
        #expect(h.port.connectionCount == 2, "not yet")
        h.port.tick(now: .seconds(6)) { h.transport($0) }
        #expect(!h.port.isOpen(silent.local) && h.port.isOpen(talker.local))
        #expect(h.port.snapshot.closed(.unauthenticatedTimeout) == 1)
        // The silent client sees its connection reset.
        let rx = ReceiveBatch(capacity: 1)
        for _ in 0..<200 where !silent.isClosed { _ = silent.receive(into: rx); usleep(1000) }
        #expect(silent.isClosed)
        // A transport that is gone takes its connection with it.
        h.known.removeAll()
        h.port.tick(now: .seconds(7)) { h.transport($0) }
        #expect(h.port.connectionCount == 0 && h.port.snapshot.closed(.transportGone) == 1)
    }

    @Test func silentConnectionsPastTheirCapMakeRoomByClosingTheOldest() throws {
        var limits = TCPLimits()
        limits.maxUnauthenticated = 4
        limits.maxConnections = 6
        let h = try Harness(limits)
        var clients: [TCPStream] = []
        for i in 0..<5 {
            clients.append(try h.connect())
            h.pump(now: .seconds(Double(i))) { h.port.snapshot.accepted == UInt64(i + 1) }
        }
        #expect(h.port.snapshot.unauthenticated == 4)
        #expect(!h.port.isOpen(clients[0].local) && h.port.isOpen(clients[4].local), "the oldest made room")
        #expect(h.port.snapshot.closed(.unauthenticatedEvicted) == 1)
        // Authenticated connections fill the rest; past the cap a new connection is reset at once.
        for c in clients[1...] { h.known.insert(c.local) }
        h.port.tick(now: .seconds(5)) { h.transport($0) }
        #expect(h.port.snapshot.unauthenticated == 0)
        clients.append(try h.connect())
        clients.append(try h.connect())
        h.pump(now: .seconds(5)) { h.port.connectionCount == 6 }
        for c in clients.suffix(2) { h.known.insert(c.local) }
        h.port.tick(now: .seconds(5)) { h.transport($0) }
        let extra = try h.connect()
        h.pump(now: .seconds(5)) { h.port.snapshot.closed(.overCapacity) == 1 }
        #expect(h.port.connectionCount == 6 && !h.port.isOpen(extra.local))
    }

    @Test func aReaderTooSlowLosesFramesThenItsConnection() throws {
        var limits = TCPLimits()
        limits.sendBufferBytes = 16 * 1024
        limits.stallTimeout = .seconds(5)
        let h = try Harness(limits)
        let slow = try h.connect()  // never reads
        h.pump { h.port.connectionCount == 1 }
        h.known.insert(slow.local)
        let packet = [UInt8](repeating: 1, count: 1200)
        let to = try #require(h.port.address(of: slow.local))
        var refused = 0
        for _ in 0..<20_000 where refused < 10 {
            if !packet.withUnsafeBytes({ h.port.send($0, to: to, now: .seconds(1)) }) { refused += 1 }
            h.port.writePending(now: .seconds(1))
        }
        #expect(refused == 10, "the kernel's buffers and the port's filled, then frames were refused")
        #expect(h.port.snapshot.sendDrops == 10)
        h.port.tick(now: .seconds(5.5)) { h.transport($0) }
        #expect(h.port.isOpen(slow.local), "not stuck long enough yet")
        h.port.tick(now: .seconds(6)) { h.transport($0) }
        #expect(!h.port.isOpen(slow.local) && h.port.snapshot.closed(.stalled) == 1)
    }

    @Test func garbageAndOversizedFramesCostOnlyTheirBytes() throws {
        let h = try Harness()
        let c = try h.connect()
        c.sendRaw([0xFF, 0xFF] + [UInt8](repeating: 0xAB, count: 65535))  // a 65,535-byte frame: skipped
        c.sendRaw([0, 0])  // empty
        #expect(c.send([7, 7]))
        h.pump { h.received.count == 1 }
        #expect(h.received.map(\.1) == [[7, 7]])
        #expect(h.port.snapshot.badFrames == 2)
    }

    @Test func aTransportKeepsTwoConnectionsAndTheOldestExtraGoes() throws {
        let h = try Harness()
        let clients = try (0..<4).map { _ in try h.connect() }
        h.pump { h.port.connectionCount == 4 }
        // All four pass checks with the same credentials: one transport.
        for c in clients {
            h.known.insert(c.local)
            h.transportOf[c.local] = ConnectionID(42)
        }
        h.port.tick(now: .seconds(2)) { h.transport($0) }
        #expect(h.port.connectionCount == 2 && h.port.snapshot.closed(.transportExcess) == 2)
        #expect(h.port.isOpen(clients[2].local) && h.port.isOpen(clients[3].local), "the newest two stay")
    }

    @Test func aFullPortMakesRoomByClosingASilentConnectionNotRefusingTheNewOne() throws {
        var limits = TCPLimits()
        limits.maxConnections = 3
        let h = try Harness(limits)
        let a = try h.connect(), b = try h.connect(), silent = try h.connect()
        h.pump(now: .seconds(1)) { h.port.connectionCount == 3 }
        h.known.formUnion([a.local, b.local])
        h.port.tick(now: .seconds(1)) { h.transport($0) }
        let late = try h.connect()
        h.pump(now: .seconds(2)) { h.port.snapshot.accepted == 4 }
        #expect(h.port.isOpen(late.local) && !h.port.isOpen(silent.local) && h.port.isOpen(a.local))
        #expect(h.port.snapshot.closed(.unauthenticatedEvicted) == 1 && h.port.snapshot.closed(.overCapacity) == 0)
        // Full of authenticated ones, a new connection is refused.
        h.known.insert(late.local)
        h.port.tick(now: .seconds(2)) { h.transport($0) }
        let refused = try h.connect()
        h.pump(now: .seconds(3)) { h.port.snapshot.closed(.overCapacity) == 1 }
        #expect(!h.port.isOpen(refused.local) && h.port.connectionCount == 3)
    }

    @Test func aConnectionsFirstFrameIsReadWhenItIsAccepted() throws {
        let h = try Harness()
        let c = try h.connect()
        #expect(c.send([9, 9, 9]))
        usleep(20_000)  // the connection and its frame both wait before the port looks
        var work = 0
        _ = h.port.receive(budget: 100, scratch: h.scratch, now: .seconds(1), transportOf: { h.transport($0) }) { buf, n, from in
            h.received.append((from, Array(UnsafeRawBufferPointer(rebasing: buf[0..<n]))))
            work += 1
        }
        #expect(h.received.map(\.1) == [[9, 9, 9]], "accepted and read in one pass")
    }
}
