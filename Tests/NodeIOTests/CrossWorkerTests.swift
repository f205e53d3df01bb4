import Foundation
import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import Testing
import WebRTCEdge

/// A room spread across worker cores (issue 12): past `spreadRoomAfter` subscribers, new subscribers'
/// transports live on other workers, which answer their ICE, run their DTLS and send their media from their
/// own sockets, while the room stays on its home worker. Two real cores on virtual time, joined as the
/// workers' shells join them.
@Suite(.timeLimit(.minutes(1))) struct CrossWorkerTests {
    /// A publisher A talking and `subscribers` subscribers with one slot each, all connected; the room
    /// spreads after `spreadAfter` subscribers.
    func lecture(subscribers: Int, spreadAfter: Int = 2, workers: Int = 2) throws -> (VirtualNetwork, VirtualClient, [VirtualClient]) {
        var limits = WorkerLimits()
        limits.spreadRoomAfter = spreadAfter
        let net = VirtualNetwork(limits: limits, workers: workers)
        try net.room.admit("A", now: net.now)
        let a = VirtualClient("10.0.1.1:5000")
        try net.offer(a, participant: "A", publish: true)
        net.connect(a)
        var subs: [VirtualClient] = []
        for i in 0..<subscribers {
            try net.room.admit("S\(i)", now: net.now)
            let s = VirtualClient("10.0.2.\(i + 1):5000")
            try net.offer(s, participant: "S\(i)", publish: false)
            net.connect(s)
            subs.append(s)
        }
        talk(net, a, ms: 2000, keepAlive: subs)
        return (net, a, subs)
    }

    /// A talks for `ms`, 20 ms packets; everyone keeps consent fresh every 2.5 s as a browser does.
    func talk(_ net: VirtualNetwork, _ a: VirtualClient, ms: Int64, keepAlive: [VirtualClient] = []) {
        var elapsed: Int64 = 0
        net.advance(by: ms) {
            elapsed += 20
            net.send(a.audioPacket(), from: a)
            if elapsed % 2500 == 0 { for c in [a] + keepAlive { net.send(c.check(nominate: false), from: c) } }
        }
    }

    @Test func pastItsSpreadPointARoomPlacesEachNewSubscriberOnTheWorkerWithFewestOfThem() throws {
        let (net, _, subs) = try lecture(subscribers: 6)
        // Two at home, then the other worker until it has as many, then home first on a tie.
        #expect(subs.map { net.worker(of: $0) } == [0, 0, 1, 1, 0, 1])
        #expect(net.cores[1].hostedCount == 3)
        #expect(net.cores[1].rooms.isEmpty, "the room stays on its home worker")
        #expect(net.core.connectionCount == 7, "the home worker keeps every session")
    }

    @Test func aRoomThatNeverReachesItsSpreadPointStaysOnOneWorker() throws {
        let (net, _, subs) = try lecture(subscribers: 3, spreadAfter: 0)
        #expect(subs.allSatisfy { net.worker(of: $0) == 0 })
        #expect(net.cores[1].hostedCount == 0 && net.sentBy[1] == 0)
    }

    @Test func hostedSubscribersGetTheRoomsMediaFromTheirOwnWorkersSocket() throws {
        let (net, a, subs) = try lecture(subscribers: 4)
        let before = subs.map(\.rtp.count)
        let sentByHost = net.sentBy[1]
        talk(net, a, ms: 1000, keepAlive: subs)
        for (s, b) in zip(subs, before) {
            #expect(s.rtp.count - b >= 45, "every subscriber hears A, wherever its transport lives")
            let seqs = s.rtp.map { UInt16($0[2]) << 8 | UInt16($0[3]) }
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "one continuous stream")
        }
        #expect(net.sentBy[1] - sentByHost >= 90, "the host worker's socket sent its subscribers' media")
        #expect(net.fromWrongWorker == 0, "nothing reached a client from a socket its answer did not name")
        #expect(net.strays == 0)
        #expect(subs.allSatisfy { $0.undecryptable == 0 })
    }

    @Test func whatAHostedSubscriberSendsReachesTheRoomOnItsHomeWorker() throws {
        let (net, _, subs) = try lecture(subscribers: 3)
        let hosted = try #require(subs.first { net.worker(of: $0) == 1 })
        let ssrc = try #require(hosted.rtp.last.map { UInt32($0[8]) << 24 | UInt32($0[9]) << 16 | UInt32($0[10]) << 8 | UInt32($0[11]) })
        let rtcpBefore = net.room.counters.rtcpIn
        // A receiver report for its slot, as a browser sends every second or so.
        var rr: [UInt8] = [0x81, 201, 0x00, 0x07, 0x12, 0x34, 0x56, 0x78]
        rr += withUnsafeBytes(of: ssrc.bigEndian, Array.init) + [UInt8](repeating: 0, count: 20)
        net.send(try #require(hosted.protect(rr)), from: hosted)
        #expect(net.room.counters.rtcpIn == rtcpBefore + 1, "decrypted and taken in by the room, on the home worker")
        #expect(net.core.ingressDrops == 0 && net.cores[1].ingressDrops == 0)
    }

    @Test func removingAParticipantClosesItsHostedTransportOnTheHost() throws {
        let (net, a, subs) = try lecture(subscribers: 3)
        let hosted = try #require(subs.first { net.worker(of: $0) == 1 })
        let i = try #require(subs.firstIndex { $0 === hosted })
        #expect(try net.core.removeParticipant(room: "r", "S\(i)", by: nil, now: net.now) == 1)
        net.deliver()
        #expect(hosted.dtls?.state == .closed, "the host sent DTLS close_notify")
        #expect(net.cores[1].hostedCount == 0)
        let received = hosted.datagramsReceived
        talk(net, a, ms: 500, keepAlive: subs)
        #expect(hosted.datagramsReceived == received, "nothing more is sent to it")
    }

    @Test func destroyingTheRoomReleasesEveryHostedTransport() throws {
        let (net, _, subs) = try lecture(subscribers: 4)
        net.core.destroyRoom("r", now: net.now)
        net.deliver()
        #expect(net.cores[1].hostedCount == 0)
        #expect(subs.allSatisfy { $0.dtls?.state == .closed })
    }

    @Test func aHostedSubscriberWhoseConsentExpiresIsReportedAndReleased() throws {
        let (net, a, subs) = try lecture(subscribers: 3)
        let hosted = try #require(subs.first { net.worker(of: $0) == 1 })
        let i = try #require(subs.firstIndex { $0 === hosted })
        talk(net, a, ms: 40_000, keepAlive: subs.filter { $0 !== hosted })
        #expect(net.states(of: "S\(i)").contains { $0.0 == .disconnected && $0.1 == "ICE consent expired" })
        #expect(net.cores[1].hostedCount == 0, "the host let go of it")
        #expect(net.core.connectionCount == 3, "A and the two others stay")
    }

    @Test func aHostedTransportThatNeverHandshakesIsClosedWithTheReasonTheHostSaw() throws {
        let (net, _, subs) = try lecture(subscribers: 2)
        try net.room.admit("Q", now: net.now)
        try net.room.admit("R", now: net.now)
        let q = VirtualClient("10.0.3.1:5000"), r = VirtualClient("10.0.3.2:5000")
        try net.offer(q, participant: "Q", publish: false)
        try net.offer(r, participant: "R", publish: false)
        #expect(net.worker(of: q) == 1 && net.worker(of: r) == 1)
        net.send(r.check(), from: r)  // checks, never starts DTLS
        #expect(r.checkAnswered, "the host answers with the credentials the home's answer gave")
        net.advance(by: 31_000, every: 500) { for c in subs { if net.now.nanoseconds % 2_500_000_000 == 0 { net.send(c.check(nominate: false), from: c) } } }
        #expect(net.states(of: "Q").contains { $0.0 == .disconnected && $0.1 == "no ICE connectivity check within 30 s" })
        #expect(net.states(of: "R").contains { $0.0 == .disconnected && $0.1 == "DTLS did not complete within 30 s" })
        #expect(net.cores[1].hostedCount == 0 && net.cores[1].edge.pendingHandshakes == 0)
    }

    @Test func anICERestartOfAHostedTransportKeepsItsMediaOnTheHost() throws {
        let (net, a, subs) = try lecture(subscribers: 3)
        let hosted = try #require(subs.first { net.worker(of: $0) == 1 })
        let i = try #require(subs.firstIndex { $0 === hosted })
        hosted.ice = .random()
        let answer = try net.offer(hosted, participant: "S\(i)", publish: false)
        #expect(answer.change == .iceRestarted)
        #expect(net.worker(of: hosted) == 1, "it stays on its host")
        net.send(hosted.check(), from: hosted)
        #expect(hosted.checkAnswered, "the host answers the new credentials")
        let received = hosted.rtp.count
        talk(net, a, ms: 1000, keepAlive: subs)
        #expect(hosted.rtp.count - received >= 45)
    }

    @Test func aHostedSubscriberThatStartsOverIsReplacedAndItsOldTransportReleased() throws {
        let (net, a, subs) = try lecture(subscribers: 3)
        let hosted = try #require(subs.first { net.worker(of: $0) == 1 })
        let i = try #require(subs.firstIndex { $0 === hosted })
        let oldDTLS = try #require(hosted.dtls)
        let old = VirtualClient(hosted.address.description)
        old.dtls = oldDTLS
        old.server = hosted.server
        hosted.startOver()
        hosted.address = TransportAddress("10.0.4.1:6000")!
        net.join(old)
        let answer = try net.offer(hosted, participant: "S\(i)", publish: false)
        #expect(answer.change == .replaced)
        #expect(oldDTLS.state == .closed, "the host sent the old transport DTLS close_notify")
        net.connect(hosted)
        #expect(net.cores[1].hostedCount + (net.worker(of: hosted) == 0 ? 1 : 0) == 1, "one transport for it, wherever placed")
        let received = hosted.rtp.count
        talk(net, a, ms: 1000, keepAlive: subs)
        #expect(hosted.rtp.count - received >= 45, "the new transport carries its slot")
    }

    @Test func handshakesAWorkerHostsCountAtTheRoomsWorkerNotAtTheHost() throws {
        let (net, _, _) = try lecture(subscribers: 2)
        try net.room.admit("Q", now: net.now)
        let q = VirtualClient("10.0.3.1:5000")
        try net.offer(q, participant: "Q", publish: false)
        #expect(net.worker(of: q) == 1)
        #expect(net.cores[1].edge.pendingHandshakes == 1, "the host runs the handshake")
        #expect(net.cores[1].pendingHandshakes == 0, "but its own offers are not refused for it")
        #expect(net.core.pendingHandshakes == 1, "the room's worker counts it against its limit")
    }
}
