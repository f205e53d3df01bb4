import Foundation
import Logging
import NodeIO
import SFU
import SFUBase
import SFUCluster
import WebRTCEdge

/// The relays of the rooms this node shares with other nodes (issue 25; docs/cluster.md, Relays). From the
/// registry (`spans(of:)`, each second) it knows which of its rooms other live nodes host too; for each such
/// (room, peer) it keeps a control channel to the peer (`RelayChannel`, dialled by the node whose id sorts
/// first) and one relay end on the room's worker (`Worker.openRelay`: the room's relay connection and a UDP
/// socket of its own).
///
/// Who opens: the node that dialled the channel (the *opener*) opens every relay of the pair, numbering each
/// (`relay`, random); the other (the *answerer*) opens its end when asked and answers with an `open` of the
/// same number; either closes with a `bye` of that number, and a message about another number than the end's
/// is stale and ignored. So two nodes never open the same relay at once, a late `bye` never closes the relay
/// that replaced it, and a relay refused (`bye`) is tried again only after `retryAfter`.
///
/// Then, whenever a room's lists were rebuilt (`nudge`) and at least every two seconds, it sends on each keyed
/// end what changed: `streams` (`Room.relays.carried(to:)`, which the peer binds to remote participants, with those
/// described before who left here), and from the room's home `ranking` and `moderation`. Work on a room runs
/// on its worker through `Worker.perform`, never here.
actor RelayMesh {
    nonisolated let nodeID: String
    let node: Node
    let registry: any Registry
    let logger: Logger
    /// Where this node's relay sockets bind (port 0: one free port per end).
    let bind: TransportAddress
    let apiKey: String?
    /// How long an end the peer opened waits for the registry to show the peer hosting its room.
    static let registryLag: Duration = .seconds(5)
    /// How long an opener waits before opening a relay the peer refused or closed again.
    static let retryAfter: Duration = .seconds(2)
    /// How long an opener waits for the answer to its `open`.
    static let answerWithin: Duration = .seconds(5)
    /// How often an end's whole description is sent again though nothing changed (a lost or refused one heals).
    static let resendEvery: Duration = .seconds(2)

    struct EndKey: Hashable, Comparable {
        var room: String
        var peer: String
        static func < (a: EndKey, b: EndKey) -> Bool { (a.room, a.peer) < (b.room, b.peer) }
    }

    struct End {
        /// The relay's number: the opener's, the answerer's answer carries it.
        let relay: UInt64
        let epoch: Int64
        /// When it opened: an end the peer asked for stays a few seconds even if the registry does not show the
        /// peer hosting the room yet (it learns of a room at the host's next heartbeat).
        let openedAt: ContinuousClock.Instant
        /// The key this end protects with: drawn when it opens, never used by another end.
        let key: [UInt8]
        var id: ConnectionID?
        var worker: Worker?
        /// Its socket's address (what the peer sends to).
        var address: TransportAddress?
        /// The peer's `open`, once it came.
        var peerOpen: (address: TransportAddress, key: [UInt8])?
        var keyed = false
        var sentStreams: [RelayedStream]?
        var sentMembers: [RelayedMember]?
        var sentAt: ContinuousClock.Instant?
        /// Everyone this end described to the peer, with the index of the admission described (a participant
        /// who left and came back between two pushes has another), so that their leaving is told.
        var described: [String: Int] = [:]
        var sentRanking: (Int64, UInt64)?
        var sentModeration: (Int64, UInt64)?
    }

    private(set) var channels: [String: RelayChannel] = [:]
    private var pushing: Set<EndKey> = []
    private var pushAgain: Set<EndKey> = []
    private var dialing: Set<String> = []
    private(set) var ends: [EndKey: End] = [:]
    /// Relays refused or closed by the peer: not opened again before this time (opener only).
    private var retryAt: [EndKey: ContinuousClock.Instant] = [:]
    /// Ends whose close the worker did not take (it was busy): tried again at each pass.
    private var pendingCloses: [(worker: Worker, id: ConnectionID)] = []
    /// The registry's view, from the last read: each hosted room's home, epoch and peers; the live nodes.
    private(set) var spans: [String: RoomSpan] = [:]
    private var peers: [String: NodeStanding] = [:]
    /// Rooms this node was home of at the last pass (they follow no ranking).
    private var homeOf: Set<String> = []
    /// Moderator commands forwarded to their room's home, waiting for its `result` (`RelayMesh+Commands`).
    var awaiting: [UInt64: AwaitedResult] = [:]
    var nextRequest: UInt64 = 1
    /// Messages refused since start.
    private(set) var refusedMessages = 0
    /// Set by `shutdown`: the node stops; nothing opens or is taken any more.
    private var closed = false

    init(nodeID: String, node: Node, registry: any Registry, bind: TransportAddress, apiKey: String?, logger: Logger) {
        self.nodeID = nodeID
        self.node = node
        self.registry = registry
        self.bind = bind
        self.apiKey = apiKey
        self.logger = logger
    }

    /// Four passes a second until cancelled; the registry is read at every fourth, and only while not fenced.
    func run(fenced: @escaping @Sendable () -> Bool) async {
        var pass = 0
        while !Task.isCancelled {
            if pass % 4 == 0, !fenced() {
                do { try await readRegistry() } catch is CancellationError { break } catch {
                    logger.warning("could not read the rooms shared with other nodes", metadata: ["error": "\(error)"])
                }
            }
            if !closed { await step() }
            pass += 1
            try? await Task.sleep(for: .milliseconds(250))
        }
        for c in channels.values { c.close() }
    }

    func readRegistry() async throws {
        let found = try await registry.spans(of: nodeID)
        spans = Dictionary(found.map { ($0.room, $0) }, uniquingKeysWith: { a, _ in a })
        peers = Dictionary(try await registry.nodes().filter { $0.alive && $0.id != nodeID }.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// What the registry says should be relayed: (room, peer) for each room hosted here and on a live peer.
    private var wanted: Set<EndKey> {
        let hosted = Set(node.roomNames)
        var w: Set<EndKey> = []
        for span in spans.values where hosted.contains(span.room) {
            for peer in span.peers.keys where peer != nodeID { w.insert(EndKey(room: span.room, peer: peer)) }
        }
        return w
    }

    private func opens(with peer: String) -> Bool { nodeID < peer }

    /// One pass: channels dialled, ends opened and closed, descriptions, rankings and moderation sent.
    func step() async {
        // Taken out first: a close that fails while these run appends itself again.
        let retry = pendingCloses
        pendingCloses = []
        for c in retry { await dispose(c.worker, c.id) }
        let want = wanted
        let now = ContinuousClock.now
        for (key, end) in ends where !want.contains(key) {
            // An answerer's end waits for the registry to catch up; a room that ended here goes at once.
            if opens(with: key.peer) || now - end.openedAt > Self.registryLag || node.worker(of: key.room) == nil {
                await close(key, reason: "the room is no longer shared with \(key.peer)", tellPeer: true)
            }
        }
        // An open the peer never answered (it dropped it: no such room yet, a registry view behind) is given up
        // and tried again.
        for (key, end) in ends where opens(with: key.peer) && end.peerOpen == nil && now - end.openedAt > Self.answerWithin {
            await close(key, reason: "\(key.peer) did not answer", tellPeer: true)
            retryAt[key] = now + Self.retryAfter
        }
        retryAt = retryAt.filter { want.contains($0.key) && $0.value > now }
        for peer in Set(want.map(\.peer)) where channels[peer] == nil { dial(peer) }
        for key in want.sorted() where ends[key] == nil && opens(with: key.peer) && channels[key.peer] != nil && retryAt[key] == nil {
            await open(key, relay: UInt64.random(in: 1..<RelayMessage.maxRelayID), epoch: spans[key.room]?.epoch ?? 0, answering: nil)
        }
        await updateHomes()
        for key in ends.keys.sorted() { await push(key) }
    }

    /// The node stops: every relay closed with a `bye` (the peer drops what it relayed at once, not when the
    /// registry or a ping says so), every channel closed after what it queued, waited for up to `within`.
    func shutdown(within: Duration) async {
        closed = true
        for key in ends.keys.sorted() { await close(key, reason: "this node stops", tellPeer: true) }
        let all = Array(channels.values)
        channels.removeAll()
        for c in all { c.close() }
        let started = ContinuousClock.now
        while all.contains(where: { !$0.isWritten }), ContinuousClock.now - started < within { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// The ranking of a room this node became home of is its own again.
    private func updateHomes() async {
        let now = Set(spans.values.filter { $0.home == nodeID }.map(\.room))
        for room in now.subtracting(homeOf) { _ = try? await node.withRoom(room) { r, _, _ in r.home.followRanking(nil) } }
        homeOf = now
    }

    private func dial(_ peer: String) {
        guard opens(with: peer), !dialing.contains(peer), let url = peers[peer]?.controlURL else { return }
        dialing.insert(peer)
        let (key, logger) = (apiKey, logger)
        Task {
            do {
                try await RelayChannel.dial(peer: peer, controlURL: url, apiKey: key, mesh: self, logger: logger)
            } catch {
                logger.info("relay channel to a peer node could not be opened or ended", metadata: ["peer": "\(peer)", "error": "\(error)"])
            }
            self.dialEnded(peer)
        }
    }

    private func dialEnded(_ peer: String) { dialing.remove(peer) }

    /// Opens this node's end of relay `relay` and tells the peer where and how to reach it; `answering`: the
    /// peer's open this answers (the answerer's side), keyed at once.
    private func open(_ key: EndKey, relay: UInt64, epoch: Int64, answering: (address: TransportAddress, key: [UInt8])?) async {
        guard let worker = node.worker(of: key.room) else {
            if answering != nil { channels[key.peer]?.send(.bye(room: key.room, relay: relay)) }
            return
        }
        var end = End(relay: relay, epoch: epoch, openedAt: .now, key: Self.drawKey())
        end.peerOpen = answering
        ends[key] = end  // claimed before the await: a message arriving meanwhile finds it opening
        do {
            let (id, address) = try await worker.openRelay(room: key.room, peer: key.peer, bind: bind)
            // Closed or replaced while this awaited: this end is nobody's.
            guard ends[key]?.relay == relay else { return await dispose(worker, id) }
            ends[key]?.id = id
            ends[key]?.worker = worker
            ends[key]?.address = address
            channels[key.peer]?.send(.open(room: key.room, epoch: epoch, relay: relay, address: address, keyAndSalt: end.key))
            logger.info("relay opened", metadata: ["room": "\(key.room)", "peer": "\(key.peer)", "relay": "\(relay)", "address": "\(address)"])
            await keyIfReady(key)
        } catch {
            guard ends[key]?.relay == relay else { return }
            ends[key] = nil
            channels[key.peer]?.send(.bye(room: key.room, relay: relay))
            if opens(with: key.peer) { retryAt[key] = .now + Self.retryAfter }
            logger.warning("could not open a relay", metadata: ["room": "\(key.room)", "peer": "\(key.peer)", "error": "\(error)"])
        }
    }

    private func keyIfReady(_ key: EndKey) async {
        guard let end = ends[key], !end.keyed, let id = end.id, let worker = end.worker, let peer = end.peerOpen else { return }
        ends[key]?.keyed = true
        // The peer learns what the relay carries before the first packet can leave (the keys let it go).
        await push(key)
        do {
            try await worker.keyRelay(id, destination: peer.address, inbound: Self.material(peer.key), outbound: Self.material(end.key))
        } catch {
            logger.warning("could not key a relay", metadata: ["room": "\(key.room)", "peer": "\(key.peer)", "error": "\(error)"])
            if ends[key]?.relay == end.relay { await close(key, reason: "keying failed", tellPeer: true) }
        }
    }

    private func close(_ key: EndKey, reason: String, tellPeer: Bool) async {
        guard let end = ends.removeValue(forKey: key) else { return }
        if tellPeer { channels[key.peer]?.send(.bye(room: key.room, relay: end.relay)) }
        if let id = end.id, let worker = end.worker { await dispose(worker, id) }
        // The relay from the room's home is gone: what it said no longer holds here.
        if spans[key.room]?.home == key.peer { _ = try? await node.withRoom(key.room) { r, _, _ in r.home.stopFollowing() } }
        logger.info("relay closed", metadata: ["room": "\(key.room)", "peer": "\(key.peer)", "relay": "\(end.relay)", "reason": "\(reason)"])
    }

    /// Closes an end on its worker; a busy worker's close is tried again at the next pass (never leaked).
    private func dispose(_ worker: Worker, _ id: ConnectionID) async {
        do { try await worker.closeRelay(id, reason: "relay closed") } catch { pendingCloses.append((worker, id)) }
    }

    /// Sends what changed on one end: its description, and from the home the ranking and moderation.
    func push(_ key: EndKey) async {
        // One push per end at a time (a pass and a nudge may ask at once): a second one asks the first to go
        // round again, so what it sends is never older than what the first sent.
        guard !pushing.contains(key) else { pushAgain.insert(key); return }
        pushing.insert(key)
        defer { pushing.remove(key) }
        repeat {
            pushAgain.remove(key)
            await pushOnce(key)
        } while pushAgain.contains(key)
    }

    private func pushOnce(_ key: EndKey) async {
        guard let end = ends[key], end.keyed, let worker = end.worker, let id = end.id, let channel = channels[key.peer] else { return }
        let home = spans[key.room]?.home == nodeID
        let epoch = spans[key.room]?.epoch ?? end.epoch
        let room = key.room, peer = key.peer, described = end.described
        let state: ([RelayedStream], [String], SharedRanking?, ModerationState?, [RelayedMember], [String: Int])?
        do {
            state = try await worker.perform { core, _ in
                // An end the worker no longer has (its room was destroyed and made again meanwhile) is closed below.
                guard core.relays.contains(id), let r = core.rooms[room], let all = r.relays.carried(to: peer) else { return nil }
                let streams = Array(all.prefix(RelayMessage.maxStreams))  // what one description may hold
                let members = Array(r.relays.localMembers.prefix(RelayMessage.maxListed))
                var generations: [String: Int] = [:]
                for who in members.map(\.participant) + streams.map(\.participant) { generations[who] = r.relays.localIndex(of: who) }
                // Left: no longer this node's own (gone, or moved to another node), or left and came back.
                return (streams, described.filter { r.relays.localIndex(of: $0.key) != $0.value }.keys.sorted(),
                        home ? r.home.shareRanking() : nil, home ? r.home.moderationState : nil, members, generations)
            }
        } catch {
            return  // a busy worker: the next pass asks again
        }
        guard ends[key]?.relay == end.relay else { return }  // replaced while this awaited
        guard let (streams, left, ranking, moderation, members, generations) = state else {
            return await close(key, reason: "the room's relay end is gone", tellPeer: true)
        }
        let now = ContinuousClock.now
        if streams != end.sentStreams || members != end.sentMembers || !left.isEmpty || end.sentAt.map({ now - $0 > Self.resendEvery }) ?? true {
            channel.send(.streams(room: room, epoch: epoch, streams: streams, left: left, members: members))
            ends[key]?.sentStreams = streams
            ends[key]?.sentMembers = members
            ends[key]?.sentAt = now
            var nowDescribed = ends[key]?.described ?? described
            for who in left { nowDescribed[who] = nil }
            nowDescribed.merge(generations) { _, new in new }
            ends[key]?.described = nowDescribed
        }
        if var ranking {
            ranking.epoch = epoch
            if end.sentRanking.map({ $0 != (ranking.epoch, ranking.version) }) ?? true {
                channel.send(.ranking(room: room, ranking))
                ends[key]?.sentRanking = (ranking.epoch, ranking.version)
            }
        }
        if let moderation, end.sentModeration.map({ $0 != (moderation.epoch, moderation.version) }) ?? true {
            channel.send(.moderation(room: room, moderation))
            ends[key]?.sentModeration = (moderation.epoch, moderation.version)
        }
    }

    /// Rooms whose lists were rebuilt (`RoomEvent.relaysChanged`): what changed goes out now.
    func nudge(_ rooms: Set<String>) async {
        for key in ends.keys.sorted() where rooms.contains(key.room) { await push(key) }
    }

    // MARK: The channel's side

    /// A channel whose hello named `peer`: taken when the registry knows `peer` as a live node (else refused,
    /// and the dialler tries again), replacing an older channel with it.
    func attach(_ channel: RelayChannel) async -> Bool {
        guard !closed else { return false }
        if peers[channel.peer] == nil { try? await readRegistry() }
        guard peers[channel.peer] != nil else {
            logger.warning("relay channel refused: no live node of that id in the registry", metadata: ["peer": "\(channel.peer)"])
            return false
        }
        if let old = channels[channel.peer] { await detach(old) }
        channels[channel.peer] = channel
        logger.info("relay channel open", metadata: ["peer": "\(channel.peer)"])
        Task { await self.step() }  // not awaited: the channel starts reading at once
        return true
    }

    func detach(_ channel: RelayChannel) async {
        guard channels[channel.peer] === channel else { return }
        channels[channel.peer] = nil
        channel.close()
        giveUp(on: channel.peer)
        for key in ends.keys where key.peer == channel.peer { await close(key, reason: "relay channel to \(channel.peer) closed", tellPeer: false) }
    }

    func refused(_ error: Error, on channel: RelayChannel) {
        refusedMessages += 1
        logger.warning("relay message refused", metadata: ["peer": "\(channel.peer)", "error": "\(error)"])
    }

    func receive(_ message: RelayMessage, on channel: RelayChannel) async {
        guard channels[channel.peer] === channel else { return }
        let peer = channel.peer
        switch message {
        case .hello:
            break
        case .open(let room, let epoch, let relay, let address, let keyAndSalt):
            let key = EndKey(room: room, peer: peer)
            // Media comes from, and goes to, the address the registry gives the peer's relays.
            if peers[peer] == nil { try? await readRegistry() }
            guard let expected = peers[peer]?.relayAddress, address.host == expected else {
                refused(RelayMessageError("open for \(room) names \(address), not the peer's relay address"), on: channel)
                if !opens(with: peer) { channel.send(.bye(room: room, relay: relay)) }
                return
            }
            if opens(with: peer) {
                // An answer: to this end's open, or stale.
                guard ends[key]?.relay == relay, ends[key]?.peerOpen == nil else { return }
                ends[key]?.peerOpen = (address, keyAndSalt)
                await keyIfReady(key)
            } else {
                if ends[key]?.relay == relay { return }  // the same open twice
                guard node.worker(of: room) != nil else { channel.send(.bye(room: room, relay: relay)); return }
                // The opener opened it anew (it closed the last one, or never heard of it): this end follows.
                if ends[key] != nil { await close(key, reason: "\(peer) opened the relay anew", tellPeer: false) }
                await open(key, relay: relay, epoch: epoch, answering: (address, keyAndSalt))
            }
        case .streams(let room, _, let streams, let left, let members):
            guard ends[EndKey(room: room, peer: peer)]?.id != nil else { return }
            do {
                try await node.withRoom(room) { r, core, now in
                    r.relays.remoteLeft(left, from: peer)
                    // Talkers with their streams first: the members after them are the silent rest.
                    defer { r.relays.receiveMembers(members, from: peer) }
                    try r.relays.receive(streams, from: peer, now: now, into: core.batch)
                }
            } catch {
                refused(error, on: channel)
            }
        case .ranking(let room, let ranking):
            guard spans[room]?.home == peer else { return }
            _ = try? await node.withRoom(room) { r, _, _ in r.home.followRanking(ranking) }
        case .moderation(let room, let state):
            guard spans[room]?.home == peer else { return }
            _ = try? await node.withRoom(room) { r, core, now in r.home.applyModeration(state, now: now, into: core.batch) }
        case .bye(let room, let relay):
            let key = EndKey(room: room, peer: peer)
            guard ends[key]?.relay == relay else { return }  // about a relay already replaced
            await close(key, reason: "\(peer) closed the relay", tellPeer: false)
            if opens(with: peer) { retryAt[key] = .now + Self.retryAfter }
        case .command(let room, let request, let by, let command):
            await decide(room: room, request: request, by: by, command, from: channel)
        case .drop(let room, let request, let participant, let by):
            await dropHere(room: room, request: request, participant: participant, by: by, from: channel)
        case .result(_, let request, let error, let state, let closed):
            answered(request, from: peer, Answer(error: error, state: state, closed: closed))
        }
    }

    /// Ends open now, for tests and metrics: (room, peer, keyed, the end's socket address).
    var openEnds: [(room: String, peer: String, keyed: Bool, address: TransportAddress?)] {
        ends.map { ($0.key.room, $0.key.peer, $0.value.keyed, $0.value.address) }.sorted { ($0.room, $0.peer) < ($1.room, $1.peer) }
    }
}
