import SFUMedia
import SFUSimulation
import Foundation
import SFU
import Testing
@testable import WebRTCEdge

/// DTLS-SRTP between the node's server endpoint and a client endpoint, wired back to back. OpenSSL runs the
/// DTLS timers on the real clock, so these tests pass real monotonic time and a 20 ms first timeout.
@Suite(.serialized) struct DTLSTests {
    static let serverCert = try! DTLSCertificate(commonName: "node")
    static let clientCert = try! DTLSCertificate(commonName: "client")

    static func realNow() -> MonoTime {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonoTime(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }

    struct Pair {
        let server: DTLSEndpoint
        let client: DTLSEndpoint
        var flights: [(toServer: Bool, count: Int)] = []
    }

    /// `timeout` is the first retransmission timeout: the RFC's 1 s unless a test loses flights on purpose (then
    /// 20 ms, so it waits little). On a loaded machine even 1 s may fire, so no test counts flights exactly.
    func pair(clientProfiles: [SRTPProfile] = DTLSEndpoint.defaultProfiles, serverExpects: DTLSFingerprint? = nil,
              timeout: MonoTime.Interval = .seconds(1)) throws -> Pair {
        let server = try DTLSEndpoint(role: .server, certificate: Self.serverCert,
                                      remoteFingerprint: serverExpects ?? Self.clientCert.fingerprint,
                                      initialRetransmitTimeout: timeout)
        let client = try DTLSEndpoint(role: .client, certificate: Self.clientCert, remoteFingerprint: Self.serverCert.fingerprint,
                                      profiles: clientProfiles, initialRetransmitTimeout: timeout)
        return Pair(server: server, client: client)
    }

    /// Runs the handshake, losing the flights whose numbers are in `lose` (1 = ClientHello, ...). When nothing
    /// is in flight, waits for the earliest retransmission timer and lets both ends retransmit.
    @discardableResult
    func run(_ p: inout Pair, lose: Set<Int> = [], maxSteps: Int = 200) -> Int {
        var inFlight: [(toServer: Bool, datagram: [UInt8])] = []
        var flightNo = 0
        var retransmissions = 0
        func send(_ out: [[UInt8]], toServer: Bool) {
            guard !out.isEmpty else { return }
            flightNo += 1
            p.flights.append((toServer, out.count))
            if lose.contains(flightNo) { return }
            inFlight += out.map { (toServer, $0) }
        }
        send(p.client.start(now: Self.realNow()), toServer: true)
        for _ in 0..<maxSteps {
            if p.server.state == .connected && p.client.state == .connected && inFlight.isEmpty { break }
            if case .failed = p.server.state { break }
            if case .failed = p.client.state { break }
            if inFlight.isEmpty {
                let deadline = min(p.server.nextDeadline, p.client.nextDeadline)
                guard deadline != .never else { break }
                let wait = deadline.nanoseconds - Self.realNow().nanoseconds
                if wait > 0 { usleep(UInt32(wait / 1000) + 1000) }
                let now = Self.realNow()
                let s = p.server.tick(now: now), c = p.client.tick(now: now)
                retransmissions += (s.isEmpty ? 0 : 1) + (c.isEmpty ? 0 : 1)
                send(s, toServer: false)
                send(c, toServer: true)
                continue
            }
            let (toServer, d) = inFlight.removeFirst()
            let out = d.withUnsafeBytes { (toServer ? p.server : p.client).receive($0, now: Self.realNow()) }
            send(out, toServer: !toServer)
        }
        return retransmissions
    }

    @Test func handshakeCompletesAndBothEndsExportTheSameKeys() throws {
        var p = try pair()
        run(&p)
        #expect(p.server.state == .connected && p.client.state == .connected)
        let s = try #require(p.server.keys), c = try #require(p.client.keys)
        #expect(s.profile == .aeadAES128GCM)
        #expect(s.inbound == c.outbound && s.outbound == c.inbound)
        #expect(s.inbound != s.outbound)
        #expect(p.server.peerFingerprint == Self.clientCert.fingerprint)
        #expect(Array(p.flights.map(\.toServer).prefix(4)) == [true, false, true, false],
                "ClientHello; ServerHello..Done; Certificate..Finished; Finished: \(p.flights)")
    }

    @Test func theServerChoosesGCMWhateverOrderTheClientOffers() throws {
        // Chrome lists AES_CM_128_HMAC_SHA1_80 first; the node, as DTLS server, prefers GCM.
        var p = try pair(clientProfiles: [.aesCM128HmacSHA1_80, .aeadAES256GCM, .aeadAES128GCM])
        run(&p)
        #expect(p.server.keys?.profile == .aeadAES128GCM)
        var legacy = try pair(clientProfiles: [.aesCM128HmacSHA1_80])
        run(&legacy)
        #expect(legacy.server.keys?.profile == .aesCM128HmacSHA1_80, "falls back when the client offers only AES-CM")
    }

    @Test func aCertificateThatDoesNotMatchTheSDPFingerprintIsRefused() throws {
        var p = try pair(serverExpects: DTLSFingerprint(bytes: [UInt8](repeating: 0xAB, count: 32)))
        run(&p)
        #expect(p.server.state == .failed("the peer's certificate does not match its SDP fingerprint"))
        #expect(p.server.keys == nil)
    }

    @Test func exportedKeysCarryMediaBothWays() throws {
        var p = try pair()
        run(&p)
        let s = try #require(p.server.keys), c = try #require(p.client.keys)
        let clientTx = try SRTPSession(keys: c.outbound, direction: .outbound)
        let serverRx = try SRTPSession(keys: s.inbound, direction: .inbound)
        let serverTx = try SRTPSession(keys: s.outbound, direction: .outbound)
        let clientRx = try SRTPSession(keys: c.inbound, direction: .inbound)
        for (tx, rx) in [(clientTx, serverRx), (serverTx, clientRx)] {
            var buf = [UInt8](repeating: 0, count: 300)
            let plain: [UInt8] = [0x80, 0x6F, 0, 1, 0, 0, 0, 160, 0, 0, 0, 42] + [UInt8](repeating: 7, count: 40)
            buf.replaceSubrange(0..<plain.count, with: plain)
            let n = try buf.withUnsafeMutableBytes { try tx.protectRTP($0, length: plain.count).get() }
            let m = try buf.withUnsafeMutableBytes { try rx.unprotectRTP($0, length: n).get() }
            #expect(Array(buf[0..<m]) == plain)
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func losingAnyHandshakeFlightIsRecoveredByRetransmission(_ flight: Int) throws {
        var p = try pair(timeout: .milliseconds(20))
        let retransmissions = run(&p, lose: [flight])
        #expect(p.server.state == .connected && p.client.state == .connected, "flight \(flight) lost")
        #expect(p.server.keys?.inbound == p.client.keys?.outbound)
        #expect(retransmissions >= 1 || flight == 4, "a timer retransmitted (the last flight is re-sent on demand)")
    }

    @Test func aFragmentedChromiumClientHelloGetsADTLS12ServerHello() throws {
        // Chromium 156 offers DTLS 1.3 and 1.2 in a ~1.46 kB ClientHello split over two datagrams.
        let url = try #require(Bundle.module.url(forResource: "chromium-156-clienthello", withExtension: "hex", subdirectory: "Fixtures"))
        let datagrams = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { hex(String($0)) }
        #expect(datagrams.count == 2)
        let server = try DTLSEndpoint(role: .server, certificate: Self.serverCert, remoteFingerprint: Self.clientCert.fingerprint)
        var replies: [[UInt8]] = []
        for d in datagrams { replies += d.withUnsafeBytes { server.receive($0, now: Self.realNow()) } }
        #expect(server.state == .handshaking)
        let hello = try #require(replies.first)
        #expect(hello[0] == 22 && hello[13] == 2, "a handshake record carrying ServerHello")
        #expect(hello[25] == 0xFE && hello[26] == 0xFD, "server_version DTLS 1.2")
    }

    @Test func garbageRecordsDoNotCrashOrComplete() throws {
        let server = try DTLSEndpoint(role: .server, certificate: Self.serverCert, remoteFingerprint: Self.clientCert.fingerprint)
        var rng = UInt64(42)
        for _ in 0..<2000 {
            rng = rng &* 6_364_136_223_846_793_005 &+ 1
            var d: [UInt8] = [22, 0xFE, 0xFD] + (0..<Int(rng % 300)).map { UInt8(truncatingIfNeeded: rng >> UInt64($0 % 50)) }
            d[Int(rng % UInt64(d.count))] ^= 0x5A
            _ = d.withUnsafeBytes { server.receive($0, now: Self.realNow()) }
        }
        #expect(server.state != .connected)
    }

    @Test func aCertificateLoadedFromPEMKeepsItsFingerprintAndWorks() throws {
        let (keyPEM, certPEM) = Self.serverCert.pem
        #expect(keyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----") && certPEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        let loaded = try DTLSCertificate(keyPEM: keyPEM, certificatePEM: certPEM)
        #expect(loaded.fingerprint == Self.serverCert.fingerprint)
        #expect(throws: DTLSCertificate.Failure.keyDoesNotMatchCertificate) {
            try DTLSCertificate(keyPEM: Self.clientCert.pem.key, certificatePEM: certPEM)
        }
        #expect(throws: DTLSCertificate.Failure.unreadablePEM) { try DTLSCertificate(keyPEM: "garbage", certificatePEM: certPEM) }
        let server = try DTLSEndpoint(role: .server, certificate: loaded, remoteFingerprint: Self.clientCert.fingerprint)
        let client = try DTLSEndpoint(role: .client, certificate: Self.clientCert, remoteFingerprint: Self.serverCert.fingerprint)
        var p = Pair(server: server, client: client)
        run(&p)
        #expect(p.server.state == .connected && p.client.state == .connected)
    }

    @Test func fingerprintsParseFromSDPAndRefuseWeakOrMalformedOnes() {
        let f = Self.serverCert.fingerprint
        #expect(DTLSFingerprint(sdp: f.description) == f)
        #expect(DTLSFingerprint(sdp: f.description.replacingOccurrences(of: "sha-256", with: "SHA-256")) == f)
        #expect(DTLSFingerprint(sdp: "sha-1 AB:CD") == nil)
        #expect(DTLSFingerprint(sdp: "sha-256 AB:CD") == nil)
        #expect(DTLSFingerprint(sdp: "sha-256 " + String(repeating: "ZZ:", count: 31) + "ZZ") == nil)
    }
}
