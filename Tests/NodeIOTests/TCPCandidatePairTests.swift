import Foundation
@testable import NodeIO
import SFU
import Testing
import WebRTCEdge

/// A worker's ICE-TCP port in front of a real edge, on loopback, driven with the time it is given: each TCP
/// connection is a candidate pair of its own (RFC 6544), so what one connection proved with its ICE check never
/// passes to another connection from the same IP and port - the next one after a reset must check for itself.
@Suite(.serialized) struct TCPCandidatePairTests {
    final class Shell {
        let port: TCPPort
        let edge: WorkerEdge
        let id = ConnectionID(7)
        let client = ICECredentials.random()
        let checks: ICEControllingClient
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        /// Where each frame the port delivered came from, as the edge saw it.
        var sources: [TransportAddress] = []

        init() throws {
            var limits = TCPLimits()
            limits.unauthenticatedTimeout = .seconds(5)
            port = try TCPPort(bind: TransportAddress("127.0.0.1:0")!, limits: limits)
            edge = WorkerEdge(certificate: try DTLSCertificate(), candidates: [port.local])
            let local = edge.prepare(id)
            try edge.attach(id, remote: RemoteTransport(ufrag: client.ufrag, password: client.password,
                                                        fingerprint: try DTLSCertificate(commonName: "c").fingerprint))
            checks = ICEControllingClient(local: client, remote: local.ice)
        }

        deinit { scratch.deallocate() }

        /// What the worker does with the port: frames to the edge, the edge's replies back as frames, the edge
        /// told of connections that closed. Until `done` or 2 s pass.
        func pump(now: MonoTime, until done: () -> Bool) {
            let end = Date().addingTimeInterval(2)
            repeat {
                _ = port.receive(budget: 1000, scratch: scratch, now: now, transportOf: { self.edge.transport(of: $0, now: now) }) { buf, n, from in
                    self.sources.append(from)
                    for case .send(let bytes, let to) in self.edge.receive(UnsafeRawBufferPointer(rebasing: buf[0..<n]), from: from, now: now) {
                        bytes.withUnsafeBytes { _ = self.port.send($0, to: to, now: now) }
                    }
                }
                port.writePending(now: now)
                if done() { return }
                usleep(1000)
            } while Date() < end
        }

        func tick(now: MonoTime) { port.tick(now: now) { self.edge.transport(of: $0, now: now) } }

        /// Whether a frame for the transport's path reaches a connection.
        func sendsOnItsPath(now: MonoTime) -> Bool {
            guard let to = edge.destination(of: id) else { return false }
            return [UInt8](repeating: 0x80, count: 40).withUnsafeBytes { port.send($0, to: to, now: now) }
        }

        func connect(from: TransportAddress? = nil) throws -> TCPStream {
            try TCPStream(connect: port.local.over(tcp: false), from: from?.over(tcp: false))
        }
    }

    @Test func aConnectionFromAResetConnectionsAddressIsNotTrustedWithoutItsOwnCheck() throws {
        let s = try Shell()
        let first = try s.connect()
        #expect(first.send(s.checks.bindingRequest(nominate: true)))
        s.pump(now: .seconds(1)) { s.edge.destination(of: s.id) != nil && s.port.snapshot.unauthenticated == 0 }
        #expect(s.edge.destination(of: s.id) != nil && s.port.snapshot.unauthenticated == 0, "the first connection passed its check")
        #expect(s.sendsOnItsPath(now: .seconds(1)))

        // The client resets it and connects again from the same IP and port; the new connection sends no check,
        // only what looks like DTLS.
        let address = first.local
        first.reset()
        let second = try s.connect(from: address)
        #expect(second.local == address)
        #expect(second.send([22, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 20)))
        s.pump(now: .seconds(2)) { s.port.snapshot.accepted == 2 && s.sources.count == 2 }
        #expect(s.sources.count == 2 && s.sources[1] != s.sources[0], "the second connection is another candidate")
        #expect(s.edge.router.drops(.unvalidatedAddress) == 1, "its frame is from an address no check validated")
        #expect(s.port.snapshot.unauthenticated == 1, "it waits for a check of its own")
        #expect(!s.sendsOnItsPath(now: .seconds(2)), "the transport's path is not moved onto it")

        // Unchecked, it is closed when its time is up.
        s.tick(now: .seconds(6.9))
        #expect(s.port.connectionCount == 1)
        s.tick(now: .seconds(7))
        #expect(s.port.connectionCount == 0 && s.port.snapshot.closed(.unauthenticatedTimeout) == 1)

        // A connection from that address that checks (and nominates) is the path.
        let third = try s.connect(from: address)
        #expect(third.send(s.checks.bindingRequest(nominate: true)))
        s.pump(now: .seconds(8)) { s.port.snapshot.accepted == 3 && s.port.snapshot.unauthenticated == 0 }
        #expect(s.port.snapshot.unauthenticated == 0 && s.sendsOnItsPath(now: .seconds(8)))
    }
}
