import ServiceLifecycle

/// The node as a service of the process's service group: it runs until a graceful shutdown (SIGTERM,
/// SIGINT), then stops the node in the order its peers and clients need - in a cluster it leaves first
/// (`ClusterMembership.leave`: out of the registry, a `node_lost` per room for the signaling server, a `bye` on
/// every relay), then the node stops (`Node.stop`: every client told, every recording and live stream closed
/// with its event, the event streams ended after their last events). Put it last in the group: services shut
/// down in reverse order, so this one goes first while the HTTP server still carries the event streams, and the
/// server closes once they ended.
public struct NodeService: Service {
    public let node: Node
    public let cluster: ClusterMembership?

    public init(node: Node, cluster: ClusterMembership? = nil) {
        self.node = node
        self.cluster = cluster
    }

    public func run() async throws {
        node.start()
        try? await gracefulShutdown()
        if let cluster { await cluster.leave() }
        await node.stopped()
    }
}
