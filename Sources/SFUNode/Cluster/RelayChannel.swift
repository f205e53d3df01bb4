import Foundation
import HummingbirdWebSocket
import HummingbirdWSClient
import Logging
import Synchronization

/// The control channel between two nodes of a cluster (issue 25; docs/cluster.md, "Between nodes"): one
/// WebSocket per pair, on the control API (`GET /v1/relay`, the API key as for any call), dialled by the node
/// whose id sorts first. Each side opens with `hello` (its id and protocol version); then `RelayMessage`s go
/// both ways, one JSON text message each, in order. What the mesh sends waits in a bounded queue, encoded: a
/// peer that reads too slowly to take `outboxCapacity` messages or `outboxBytes` bytes loses the channel (and
/// so its relays), never this node's memory; the dialler then connects again and the relays start over.
final class RelayChannel: Sendable {
    let peer: String
    let outgoing: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    /// Bytes queued and not yet written.
    private let queued = Atomic<Int>(0)
    /// The writer ended: everything queued before `close` was written and the WebSocket closed (or failed).
    private let writerEnded = Atomic<Bool>(false)
    static let outboxCapacity = 4096
    static let outboxBytes = 8 << 20

    init(peer: String) {
        self.peer = peer
        (outgoing, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(Self.outboxCapacity))
    }

    /// Queues a message; false when the queue was full (the channel then closes).
    @discardableResult
    func send(_ m: RelayMessage) -> Bool {
        guard let data = try? m.encoded() else { return false }
        let text = String(decoding: data, as: UTF8.self)
        if queued.add(data.count, ordering: .relaxed).newValue <= Self.outboxBytes, case .enqueued = continuation.yield(text) { return true }
        continuation.finish()
        return false
    }

    /// The writer wrote a message of `bytes`.
    func written(_ bytes: Int) { queued.subtract(bytes, ordering: .relaxed) }

    func close() { continuation.finish() }

    /// Whether the writer has ended (after `close`: what was queued is out).
    var isWritten: Bool { writerEnded.load(ordering: .acquiring) }

    /// Runs one channel over an open WebSocket until either side closes it: the hello exchange, then messages
    /// to `mesh` in order and the queue out. `expected`: the peer this node dialled (nil on the accepting side).
    static func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, expected: String?, mesh: RelayMesh,
                    logger: Logger) async throws {
        try await outbound.write(.text(String(decoding: try RelayMessage.hello(node: mesh.nodeID, version: RelayMessage.protocolVersion).encoded(),
                                              as: UTF8.self)))
        var messages = inbound.messages(maxSize: RelayMessage.maxBytes).makeAsyncIterator()
        guard let first = try await messages.next() else { return }
        let peer: String
        switch try? RelayMessage.decode(Self.data(first)) {
        case .hello(let node, let version) where version == RelayMessage.protocolVersion && (expected == nil || expected == node) && node != mesh.nodeID:
            peer = node
        default:
            logger.warning("relay channel refused: its first message is not a hello of this protocol from the expected node",
                           metadata: ["expected": "\(expected ?? "any")"])
            try await outbound.close(.policyViolation, reason: "expected hello, protocol \(RelayMessage.protocolVersion)")
            return
        }
        let channel = RelayChannel(peer: peer)
        guard await mesh.attach(channel) else {
            try await outbound.close(.policyViolation, reason: "\(peer) is no live node of the registry")
            return
        }
        // The queue out runs beside; closing the WebSocket when it ends (the mesh closed the channel) also ends
        // the reading here.
        let writer = Task {
            defer { channel.writerEnded.store(true, ordering: .releasing) }
            for await text in channel.outgoing {
                try await outbound.write(.text(text))
                channel.written(text.utf8.count)
            }
            try? await outbound.close(.normalClosure, reason: nil)
        }
        // What comes in is handed to the mesh by a task of its own, through a bounded queue: the mesh may wait for
        // a busy worker, and the reading here must go on meanwhile (pings are answered as frames are read).
        let (inbox, deliver) = AsyncStream.makeStream(of: RelayMessage.self, bufferingPolicy: .bufferingOldest(Self.outboxCapacity))
        let handler = Task {
            for await m in inbox { await mesh.receive(m, on: channel) }
        }
        do {
            while let frame = try await messages.next() {
                let m: RelayMessage
                do { m = try RelayMessage.decode(Self.data(frame)) } catch {
                    await mesh.refused(error, on: channel)
                    continue
                }
                guard case .enqueued = deliver.yield(m) else {
                    logger.warning("relay channel closed: its peer sends faster than this node takes", metadata: ["peer": "\(peer)"])
                    break
                }
            }
        } catch {
            logger.info("relay channel ended", metadata: ["peer": "\(peer)", "error": "\(error)"])
        }
        deliver.finish()
        handler.cancel()
        channel.close()
        writer.cancel()
        await mesh.detach(channel)
    }

    static func data(_ m: WebSocketMessage) -> Data {
        switch m {
        case .text(let s): Data(s.utf8)
        case .binary(let b): Data(buffer: b)
        }
    }

    /// Dials `peer`'s control API and runs the channel until it closes.
    static func dial(peer: String, controlURL: String, apiKey: String?, mesh: RelayMesh, logger: Logger) async throws {
        guard var components = URLComponents(string: controlURL) else { throw RelayMessageError("bad control URL \(controlURL)") }
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = (components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path) + "/v1/relay"
        var configuration = WebSocketClientConfiguration(maxFrameSize: RelayMessage.maxBytes, autoPing: .enabled(timePeriod: .seconds(2)))
        if let apiKey { configuration.additionalHeaders[.authorization] = "Bearer \(apiKey)" }
        try await WebSocketClient.connect(url: components.string ?? controlURL, configuration: configuration, logger: logger) { inbound, outbound, _ in
            try await run(inbound: inbound, outbound: outbound, expected: peer, mesh: mesh, logger: logger)
        }
    }
}
