import SFU
import Testing
@testable import WebRTCEdge

@Suite struct ICELiteTests {
    let node = ICECredentials(ufrag: "nodeUfrg", password: "nodePasswordNodePassword")
    let client = ICECredentials(ufrag: "cli1", password: "clientPasswordClientPass")
    let wifi = TransportAddress("192.168.1.20:50000")!
    let lte = TransportAddress("10.20.30.40:61000")!
    let rtp: [UInt8] = [0x80, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]

    func setUp() -> (EdgeRouter, ICELiteAgent, ICEControllingClient) {
        let router = EdgeRouter()
        let agent = ICELiteAgent(local: node, remoteUfrag: client.ufrag)
        router.add(ConnectionID(7), agent: agent)
        return (router, agent, ICEControllingClient(local: client, remote: node))
    }

    func route(_ r: EdgeRouter, _ bytes: [UInt8], from: TransportAddress, at ms: Int64) -> EdgeRouter.Route {
        bytes.withUnsafeBytes { r.route($0, from: from, now: .milliseconds(ms)) }
    }

    @Test func aNominatedUDPPairWithFreshChecksKeepsItsPlaceAgainstATCPNomination() {
        // Firefox nominates aggressively: USE-CANDIDATE on its checks of every pair, its TCP pair too. The
        // node's UDP candidate outranks its TCP one (RFC 8445 section 8.1.1: the highest-priority nominated pair).
        let (router, agent, c) = setUp()
        let tcp = TransportAddress(ip: wifi.ip, port: 40_000, tcp: true)
        #expect(agent.currentAddress == nil)
        _ = route(router, c.bindingRequest(nominate: false), from: tcp, at: 0)
        _ = route(router, c.bindingRequest(nominate: false), from: wifi, at: 5)
        _ = route(router, c.bindingRequest(nominate: false), from: tcp, at: 10)
        #expect(agent.currentAddress == wifi, "before a nomination: the checked UDP pair, not the latest check")
        _ = route(router, c.bindingRequest(nominate: true), from: wifi, at: 20)
        _ = route(router, c.bindingRequest(nominate: true), from: tcp, at: 30)
        #expect(agent.selected == wifi, "UDP checked 10 ms ago stays")
        _ = route(router, c.bindingRequest(nominate: true), from: tcp, at: 9_000)
        #expect(agent.selected == wifi, "still within disconnectedAfter")
        _ = route(router, c.bindingRequest(nominate: true), from: tcp, at: 10_100)
        #expect(agent.selected == tcp, "UDP gone quiet: the TCP nomination takes over")
        _ = route(router, c.bindingRequest(nominate: true), from: wifi, at: 10_200)
        #expect(agent.selected == wifi, "and UDP back outranks it again")
        _ = route(router, c.bindingRequest(nominate: true), from: lte, at: 10_300)
        #expect(agent.selected == lte, "a UDP nomination follows the latest, as a roaming client's")
    }

    @Test func aClosedTCPConnectionsChecksDieWithItAndConsentRunsOnFromTheLastOne() {
        // RFC 6544: each TCP connection is a candidate pair of its own; the port numbers them.
        let (router, agent, c) = setUp()
        let first = TransportAddress(ip: wifi.ip, port: 40_000, tcp: true, connection: 1)
        _ = route(router, c.bindingRequest(nominate: true), from: first, at: 0)
        _ = route(router, c.bindingRequest(nominate: true), from: first, at: 2_000)
        #expect(agent.selected == first && agent.state == .connected)
        _ = agent.drainEvents()
        #expect(router.forget(first) === router.record(ConnectionID(7)))
        #expect(agent.selected == nil && agent.state == .disconnected && agent.drainEvents() == [.selectedPathClosed(first)])
        #expect(route(router, rtp, from: first, at: 2_100) == .dropped(.unvalidatedAddress))
        let next = first.on(connection: 2)
        #expect(route(router, rtp, from: next, at: 2_100) == .dropped(.unvalidatedAddress), "the next connection must check")
        // Never nominated again: consent fails 30 s after the closed connection's last check.
        agent.tick(now: .milliseconds(31_900))
        #expect(agent.state == .disconnected)
        agent.tick(now: .milliseconds(32_000))
        #expect(agent.state == .failed)
        // One that checks and nominates on its next connection within that time goes on there.
        let (router2, agent2, c2) = setUp()
        _ = route(router2, c2.bindingRequest(nominate: true), from: first, at: 0)
        _ = router2.forget(first)
        _ = route(router2, c2.bindingRequest(nominate: true), from: next, at: 1_000)
        #expect(agent2.selected == next && agent2.state == .connected && route(router2, rtp, from: next, at: 1_010) == .media(ConnectionID(7)))
    }

    @Test func validCheckIsAnsweredAndValidatesItsAddress() {
        let (router, agent, c) = setUp()
        #expect(route(router, rtp, from: wifi, at: 0) == .dropped(.unvalidatedAddress), "media before a check is dropped")
        let tid = ICEControllingClient.randomTransactionID()
        guard case .reply(let response, let conn) = route(router, c.bindingRequest(nominate: false, transactionID: tid), from: wifi, at: 10)
        else { Issue.record("no reply"); return }
        #expect(conn == ConnectionID(7))
        #expect(c.check(response: response, transactionID: tid) == .success(mapped: wifi))
        #expect(route(router, rtp, from: wifi, at: 20) == .media(ConnectionID(7)))
        #expect(route(router, [22, 0xFE, 0xFD], from: wifi, at: 20) == .dtls(ConnectionID(7)))
        #expect(route(router, rtp, from: lte, at: 20) == .dropped(.unvalidatedAddress))
        #expect(agent.state == .new, "not connected until nominated")
    }

    @Test func nominationConnectsAndRoamingFollowsTheNewNomination() {
        let (router, agent, c) = setUp()
        _ = route(router, c.bindingRequest(nominate: true), from: wifi, at: 0)
        #expect(agent.state == .connected && agent.selected == wifi)
        _ = route(router, c.bindingRequest(nominate: true), from: lte, at: 5_000)
        #expect(agent.selected == lte)
        #expect(agent.drainEvents() == [.selectedAddressChanged(wifi), .stateChanged(.connected), .selectedAddressChanged(lte)])
        #expect(route(router, rtp, from: lte, at: 5_010) == .media(ConnectionID(7)))
    }

    @Test func refusesWrongPasswordUnknownUserAndBadFingerprint() {
        let (router, _, c) = setUp()
        var wrongPassword = c
        wrongPassword.remote.password = "not-the-password-at-all"
        #expect(route(router, wrongPassword.bindingRequest(nominate: true), from: wifi, at: 0) == .dropped(.stunUnauthenticated))
        var stranger = c
        stranger.remote.ufrag = "nobody"
        #expect(route(router, stranger.bindingRequest(nominate: true), from: wifi, at: 0) == .dropped(.stunUnknownUsername))
        var wrongRemote = c
        wrongRemote.local.ufrag = "other"
        #expect(route(router, wrongRemote.bindingRequest(nominate: true), from: wifi, at: 0) == .dropped(.stunUnknownUsername))
        var corrupt = c.bindingRequest(nominate: true)
        corrupt[corrupt.count - 1] ^= 1
        #expect(route(router, corrupt, from: wifi, at: 0) == .dropped(.stunBadFingerprint))
        #expect(route(router, rtp, from: wifi, at: 1) == .dropped(.unvalidatedAddress))
        #expect(router.drops(.stunUnauthenticated) == 1 && router.drops(.stunUnknownUsername) == 2)
    }

    @Test func consentLapsesToDisconnectedThenFailed() {
        let (router, agent, c) = setUp()
        _ = route(router, c.bindingRequest(nominate: true), from: wifi, at: 0)
        _ = agent.drainEvents()
        router.tick(now: .seconds(9))
        #expect(agent.state == .connected)
        router.tick(now: .seconds(11))
        #expect(agent.state == .disconnected)
        // A check in time brings it back.
        _ = route(router, c.bindingRequest(nominate: false), from: wifi, at: 12_000)
        #expect(agent.state == .connected)
        router.tick(now: .seconds(41))
        #expect(agent.state == .disconnected)
        #expect(agent.nextDeadline == .seconds(42))
        router.tick(now: .seconds(42))
        #expect(agent.state == .failed)
        #expect(agent.drainEvents() == [.stateChanged(.disconnected), .stateChanged(.connected), .stateChanged(.disconnected), .stateChanged(.failed)])
        #expect(route(router, rtp, from: wifi, at: 42_001) == .dropped(.unvalidatedAddress))
    }

    @Test func checksOnAnUnnominatedPathDoNotReconnectAQuietSelectedPath() {
        let (router, agent, c) = setUp()
        _ = route(router, c.bindingRequest(nominate: true), from: wifi, at: 0)
        router.tick(now: .seconds(11))
        #expect(agent.state == .disconnected)
        _ = agent.drainEvents()
        // The client checks another path without nominating it: media still goes to wifi, which stays quiet.
        _ = route(router, c.bindingRequest(nominate: false), from: lte, at: 12_000)
        #expect(agent.state == .disconnected && agent.selected == wifi)
        router.tick(now: .seconds(13))
        #expect(agent.drainEvents().isEmpty, "no connected-disconnected flapping: each flap reached the room as participant_state")
        _ = route(router, c.bindingRequest(nominate: true), from: lte, at: 14_000)
        #expect(agent.state == .connected && agent.selected == lte)
    }

    @Test func peerClaimingTheControlledRoleGetsRoleConflict() {
        let (router, _, c) = setUp()
        let tid = ICEControllingClient.randomTransactionID()
        var b = STUNMessageBuilder(class: .request, transactionID: tid)
        b.add(STUNMessage.Attribute.username, Array("\(node.ufrag):\(client.ufrag)".utf8))
        b.add(STUNMessage.Attribute.iceControlled, u64: 1)
        b.addMessageIntegrity(key: Array(node.password.utf8))
        b.addFingerprint()
        guard case .reply(let response, _) = route(router, b.bytes, from: wifi, at: 0) else { Issue.record("no reply"); return }
        #expect(c.check(response: response, transactionID: tid) == .error(code: 487))
        #expect(route(router, rtp, from: wifi, at: 1) == .dropped(.unvalidatedAddress))
    }

    @Test func twoClientsOnOnePortAreToldApart() {
        let router = EdgeRouter()
        let other = ICECredentials(ufrag: "node2ufr", password: "secondNodePasswordSecond")
        router.add(ConnectionID(1), agent: ICELiteAgent(local: node))
        router.add(ConnectionID(2), agent: ICELiteAgent(local: other))
        let c1 = ICEControllingClient(local: client, remote: node)
        let c2 = ICEControllingClient(local: ICECredentials(ufrag: "cli2", password: "x"), remote: other)
        guard case .reply(_, let a) = route(router, c1.bindingRequest(nominate: true), from: wifi, at: 0),
              case .reply(_, let b) = route(router, c2.bindingRequest(nominate: true), from: lte, at: 0) else {
            Issue.record("no reply"); return
        }
        #expect(a == ConnectionID(1) && b == ConnectionID(2))
        #expect(route(router, rtp, from: wifi, at: 1) == .media(ConnectionID(1)))
        #expect(route(router, rtp, from: lte, at: 1) == .media(ConnectionID(2)))
        router.remove(ConnectionID(1))
        #expect(route(router, rtp, from: wifi, at: 2) == .dropped(.unvalidatedAddress))
    }

    @Test func randomCredentialsMeetTheSDPGrammar() {
        let c = ICECredentials.random()
        #expect(c.ufrag.count >= 4 && c.password.count >= 22)
        #expect(c != ICECredentials.random())
        #expect((c.ufrag + c.password).allSatisfy { ICECredentials.iceChars.contains($0) })
    }

    @Test func garbageNeverCrashesTheRouter() {
        let (router, _, c) = setUp()
        var rng = UInt64(0x9E37_79B9_7F4A_7C15)
        let valid = c.bindingRequest(nominate: true)
        for i in 0..<20_000 {
            rng = rng &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            var d = i % 2 == 0 ? valid : (0..<Int(rng % 200)).map { UInt8(truncatingIfNeeded: rng >> UInt64($0 % 56)) }
            if !d.isEmpty { d[Int(rng % UInt64(d.count))] ^= UInt8(truncatingIfNeeded: rng >> 8) }
            _ = route(router, d, from: wifi, at: Int64(i))
        }
        #expect(router.drops.reduce(0, +) > 10_000)
    }
}
