import Foundation
import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// The `edge` target: a `WorkerCore` on virtual time with one room and four connected transports (A and B
/// each publish and subscribe; ICE, DTLS and SRTP done once at set-up, as a browser would). Each input is a
/// sequence of datagrams per connection - connectivity checks (nominating, roaming, replayed by an attacker),
/// DTLS records, RTP and RTCP protected with the client's real SRTP keys, raw bytes from the client or an
/// attacker - and time steps, delivered to `core.receive` with `core.tick` as time moves.
///
/// Promises, after every step: no crash; every datagram is accounted for exactly once (`FuzzNetwork.inject`);
/// media for a connection only goes to an address its client nominated with a valid check; a check replayed
/// from another address is not answered and does not move the downlink; the core holds no more transports
/// than it was given, and each agent no more validated addresses than its client checked from within the
/// consent lifetime; counters never go back, and the transports the core holds are those it created less
/// those it closed, by reason (handshake timeout, consent, DTLS failure, close_notify, SRTP set-up).
///
/// State carries over between inputs (a DTLS handshake per transport per input would cost more than the
/// input): a transport the core closed (consent expired, DTLS failed, close_notify) is offered again and
/// reconnected as a client that starts over does, and the core is rebuilt every `resetEvery` inputs
/// (environment `SFU_FUZZ_EDGE_RESET`) or when anything else broke, so state never accumulates without
/// bound and a finding replays from at most that many inputs; `SFU_FUZZ_EDGE_RESET=1` makes every input
/// stand alone.
public final class FuzzEdge {
    nonisolated(unsafe) public static let shared = FuzzEdge()
    public var resetEvery = Int(ProcessInfo.processInfo.environment["SFU_FUZZ_EDGE_RESET"] ?? "") ?? 128
    public private(set) var resets = 0
    /// `SFU_FUZZ_TRACE=1`: each operation on standard error, to read a finding.
    let trace = ProcessInfo.processInfo.environment["SFU_FUZZ_TRACE"] != nil

    var net: FuzzNetwork!
    var clients: [FuzzClient] = []
    /// SSRCs an input may name by index (byte 0x5F5F5FNN in RTCP): published tracks, slots, a stranger's.
    var ssrcs: [UInt32] = []
    var sequence: [UInt32: UInt16] = [:]
    var timestamp: [UInt32: UInt32] = [:]
    var inputs = 0
    /// What each client offers at set-up (participant, direction, SDP), and its transport.
    var offers: [(String, Bool, String)] = []
    var connections: [ConnectionID] = []
    var transactionCounter: UInt64 = 0
    /// Where an attacker on the path replays captured checks and sends garbage from; no client ever goes there.
    static let attacker = TransportAddress(ip: .v4(0xC633_6442), port: 6666)
    /// Other strangers: one on IPv6, one on a client's own host (another port), one on the node's network.
    static let strangers = [attacker, TransportAddress(ip: .v6(0x2001_0DB8_0000_0000, 0x66), port: 6666),
                            TransportAddress(ip: .v4(0x0A01_0001), port: 5999), TransportAddress(ip: .v4(0x0A00_0002), port: 10000)]
    /// Counters as they were after the last step: none may go back.
    var lastCounters: [UInt64] = []
    static let steps: [Int64] = [0, 5, 20, 100, 1_000, 3_000, 12_000, 31_000]

    init() {}

    /// A room "r" with A (moderator) and B; A publishes Opus + VP8 with RTX bound by SSRC, B publishes Opus
    /// bound by the MID extension; A subscribes to 1 audio + 1 video slot, B to 2 + 1.
    func setUp() {
        resets += 1
        if trace { FileHandle.standardError.write("edge: set-up\n".data(using: .utf8)!) }
        net = FuzzNetwork()
        let room = try! Room(name: "r", now: net.now)
        net.core.addRoom(room)
        try! room.admit("A", role: .moderator, now: net.now)
        try! room.admit("B", now: net.now)
        clients = (0..<4).map { i in
            FuzzClient(address: TransportAddress(ip: .v4(0x0A01_0001 + UInt32(i) << 8), port: 5000),
                       ice: FuzzICE.credentials[i], identity: i)
        }
        func media(_ video: Bool, _ mid: String, _ dir: String, _ configure: (inout FuzzOffer.Media) -> Void = { _ in }) -> FuzzOffer.Media {
            var m = FuzzOffer.Media(video: video, mid: mid, direction: dir)
            configure(&m)
            return m
        }
        var pubA = FuzzOffer(ice: clients[0].ice, fingerprint: clients[0].fingerprint)
        pubA.media = [media(false, "0", "sendonly") { $0.ssrc = 0x1111_0001; $0.levelExtension = 1; $0.midExtension = 4 },
                      media(true, "1", "sendonly") { $0.ssrc = 0x1111_0002; $0.rtxSSRC = 0x1111_0003; $0.rtxPayloadType = 97; $0.midExtension = 4 }]
        var pubB = FuzzOffer(ice: clients[1].ice, fingerprint: clients[1].fingerprint)
        pubB.media = [media(false, "0", "sendonly") { $0.levelExtension = 1; $0.midExtension = 4 }]
        var subA = FuzzOffer(ice: clients[2].ice, fingerprint: clients[2].fingerprint)
        subA.media = [media(false, "0", "recvonly") { $0.levelExtension = 1 }, media(true, "1", "recvonly")]
        var subB = FuzzOffer(ice: clients[3].ice, fingerprint: clients[3].fingerprint)
        subB.media = [media(false, "0", "recvonly") { $0.levelExtension = 1 }, media(false, "1", "recvonly") { $0.levelExtension = 1 },
                      media(true, "2", "recvonly")]
        offers = [("A", true, pubA.text), ("B", true, pubB.text), ("A", false, subA.text), ("B", false, subB.text)]
        connections = []
        for i in clients.indices {
            connect(i)
            precondition(clients[i].connected, "edge fuzz set-up: transport \(i) did not connect")
        }
        sequence = [:]
        timestamp = [:]
        inputs = 0
        lastCounters = []
    }

    /// Offers client `i`'s transport and connects it (ICE, DTLS); the SSRCs an input names follow its slots.
    func connect(_ i: Int) {
        let (who, publish, text) = offers[i]
        let answer = try! net.offer(clients[i], room: "r", participant: who, publish: publish, text: text).answer
        if connections.count > i { connections[i] = answer.connection } else { connections.append(answer.connection) }
        net.connect(clients[i])
        ssrcs = [0x1111_0001, 0x1111_0002, 0x1111_0003, 0x2222_0001, 0xDEAD_BEEF]
        ssrcs += clients[2].slotSSRCs.sorted { $0.key < $1.key }.map(\.value) + clients[3].slotSSRCs.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Whether the set-up still stands: every transport in the table and connected.
    var intact: Bool {
        guard let net else { return false }
        return net.core.connectionCount == 4 && clients.allSatisfy { $0.connected }
    }

    /// A transport the core closed (consent expired, DTLS failed or closed by the client) is offered again
    /// and reconnected, as a client that starts over does; anything else broken means a new set-up.
    func repair() {
        for i in clients.indices where net.core.edge.router.agent(connections[i]) == nil {
            if trace { FileHandle.standardError.write("edge: client \(i) starts over \(net.core.transportCounters)\n".data(using: .utf8)!) }
            clients[i].dtls = nil
            connect(i)
        }
    }

    public func feed(_ data: UnsafeRawBufferPointer) {
        if net != nil, inputs < resetEvery, !intact { repair() }
        if net == nil || inputs >= resetEvery || !intact { setUp() }
        inputs += 1
        var r = FuzzReader(data)
        var ops = 0
        while !r.isEmpty, ops < 64 {
            ops += 1
            step(&r)
            checkInvariants()
        }
    }

    func checkInvariants() {
        let core = net.core
        promise(net.misdirected == nil, net.misdirected ?? "")
        promise(core.connectionCount <= 4 && core.edge.router.count == core.connectionCount,
                "the core holds \(core.connectionCount) transports, its router \(core.edge.router.count); it was given 4")
        promise(core.edge.pendingHandshakes <= core.connectionCount, "\(core.edge.pendingHandshakes) handshakes pending")
        let room = core.room("r")!
        promise(room.participantCount == 2 && Set(room.sessions.all) == Set(connections.filter { core.edge.router.agent($0) != nil }),
                "the room routes \(room.sessions.all), the core \(connections.filter { core.edge.router.agent($0) != nil })")
        let lifetime = MonoTime.Interval(nanoseconds: core.edge.consentTimeout.nanoseconds + 2_000_000_000)  // pruned at the next once-a-second tick
        for (i, c) in clients.enumerated() {
            guard let agent = core.edge.router.agent(connections[i]) else { continue }
            let recent = c.checkedFrom.filter { net.now - $0.value < lifetime }.count
            promise(agent.validatedAddresses.count <= recent,
                    "client \(i)'s agent holds \(agent.validatedAddresses.count) validated addresses; it checked from \(recent) lately")
        }
        let t = core.transportCounters
        let closed = t.handshakeTimeouts + t.consentExpiries + t.dtlsFailures + t.closedByClient + t.srtpSetupFailures
        promise(UInt64(core.connectionCount) + closed == t.created,
                "\(core.connectionCount) transports held, \(t.created) created, \(closed) closed: \(t)")
        let counters = [t.created, t.renegotiated, t.iceRestarts, t.replaced, t.dtlsHandshakes, t.dtlsFailures, t.handshakeTimeouts,
                        t.consentExpiries, t.closedByClient, t.srtpSetupFailures, core.ingressDrops,
                        room.counters.packetsIn, room.counters.packetsOut, room.counters.rtcpIn, room.counters.rtcpOut,
                        room.counters.retransmissions, room.counters.drops.total]
            + core.edge.drops.map { UInt64($0.count) }
        if !lastCounters.isEmpty {
            for (i, (a, b)) in zip(lastCounters, counters).enumerated() { promise(b >= a, "counter \(i) went back from \(a) to \(b)") }
        }
        lastCounters = counters
    }

    func step(_ r: inout FuzzReader) {
        let h = r.u8()
        let c = clients[Int(h & 3)]
        if trace {
            let kinds = ["check", "replay", "rtp", "rtcp", "dtls", "raw", "attacker-raw", "time"]
            FileHandle.standardError.write("edge: client \(h & 3) at \(c.address) \(kinds[Int(h >> 2) & 7]) t=\(net.now)\n".data(using: .utf8)!)
        }
        switch (h >> 2) & 7 {
        case 0: check(c, &r)
        case 1: replay(c)
        case 2: rtp(c, &r)
        case 3: rtcp(c, &r)
        case 4: dtls(c, &r)
        case 5: net.send(r.chunk(), from: c.address)
        case 6:
            let from = Self.strangers[r.index(Self.strangers.count)]
            net.send(r.chunk(), from: from)
        default:
            // Time passes; clients keep consent fresh every 5 s (RFC 7675), but this op's client has vanished
            // when the high bit is set.
            let s = r.u8()
            var left = Self.steps[Int(s & 7)] + Int64(r.u8())
            repeat {
                let slice = min(left, 5_000)
                net.advance(by: slice)
                left -= slice
                for k in clients where k.connected && !(k === c && s & 0x80 != 0) { net.check(k, nominate: false) }
            } while left > 0
        }
    }

    /// A valid check from the client's address, a neighbouring port or another network (roaming there when
    /// it nominates), with a fresh transaction ID or one of a small pool (so one ID comes from two places).
    func check(_ c: FuzzClient, _ r: inout FuzzReader) {
        let f = r.u8()
        let from: TransportAddress
        switch (f >> 1) & 3 {
        case 1: from = TransportAddress(ip: c.address.ip, port: c.address.port &+ 1)
        case 2: from = TransportAddress(ip: .v4(0xCB00_7100 + UInt32(clients.firstIndex { $0 === c }!)), port: 40000)
        default: from = c.address
        }
        var tid: [UInt8]
        if f & 0x08 != 0 {
            tid = [UInt8](repeating: 0x33, count: 11) + [f >> 4]
        } else {
            transactionCounter += 1
            tid = [0x46, 0x5A, 0, 0] + withUnsafeBytes(of: transactionCounter.bigEndian) { Array($0) }
        }
        net.check(c, nominate: f & 1 == 1, from: from, transactionID: tid)
    }

    /// The client's last check, captured on the path and sent again from the attacker's address, where no
    /// check ever came from: unanswered, and the downlink stays.
    func replay(_ c: FuzzClient) {
        guard let captured = c.lastCheck, let conn = net.owners.first(where: { $0.value === c })?.key else { return }
        let before = net.core.destination(of: conn)
        let strays = net.strays[Self.attacker] ?? 0
        net.send(captured, from: Self.attacker)
        promise((net.strays[Self.attacker] ?? 0) == strays, "a check replayed from another address was answered")
        promise(net.core.destination(of: conn) == before, "a replayed check moved the downlink to \(String(describing: net.core.destination(of: conn)))")
    }

    func ssrc(_ i: UInt8) -> UInt32 { ssrcs[Int(i) % ssrcs.count] }

    /// An RTP packet from the input's header bytes, extensions and payload; SSRC (by index), sequence number
    /// (a per-SSRC counter moved by the input: 0 repeats one) and timestamp set by the target, then protected.
    func rtp(_ c: FuzzClient, _ r: inout FuzzReader) {
        let s = ssrc(r.u8())
        let seqStep = UInt16(r.u8())
        let tsStep = UInt32(r.u16())
        var p = r.chunk()
        if p.count < 12 { p += [UInt8](repeating: 0, count: 12 - p.count) }
        let seq = (sequence[s] ?? 1000) &+ seqStep
        let ts = (timestamp[s] ?? 50_000) &+ tsStep &* 10
        sequence[s] = seq
        timestamp[s] = ts
        p[0] = (p[0] & 0x3F) | 0x80
        p[2] = UInt8(seq >> 8); p[3] = UInt8(seq & 0xFF)
        for i in 0..<4 { p[4 + i] = UInt8(truncatingIfNeeded: ts >> (24 - 8 * UInt32(i))) }
        for i in 0..<4 { p[8 + i] = UInt8(truncatingIfNeeded: s >> (24 - 8 * UInt32(i))) }
        if let d = c.protect(p) { net.send(d, from: c.address) }
    }

    /// An RTCP compound from the input, version fixed and every word 0x5F5F5FNN replaced by SSRC NN, protected.
    func rtcp(_ c: FuzzClient, _ r: inout FuzzReader) {
        var p = r.chunk()
        guard p.count >= 8 else { return }
        p[0] = (p[0] & 0x3F) | 0x80
        var o = 0
        while o + 4 <= p.count {
            if p[o] == 0x5F, p[o + 1] == 0x5F, p[o + 2] == 0x5F {
                let s = ssrc(p[o + 3])
                for i in 0..<4 { p[o + i] = UInt8(truncatingIfNeeded: s >> (24 - 8 * UInt32(i))) }
            }
            o += 4
        }
        if let d = c.protect(p) { net.send(d, from: c.address) }
    }

    /// DTLS from the client's address: a record assembled from the input (content type, epoch, sequence
    /// number, fragment), raw bytes in the DTLS range, a new ClientHello on the established association,
    /// or the client's close_notify (rare: it ends the transport).
    func dtls(_ c: FuzzClient, _ r: inout FuzzReader) {
        let kind = r.u8()
        switch kind & 3 {
        case 0:
            let type = 20 + r.u8() % 5
            let epoch = r.u16(), seq = r.bytes(6)
            let fragment = r.chunk(max: 1200)
            var rec: [UInt8] = [type, 0xFE, 0xFD, UInt8(epoch >> 8), UInt8(epoch & 0xFF)]
            rec += seq + [UInt8](repeating: 0, count: 6 - seq.count)
            rec += [UInt8(fragment.count >> 8), UInt8(fragment.count & 0xFF)] + fragment
            net.send(rec, from: c.address)
        case 1:
            var raw = r.chunk()
            guard !raw.isEmpty else { return }
            raw[0] = 20 + raw[0] % 44
            net.send(raw, from: c.address)
        case 2:
            guard let hello = try? DTLSEndpoint(role: .client, certificate: c.certificate, remoteFingerprint: nil) else { return }
            for d in hello.start(now: net.now) { net.send(d, from: c.address) }
        default:
            guard kind == 0x7F, let d = c.dtls else { return }
            for b in d.close() { net.send(b, from: c.address) }
        }
    }
}
