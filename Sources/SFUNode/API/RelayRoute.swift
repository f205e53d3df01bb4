import Hummingbird
import HummingbirdWebSocket

extension ControlAPI {
    /// `GET /v1/relay`, upgraded to a WebSocket: the control channel another node of the cluster opens to this
    /// one (`RelayChannel`; docs/cluster.md, "Between nodes"), authenticated with the API key like every call.
    /// A node in no cluster has no relays: 404, 6021.
    static func addRelay(_ router: Router<Context>, cluster: ClusterMembership?) {
        router.ws("/v1/relay") { request, _ in
            guard cluster != nil else { throw APIError(.notFound, code: 6021, "this node is in no cluster: no relays") }
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                throw APIError(.upgradeRequired, code: 6014, "GET /v1/relay is a WebSocket: send Upgrade: websocket")
            }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            guard let cluster else { return }
            try await RelayChannel.run(inbound: inbound, outbound: outbound, expected: nil, mesh: cluster.relays, logger: context.logger)
        }
    }
}
