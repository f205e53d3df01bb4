import Foundation
@testable import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import Testing
import WebRTCEdge

/// The worker core's session model and transport lifecycle, on virtual time through a simulated network:
/// the real edge, DTLS, SRTP and rooms, no socket and no thread.
@Suite(.timeLimit(.minutes(1))) struct WorkerCoreTests {
    /// A publisher A talking and a subscriber B with one slot, both connected.
    func call(limits: WorkerLimits = .init(), consent: MonoTime.Interval = .seconds(30)) throws -> (VirtualNetwork, VirtualClient, VirtualClient) {
        let net = VirtualNetwork(limits: limits, consent: consent)
        try net.room.admit("A", now: net.now)
        try net.room.admit("B", now: net.now)
        let a = VirtualClient("10.0.1.1:5000"), b = VirtualClient("10.0.2.1:5000")
        try net.offer(a, participant: "A", publish: true)
        try net.offer(b, participant: "B", publish: false)
        net.connect(a)
        net.connect(b)
        #expect(a.tx != nil && b.rx != nil, "both handshakes finished")
        talk(net, a, ms: 2000)
        return (net, a, b)
    }

    /// A talks for `ms`, 20 ms packets, keeping consent fresh every 2.5 s as a browser does.
    func talk(_ net: VirtualNetwork, _ a: VirtualClient, ms: Int64, keepAlive: [VirtualClient] = []) {
        var elapsed: Int64 = 0
        net.advance(by: ms) {
            elapsed += 20
            net.send(a.audioPacket(), from: a)
            if elapsed % 2500 == 0 { for c in [a] + keepAlive { net.send(c.check(nominate: false), from: c) } }
        }
    }

    func sequenceNumbers(_ packets: [[UInt8]]) -> [UInt16] { packets.map { UInt16($0[2]) << 8 | UInt16($0[3]) } }

    @Test func anOfferWithTheSameCredentialsRenegotiatesWithoutANewHandshake() throws {
        let (net, a, b) = try call()
        let before = try SessionDescription.parse(try net.core.subscribe(room: "r", participant: "B", offer: b.offer(publish: false), now: net.now).sdp)
        let a2 = try net.offer(b, participant: "B", publish: false, slots: 2)
        #expect(a2.change == .renegotiated)
        let after = try SessionDescription.parse(a2.sdp)
        #expect(after.media.count == 2)
        #expect(after.media[0].attribute("ice-ufrag") == before.media[0].attribute("ice-ufrag"), "the node's ICE credentials stay")
        #expect(after.media[0].values("ssrc") == before.media[0].values("ssrc"), "slot 0 keeps its SSRC")
        #expect(net.core.connectionCount == 2)
        let received = b.rtp.count
        talk(net, a, ms: 1000)
        #expect(b.rtp.count - received >= 45, "media goes on with no new handshake")
        let seqs = sequenceNumbers(b.rtp)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "one continuous stream on slot 0")
    }

    @Test func newICECredentialsRestartICEWhileDTLSAndMediaGoOn() throws {
        let (net, a, b) = try call()
        let oldUfrag = b.checks!.remote.ufrag
        let oldCheck = b.check()
        b.ice = .random()
        let answer = try net.offer(b, participant: "B", publish: false)
        #expect(answer.change == .iceRestarted)
        #expect(b.checks!.remote.ufrag != oldUfrag, "the answer carries new node credentials")
        let refused = net.core.edge.drops.first { $0.reason == "stun_unknown_username" }!.count
        net.send(oldCheck, from: b)
        #expect(net.core.edge.drops.first { $0.reason == "stun_unknown_username" }!.count == refused + 1, "old credentials no longer answer")
        net.send(b.check(), from: b)
        #expect(b.checkAnswered, "checks with the new credentials are answered")
        let received = b.rtp.count
        talk(net, a, ms: 1000)
        #expect(b.rtp.count - received >= 45)
        #expect(net.core.connectionCount == 2)
    }

    @Test func aNewFingerprintReplacesTheTransportAndClosesTheOldOne() throws {
        let (net, a, b) = try call()
        let oldDTLS = try #require(b.dtls)
        b.startOver()
        b.address = TransportAddress("10.0.2.2:6000")!
        let old = VirtualClient("10.0.2.1:5000")
        old.dtls = oldDTLS
        net.join(old)
        let answer = try net.offer(b, participant: "B", publish: false)
        #expect(answer.change == .replaced)
        #expect(oldDTLS.state == .closed, "the old transport got DTLS close_notify")
        #expect(net.core.connectionCount == 2, "replaced, not piled up")
        net.connect(b)
        talk(net, a, ms: 1000)
        #expect(b.rtp.count >= 45, "the new transport carries the slot")
        #expect(old.rtp.isEmpty)
        #expect(!net.states(of: "B").contains { $0.0 == .disconnected }, "nobody is reported disconnected")
    }

    @Test func aTransportThatNeverFinishesItsHandshakeIsClosedAndReported() throws {
        let net = VirtualNetwork()
        try net.room.admit("C", now: net.now)
        let c = VirtualClient("10.0.3.1:5000")
        try net.offer(c, participant: "C", publish: true)
        #expect(net.core.connectionCount == 1 && net.core.edge.pendingHandshakes == 1)
        net.advance(by: 29_000, every: 500)
        #expect(net.core.connectionCount == 1)
        net.advance(by: 2_000, every: 500)
        #expect(net.core.connectionCount == 0 && net.core.edge.pendingHandshakes == 0)
        #expect(net.states(of: "C").contains { $0.0 == .disconnected && $0.1 == "no ICE connectivity check within 30 s" })
        #expect(net.core.transportCounters.handshakeTimeouts == 1)
    }

    @Test func consentExpiryStopsEverySendToTheVanishedClient() throws {
        let (net, a, b) = try call()
        // B vanishes: no more checks. A goes on talking and keeping its own consent fresh.
        var afterExpiry = 0
        var expired = false
        var elapsed: Int64 = 0
        net.advance(by: 40_000) {
            elapsed += 20
            net.send(a.audioPacket(), from: a)
            if elapsed % 2500 == 0 { net.send(a.check(nominate: false), from: a) }
            if !expired, net.states(of: "B").contains(where: { $0.1 == "ICE consent expired" }) { expired = true; afterExpiry = b.datagramsReceived }
        }
        #expect(expired, "participant_state disconnected: ICE consent expired")
        #expect(b.datagramsReceived == afterExpiry, "nothing is sent to B's address after its consent expired")
        #expect(net.strays == 0)
        #expect(net.core.connectionCount == 1, "B's transport is closed; A's stays")
        #expect(net.room.contains(participant: "B"), "B stays in the room and may offer again")
    }

    @Test func aReplayedNominationFromAnotherAddressDoesNotMoveTheDownlink() throws {
        let (net, a, b) = try call()
        let captured = try #require(b.lastCheck)
        let attacker = VirtualClient("10.0.9.9:6666")
        net.join(attacker)
        net.send(captured, from: attacker.address)
        #expect(attacker.datagramsReceived == 0, "no answer to the replay")
        #expect(net.core.edge.drops.first { $0.reason == "stun_replay" }!.count == 1)
        talk(net, a, ms: 500)
        #expect(attacker.datagramsReceived == 0, "the downlink stays with B")
        #expect(b.rtp.count > 100)
        // A fresh nomination from B's new address is roaming, and the downlink follows it.
        b.address = TransportAddress("10.0.2.9:7000")!
        net.send(b.check(), from: b)
        let received = b.rtp.count
        talk(net, a, ms: 500)
        #expect(b.rtp.count - received >= 20)
    }

    @Test func aClosedICETCPConnectionTakesItsPathAndTheNextConnectionMustNominate() throws {
        let net = VirtualNetwork()
        try net.room.admit("A", now: net.now)
        try net.room.admit("B", now: net.now)
        let a = VirtualClient("10.0.1.1:5000"), b = VirtualClient("10.0.2.1:5000")
        // B's transport runs over an ICE-TCP connection: its address as the port numbers it (RFC 6544).
        let first = b.address.over(tcp: true).on(connection: 1)
        b.address = first
        try net.offer(a, participant: "A", publish: true)
        try net.offer(b, participant: "B", publish: false)
        net.connect(a)
        net.connect(b)
        talk(net, a, ms: 1000)
        #expect(b.rtp.count > 30)
        // The shell closed the connection (the client reset it): the core is told, and nothing is sent for B.
        net.core.pathClosed(first, now: net.now)
        net.deliver()
        #expect(!net.core.edge.routes(first, now: net.now))
        #expect(net.states(of: "B").contains { $0.0 == .disconnected && $0.1 == "its ICE-TCP connection closed" })
        let heard = b.rtp.count
        b.address = first.on(connection: 2)  // the port's next connection from the same IP and port
        talk(net, a, ms: 500)
        #expect(b.rtp.count == heard, "a connection that has not checked gets nothing")
        net.send(b.check(), from: b)
        talk(net, a, ms: 500)
        #expect(b.rtp.count - heard >= 20, "its own nomination makes it the path")
        #expect(net.states(of: "B").last.map { $0.0 == .connected && $0.1 == nil } == true, "reported connected again")
        #expect(net.core.connectionCount == 2)
    }

    @Test func handshakesUnderWayAreCappedPerWorker() throws {
        var limits = WorkerLimits()
        limits.pendingHandshakes = 2
        let net = VirtualNetwork(limits: limits)
        for p in ["C", "D", "E"] { try net.room.admit(p, now: net.now) }
        try net.offer(VirtualClient("10.0.3.1:1"), participant: "C", publish: true)
        try net.offer(VirtualClient("10.0.3.2:1"), participant: "D", publish: true)
        #expect(throws: RoomError.self) { try net.offer(VirtualClient("10.0.3.3:1"), participant: "E", publish: true) }
        #expect(net.core.connectionCount == 2, "the refused offer left nothing behind")
    }

    @Test func anOfferOverTheSlotCapIsRefusedAndChangesNothing() throws {
        var limits = WorkerLimits()
        limits.room.slotsPerSubscription = 4
        let (net, _, b) = try call(limits: limits)
        do {
            try net.offer(b, participant: "B", publish: false, slots: 5)
            Issue.record("5 slots were accepted")
        } catch let e as RoomError {
            #expect(e.code == .limitReached && e.limit == "slots_per_subscription")
        }
        #expect(net.core.connectionCount == 2)
    }

    @Test func theClientClosingItsTransportIsReportedAndFreesIt() throws {
        let (net, _, b) = try call()
        for d in b.dtls!.close() { net.send(d, from: b) }
        #expect(net.core.connectionCount == 1)
        #expect(net.states(of: "B").contains { $0.0 == .disconnected && $0.1?.contains("close_notify") == true })
    }

    @Test func aClientThatChecksButNeverNominatesDoesNotStayForever() throws {
        let net = VirtualNetwork()
        try net.room.admit("C", now: net.now)
        let c = VirtualClient("10.0.3.1:5000")
        try net.offer(c, participant: "C", publish: true)
        net.send(c.check(nominate: false), from: c)  // a valid check, no USE-CANDIDATE
        for d in c.dtls!.start(now: net.now) { net.send(d, from: c) }
        #expect(c.tx != nil, "DTLS finished over the checked address")
        var elapsed: Int64 = 0
        net.advance(by: 31_000, every: 500) {  // it keeps consent fresh, and still never nominates
            elapsed += 500
            if elapsed % 2500 == 0 { net.send(c.check(nominate: false), from: c) }
        }
        #expect(net.core.connectionCount == 0)
        #expect(net.states(of: "C").contains { $0.1 == "no ICE nomination within 30 s" })
    }

    @Test func connectionIDsNeverCollideEvenAfterTheCounterWraps() throws {
        // Issue 23: ids were 32 bits stepped by 1,024 per worker; after about 4.2 million transports a new one
        // took a live one's id and the tables overwrote it. Start the counter just before the end of its range
        // so the next two ids wrap onto A's and B's.
        let (net, a, b) = try call()
        let live = net.core.room("r")!.sessions.all
        #expect(Set(live).count == 2)
        net.core.connectionIDs.next = UInt64.max - 1022  // the same residue as worker 0's ids, so the wrap hits them
        try net.room.admit("C", now: net.now)
        try net.room.admit("D", now: net.now)
        let c = VirtualClient("10.0.3.1:5000"), d = VirtualClient("10.0.4.1:5000")
        let ca = try net.offer(c, participant: "C", publish: false)
        let da = try net.offer(d, participant: "D", publish: false)
        #expect(ca.connection.raw == UInt64.max - 1022)
        #expect(!live.contains(da.connection) && da.connection != .none && da.connection != ca.connection,
                "the wrapped counter skips ids still in use (\(da.connection))")
        #expect(net.core.connectionCount == 4)
        net.connect(c)
        net.connect(d)
        let received = b.rtp.count
        talk(net, a, ms: 1000, keepAlive: [b, c, d])
        #expect(b.rtp.count - received >= 45, "B, whose id the counter passed again, still gets A")
        #expect(d.rtp.count >= 45 && c.rtp.count >= 45)
    }
}
