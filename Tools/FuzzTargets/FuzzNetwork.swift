import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// A `WorkerCore` on virtual time and the network to its clients: the core's control datagrams and media go
/// to the client at the destination address, the clients' replies back to the core. What VirtualNetwork
/// does in the NodeIO tests, for the fuzz targets.
final class FuzzNetwork {
    let core: WorkerCore
    var now = MonoTime.seconds(100)
    private(set) var clients: [FuzzClient] = []
    /// Media or control datagrams the core sent to an address no client has (strangers included).
    private(set) var strays: [TransportAddress: Int] = [:]
    /// Set when the core sent media for a client to an address the client never nominated.
    private(set) var misdirected: String?
    private(set) var events = 0
    /// Whether delivered events are kept in `kept` (for a target that checks them; it empties the list).
    var keepEvents = false
    var kept: [(room: String, events: [RoomEvent])] = []
    /// Addresses the node's control datagrams (STUN answers, DTLS flights) do not reach: a lossy path.
    var blackholed: Set<TransportAddress> = []
    /// The client of each connection (from the answers), for the misdirection check.
    var owners: [ConnectionID: FuzzClient] = [:]
    private var buffer = [UInt8](repeating: 0, count: 2048)
    static let nodeCertificate = FuzzClient.certificates[0]

    init(limits: WorkerLimits = .init(), consent: MonoTime.Interval = .seconds(30), batchCapacity: Int = 1024) {
        let edge = WorkerEdge(certificate: Self.nodeCertificate, candidates: [TransportAddress(ip: .v4(0x0A00_0001), port: 10000)])
        edge.consentTimeout = consent
        core = WorkerCore(edge: edge, index: 0, limits: limits, batchCapacity: batchCapacity)
    }

    func join(_ c: FuzzClient) { if !clients.contains(where: { $0 === c }) { clients.append(c) } }

    func forget(_ c: FuzzClient) {
        clients.removeAll { $0 === c }
        owners = owners.filter { $0.value !== c }
    }

    /// An offer through the core's session API; the answer goes to the client. Returns it parsed too (nil
    /// when it does not parse).
    func offer(_ c: FuzzClient, room: String, participant: String, publish: Bool,
               text: String) throws -> (answer: SessionAnswer, sdp: SessionDescription?) {
        join(c)
        let a = publish ? try core.publish(room: room, participant: participant, offer: text, now: now)
            : try core.subscribe(room: room, participant: participant, offer: text, now: now)
        let sdp = try? SessionDescription.parse(a.sdp)
        c.accept(a, sdp)
        owners[a.connection] = c
        deliver()
        return (a, sdp)
    }

    /// A datagram into the core from `address`, then everything delivered.
    func send(_ d: [UInt8], from address: TransportAddress) {
        deliver(inject(d, from: address))
    }

    /// What the core has counted of the datagrams it was given: the edge's drops, media whose transport has
    /// no room, and what its rooms took in.
    struct Ledger {
        var edgeDrops = 0
        var ingressDrops: UInt64 = 0
        var roomPackets: UInt64 = 0
    }

    var ledger: Ledger {
        Ledger(edgeDrops: core.edge.drops.reduce(0) { $0 + $1.count }, ingressDrops: core.ingressDrops,
               roomPackets: core.rooms.values.reduce(0) { $0 + $1.counters.packetsIn })
    }

    /// One datagram into the core, and the promise that it was accounted for exactly once (RFC 7983 classes):
    /// RTP/RTCP is dropped and counted by the edge or the core, or taken in by a room; STUN is answered or
    /// counted; anything unclassifiable is counted; DTLS goes to a handshake or is counted (OpenSSL discards
    /// bad records of a handshake silently). Returns the control datagrams the core produced.
    func inject(_ d: [UInt8], from address: TransportAddress) -> PolledOutputs {
        let n = min(d.count, buffer.count - SRTPSession.maxOverhead)
        buffer.replaceSubrange(0..<n, with: d[0..<n])
        let before = ledger
        buffer.withUnsafeMutableBytes { core.receive($0, length: n, from: address, now: now) }
        let outputs = core.pollAll()
        let after = ledger, control = outputs.control
        let dropped = after.edgeDrops - before.edgeDrops
        let orphaned = Int(after.ingressDrops - before.ingressDrops), taken = Int(after.roomPackets - before.roomPackets)
        let answered = control.filter { $0.to == address && $0.bytes.first.map { PacketClass(firstByte: $0) } == .stun }.count
        let kind = n == 0 ? PacketClass.unknown : PacketClass(firstByte: d[0])
        let counted = "counted \(dropped) dropped by the edge, \(orphaned) without a room, \(taken) taken in, \(answered) answered"
        switch kind {
        case .rtp: promise(dropped + orphaned + taken == 1 && answered == 0, "an RTP/RTCP datagram from \(address) was \(counted)")
        case .stun: promise(dropped + answered == 1 && orphaned + taken == 0, "a STUN datagram from \(address) was \(counted)")
        case .dtls: promise(dropped <= 1 && orphaned + taken + answered == 0, "a DTLS datagram from \(address) was \(counted)")
        case .unknown: promise(dropped == 1 && orphaned + taken + answered == 0, "an unclassifiable datagram was \(counted)")
        }
        return outputs
    }

    /// A check from the client at `address` (its own by default). A nominating check that is answered moves
    /// the client there (roaming) and adds the address to those it nominated.
    func check(_ c: FuzzClient, nominate: Bool, from address: TransportAddress? = nil, transactionID: [UInt8]? = nil) {
        guard let bytes = c.bindingRequest(nominate: nominate, transactionID: transactionID) else { return }
        let home = c.address
        c.address = address ?? home
        send(bytes, from: c.address)
        if c.checkAnswered { c.checkedFrom[c.address] = now }
        if nominate, c.checkAnswered { c.nominated.insert(c.address) } else { c.address = home }
    }

    /// ICE check with nomination, then the DTLS handshake if the client has no association yet.
    func connect(_ c: FuzzClient) {
        check(c, nominate: true)
        guard c.checkAnswered else { return }
        for d in c.startDTLS(now: now) { send(d, from: c.address) }
    }

    /// Hands the core's output to the clients until nothing more comes back. A DTLS handshake takes four
    /// flights: core and client still answering each other after 16 rounds is a loop, a finding, not a hang.
    func deliver(_ pending: PolledOutputs? = nil) {
        var polled = core.pollAll()
        if let pending {
            polled.control = pending.control + polled.control
            polled.events = pending.events + polled.events
        }
        var control = polled.control
        var pendingEvents = polled.events
        var rounds = 0
        while rounds < 16 {
            rounds += 1
            var replies: [([UInt8], FuzzClient)] = []
            for (bytes, to) in control where !blackholed.contains(to) {
                guard let c = clients.first(where: { $0.address == to }) else { strays[to, default: 0] += 1; continue }
                for r in c.receive(bytes, now: now) { replies.append((r, c)) }
            }
            for i in 0..<core.batch.count {
                let conn = core.batch.destination(at: i)
                guard let to = core.destination(of: conn) else { continue }  // the shell sends nothing there
                if let owner = owners[conn], !owner.nominated.contains(to), misdirected == nil {
                    misdirected = "media for \(conn) went to \(to), which its client never nominated"
                }
                guard let c = clients.first(where: { $0.address == to }) else { strays[to, default: 0] += 1; continue }
                _ = c.receive(Array(core.batch.datagram(at: i)), now: now)
            }
            core.batch.sent(at: now)
            core.batch.removeAll()
            for (room, es) in pendingEvents {
                events += es.count
                if keepEvents { kept.append((room, es)) }
            }
            control = []
            pendingEvents = []
            if replies.isEmpty { return }
            for (r, c) in replies {
                let o = inject(r, from: c.address)
                control += o.control
                pendingEvents += o.events
            }
        }
        promise(false, "core and clients still answer each other after 16 rounds: \(control.count) datagrams to \(Set(control.map(\.to)))")
    }

    /// Moves virtual time on, running the core's timers as they fall due (in at most `slices` steps).
    func advance(by ms: Int64, slices: Int = 8) {
        let end = now + .milliseconds(ms)
        var n = 0
        while now < end, n < slices {
            n += 1
            let next = core.nextDeadline
            now = next <= now ? now + .milliseconds(1) : min(end, next)
            if core.nextDeadline <= now { core.tick(now: now) }
            deliver()
        }
        now = end
        if core.nextDeadline <= now { core.tick(now: now) }
        deliver()
    }
}
