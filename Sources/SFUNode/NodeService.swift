import ServiceLifecycle

/// The node as a service of the process's service group: it runs until a graceful shutdown (SIGTERM,
/// SIGINT), then stops the workers, which tells every client (participants left, DTLS close_notify) and
/// ends every event stream after its last events. Put it after the HTTP server in the group: services shut
/// down in reverse order, so event consumers get the final events before the server closes.
public struct NodeService: Service {
    public let node: Node

    public init(node: Node) { self.node = node }

    public func run() async throws {
        node.start()
        try? await gracefulShutdown()
        node.stop()
    }
}
