import Benchmark
import Foundation
import SFU
import WebRTCEdge

/// What a client costs the node at the edge: a DTLS handshake, and the memory of a connected client.
let benchmarks: @Sendable () -> Void = {
    let server = try! DTLSCertificate(commonName: "node")
    let client = try! DTLSCertificate(commonName: "client")

    /// Runs one handshake back to back; returns the node side's share of the CPU time (ns).
    @Sendable func handshake() -> (serverNanos: UInt64, totalNanos: UInt64) {
        let s = try! DTLSEndpoint(role: .server, certificate: server, remoteFingerprint: client.fingerprint)
        let c = try! DTLSEndpoint(role: .client, certificate: client, remoteFingerprint: server.fingerprint)
        var toServer = c.start(now: .zero)
        var serverNanos: UInt64 = 0
        let begin = DispatchTime.now().uptimeNanoseconds
        while !toServer.isEmpty {
            let t0 = DispatchTime.now().uptimeNanoseconds
            let toClient = toServer.flatMap { d in d.withUnsafeBytes { s.receive($0, now: .zero) } }
            serverNanos += DispatchTime.now().uptimeNanoseconds - t0
            toServer = toClient.flatMap { d in d.withUnsafeBytes { c.receive($0, now: .zero) } }
        }
        precondition(s.state == .connected && c.state == .connected)
        return (serverNanos, DispatchTime.now().uptimeNanoseconds - begin)
    }

    let nodeSide = BenchmarkMetric.custom("Node side of the handshake (µs)", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark("DTLS-SRTP handshake, ECDSA P-256, both ends in one process",
              configuration: .init(metrics: [.wallClock, .mallocCountTotal, nodeSide], maxDuration: .seconds(5), maxIterations: 300)) { benchmark in
        let r = handshake()
        benchmark.measurement(nodeSide, Int(r.serverNanos / 1000))
    }

    let perClient = BenchmarkMetric.custom("Resident memory per connected client (KB)", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark("Memory of 500 connected clients (ICE-lite agent, DTLS association, 2 SRTP sessions)",
              configuration: .init(metrics: [perClient], maxDuration: .seconds(60), maxIterations: 1)) { benchmark in
        func rssKB() -> Int {
            let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
            return (Int(statm.split(separator: " ")[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
        }
        let edge = WorkerEdge(certificate: server, candidates: [TransportAddress("127.0.0.1:10000")!])
        var sessions: [SRTPSession] = []
        let before = rssKB()
        for i in 0..<500 {
            let conn = ConnectionID(UInt32(i + 1))
            let local = edge.prepare(conn)
            let ice = ICECredentials.random()
            try! edge.attach(conn, remote: RemoteTransport(ufrag: ice.ufrag, password: ice.password, fingerprint: client.fingerprint))
            let from = TransportAddress(ip: .v4(0x0A00_0000 + UInt32(i)), port: 5000)
            let check = ICEControllingClient(local: ice, remote: local.ice).bindingRequest(nominate: true)
            _ = check.withUnsafeBytes { edge.receive($0, from: from, now: .zero) }
            let c = try! DTLSEndpoint(role: .client, certificate: client, remoteFingerprint: server.fingerprint)
            var toServer = c.start(now: .zero)
            var keys: DTLSEndpoint.SRTPKeys?
            while !toServer.isEmpty {
                var toClient: [[UInt8]] = []
                for d in toServer {
                    for o in d.withUnsafeBytes({ edge.receive($0, from: from, now: .zero) }) {
                        if case .send(let bytes, _) = o { toClient.append(bytes) }
                        if case .keys(_, let k) = o { keys = k }
                    }
                }
                toServer = toClient.flatMap { d in d.withUnsafeBytes { c.receive($0, now: .zero) } }
            }
            sessions.append(try! SRTPSession(keys: keys!.inbound, direction: .inbound))
            sessions.append(try! SRTPSession(keys: keys!.outbound, direction: .outbound))
        }
        benchmark.measurement(perClient, (rssKB() - before) / 500)
        blackHole(sessions)
        blackHole(edge)
    }
}
