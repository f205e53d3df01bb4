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
/// socket of its own). It then carries, four times a second:
///
/// - `open` once per end: where the peer sends for this relay, and the SRTP key drawn for the end;
/// - `streams` whenever what the relay carries changed (`Room.relayed(to:)`), which the peer binds to remote
///   participants (`Room.receiveRelayed`);
/// - from the room's home only, `ranking` (`Room.shareRanking`, which the others follow) and `moderation`
///   (`Room.moderationState`, which the others apply) whenever their versions move.
///
/// An end closes when the room ends here, when the registry no longer shows the peer hosting it, on the
/// peer's `bye`, or with the channel (its remote participants leave the room); the next pass opens it again if
/// both nodes still host the room. Work on a room runs on its worker through `Node.withRoom`, never here.
actor RelayMesh {
    nonisolated let nodeID: String
    let node: Node
    let registry: any Registry
    let logger: Logger
    /// Where this node's relay sockets bind (port 0: one free port per end).
    let bind: TransportAddress
    let apiKey: String?

    struct EndKey: Hashable {
        var room: String
        var peer: String
    }

    struct End {
        var epoch: Int64
        /// When it opened: an end the peer asked for stays a few seconds even if the registry does not show the
        /// peer hosting the room yet (it learns of a room at the host's next heartbeat).
        var openedAt: ContinuousClock.Instant
        var id: ConnectionID?
        var worker: Worker?
        /// The key this end protects with: drawn when it opens, never used by another end.
        var key: [UInt8]
        /// The peer's `open`, once it came.
        var peerOpen: (address: TransportAddress, key: [UInt8])?
        var keyed = false
        var sentStreams: [RelayedStream]?
        var sentRanking: (Int64, UInt64)?
        var sentModeration: (Int64, UInt64)?
    }

    /// How long an end the peer opened waits for the registry to show the peer hosting its room.
    static let registryLag: Duration = .seconds(5)

    private var channels: [String: RelayChannel] = [:]
    private var dialing: Set<String> = []
    private var ends: [EndKey: End] = [:]
    /// The registry's view, from the last pass: each hosted room's home, epoch and peers; the peers' URLs.
    private var spans: [String: RoomSpan] = [:]
    private var controlURLs: [String: String] = [:]
    /// Rooms this node was home of at the last pass (they follow no ranking).
    private var homeOf: Set<String> = []
    /// Messages refused since start (logged once per channel).
    private(set) var refusedMessages = 0

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
                do { try await readRegistry() } catch is CancellationError { return } catch {
                    logger.warning("could not read the rooms shared with other nodes", metadata: ["error": "\(error)"])
                }
            }
            await step()
            pass += 1
            try? await Task.sleep(for: .milliseconds(250))
        }
        for c in channels.values { c.close() }
    }

    func readRegistry() async throws {
        let found = try await registry.spans(of: nodeID)
        spans = Dictionary(found.map { ($0.room, $0) }, uniquingKeysWith: { a, _ in a })
        if found.contains(where: { !$0.peers.isEmpty }) {
            controlURLs = Dictionary(try await registry.nodes().map { ($0.id, $0.controlURL) }, uniquingKeysWith: { a, _ in a })
        }
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

    /// One pass: channels dialled, ends opened and closed, descriptions, rankings and moderation sent.
    func step() async {
        let want = wanted
        for (key, end) in ends where !want.contains(key) && (ContinuousClock.now - end.openedAt > Self.registryLag || node.worker(of: key.room) == nil) {
            await close(key, reason: "the room is no longer shared with \(key.peer)", tellPeer: true)
        }
        for peer in Set(want.map(\.peer)) where channels[peer] == nil { dial(peer) }
        for key in want.sorted(by: { ($0.room, $0.peer) < ($1.room, $1.peer) }) where ends[key] == nil && channels[key.peer] != nil {
            await open(key)
        }
        await updateHomes()
        for key in ends.keys.sorted(by: { ($0.room, $0.peer) < ($1.room, $1.peer) }) { await push(key) }
    }

    /// The ranking of a room this node became home of is its own again.
    private func updateHomes() async {
        let now = Set(spans.values.filter { $0.home == nodeID }.map(\.room))
        for room in now.subtracting(homeOf) { _ = try? await node.withRoom(room) { r, _, _ in r.followRanking(nil) } }
        homeOf = now
    }

    private func dial(_ peer: String) {
        // The node whose id sorts first dials: one channel per pair.
        guard nodeID < peer, !dialing.contains(peer), let url = controlURLs[peer] else { return }
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

    /// Opens this node's end of a relay and tells the peer where and how to reach it.
    private func open(_ key: EndKey, epoch: Int64? = nil) async {
        guard let worker = node.worker(of: key.room), let epoch = epoch ?? spans[key.room]?.epoch else { return }
        var end = End(epoch: epoch, openedAt: .now, key: Self.drawKey())
        ends[key] = end  // claimed before the await: a message arriving meanwhile finds it opening
        do {
            let (id, address) = try await worker.openRelay(room: key.room, peer: key.peer, bind: bind)
            guard ends[key] != nil else { try? await worker.closeRelay(id, reason: "closed while opening"); return }
            end = ends[key]!
            end.id = id
            end.worker = worker
            ends[key] = end
            channels[key.peer]?.send(.open(room: key.room, epoch: end.epoch, address: address, keyAndSalt: end.key))
            await keyIfReady(key)
            logger.info("relay opened", metadata: ["room": "\(key.room)", "peer": "\(key.peer)", "address": "\(address)"])
        } catch {
            ends[key] = nil
            logger.warning("could not open a relay", metadata: ["room": "\(key.room)", "peer": "\(key.peer)", "error": "\(error)"])
        }
    }

    private func keyIfReady(_ key: EndKey) async {
        guard var end = ends[key], !end.keyed, let id = end.id, let worker = end.worker, let peer = end.peerOpen else { return }
        end.keyed = true
        ends[key] = end
        // The peer learns what the relay carries before the first packet can leave (the keys let it go).
        await push(key)
        do {
            try await worker.keyRelay(id, destination: peer.address, inbound: Self.material(peer.key), outbound: Self.material(end.key))
        } catch {
            logger.warning("could not key a relay", metadata: ["room": "\(key.room)", "peer": "\(key.peer)", "error": "\(error)"])
            await close(key, reason: "keying failed", tellPeer: true)
        }
    }

    private func close(_ key: EndKey, reason: String, tellPeer: Bool) async {
        guard let end = ends.removeValue(forKey: key) else { return }
        if tellPeer { channels[key.peer]?.send(.bye(room: key.room)) }
        if let id = end.id, let worker = end.worker { try? await worker.closeRelay(id, reason: reason) }
        logger.info("relay closed", metadata: ["room": "\(key.room)", "peer": "\(key.peer)", "reason": "\(reason)"])
    }

    /// Sends what changed on one end: its description, and from the home the ranking and moderation.
    private func push(_ key: EndKey) async {
        guard let end = ends[key], end.keyed, let worker = end.worker, let channel = channels[key.peer] else { return }
        let home = spans[key.room]?.home == nodeID
        let epoch = spans[key.room]?.epoch ?? end.epoch
        let room = key.room, peer = key.peer
        guard let state = try? await worker.perform({ core, _ -> ([RelayedStream]?, SharedRanking?, ModerationState?)? in
            guard let r = core.rooms[room] else { return nil }
            return (r.relayed(to: peer), home ? r.shareRanking() : nil, home ? r.moderationState : nil)
        }) else { return }
        let (streams, ranking, moderation) = state
        guard var e = ends[key] else { return }
        if let streams, streams != e.sentStreams {
            channel.send(.streams(room: room, epoch: epoch, streams: streams))
            e.sentStreams = streams
        }
        if var ranking {
            ranking.epoch = epoch
            if e.sentRanking.map({ $0 != (ranking.epoch, ranking.version) }) ?? true {
                channel.send(.ranking(room: room, ranking))
                e.sentRanking = (ranking.epoch, ranking.version)
            }
        }
        if let moderation, e.sentModeration.map({ $0 != (moderation.epoch, moderation.version) }) ?? true {
            channel.send(.moderation(room: room, moderation))
            e.sentModeration = (moderation.epoch, moderation.version)
        }
        ends[key] = e
    }

    /// Rooms whose lists were rebuilt (`RoomEvent.relaysChanged`): what changed goes out now.
    func nudge(_ rooms: Set<String>) async {
        for key in ends.keys.sorted(by: { ($0.room, $0.peer) < ($1.room, $1.peer) }) where rooms.contains(key.room) { await push(key) }
    }

    // MARK: The channel's side

    func attach(_ channel: RelayChannel) async {
        if let old = channels[channel.peer] { await detach(old) }
        channels[channel.peer] = channel
        logger.info("relay channel open", metadata: ["peer": "\(channel.peer)"])
        await step()
    }

    func detach(_ channel: RelayChannel) async {
        guard channels[channel.peer] === channel else { return }
        channels[channel.peer] = nil
        channel.close()
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
        case .open(let room, let epoch, let address, let keyAndSalt):
            let key = EndKey(room: room, peer: peer)
            guard node.worker(of: room) != nil else { channel.send(.bye(room: room)); return }
            // The peer opened its end again (it closed the last one on our bye): this end starts over too, with
            // a new key, and says so - without a bye, which would close the peer's new end.
            if ends[key]?.peerOpen != nil { await close(key, reason: "\(peer) opened its end again", tellPeer: false) }
            if ends[key] == nil { await open(key, epoch: epoch) }
            guard var end = ends[key] else { return }
            end.peerOpen = (address, keyAndSalt)
            ends[key] = end
            await keyIfReady(key)
        case .streams(let room, _, let streams):
            guard ends[EndKey(room: room, peer: peer)]?.id != nil else { return }
            do {
                try await node.withRoom(room) { r, core, now in try r.receiveRelayed(streams, from: peer, now: now, into: core.batch) }
            } catch {
                refused(error, on: channel)
            }
        case .ranking(let room, let ranking):
            guard spans[room]?.home == peer else { return }
            _ = try? await node.withRoom(room) { r, _, _ in r.followRanking(ranking) }
        case .moderation(let room, let state):
            guard spans[room]?.home == peer else { return }
            _ = try? await node.withRoom(room) { r, core, now in r.applyModeration(state, now: now, into: core.batch) }
        case .bye(let room):
            await close(EndKey(room: room, peer: peer), reason: "\(peer) stopped relaying the room", tellPeer: false)
        }
    }

    // MARK: Keys

    static func drawKey() -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<RelayMessage.keyAndSaltBytes).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    static func material(_ keyAndSalt: [UInt8]) -> SRTPKeyingMaterial {
        SRTPKeyingMaterial(profile: .aeadAES128GCM, masterKey: Array(keyAndSalt[0..<16]), masterSalt: Array(keyAndSalt[16..<28]))
    }

    /// Ends open now, for tests and metrics: (room, peer, keyed).
    var openEnds: [(room: String, peer: String, keyed: Bool)] {
        ends.map { ($0.key.room, $0.key.peer, $0.value.keyed) }.sorted { ($0.room, $0.peer) < ($1.room, $1.peer) }
    }
}
