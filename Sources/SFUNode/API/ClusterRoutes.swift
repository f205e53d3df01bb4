import HTTPTypes
import Hummingbird
import SFUCluster

extension ControlAPI {
    /// Health, placement and draining: what a signaling server and an operator ask of a node about the
    /// cluster. On a node without a registry the same routes answer for the node alone (it places every room
    /// on itself), so a signaling server written for a cluster works with one node unchanged.
    static func addClusterRoutes(_ router: Router<Context>, node: Node, cluster: ClusterMembership?) {
        router.get("/healthz") { _, _ in
            let state = cluster?.isFenced == true ? "registry_unreachable" : node.isDraining ? "draining" : "serving"
            return ok(Health(rooms: node.roomNames.count, state: state, node: cluster?.record.id))
        }
        router.post("/v1/placements") { request, _ in
            let b = try await decode(PlacementRequest.self, request)
            guard let cluster else {
                guard !node.isDraining || node.roomNames.contains(b.room) else {
                    throw APIError(.serviceUnavailable, code: 6018, "the node is draining: no new rooms")
                }
                let url = node.configuration.answeredControlURL(host: host(of: request))
                return ok(PlacementAnswer(room: b.room, node: "local", controlURL: url, reason: "single_node", home: "local", epoch: 0))
            }
            guard !cluster.isFenced else {
                throw APIError(.serviceUnavailable, code: 6019, "the cluster registry is unreachable from this node: ask another node")
            }
            do {
                let limits = PlacementRule.Limits(participantsPerRoomPerNode: node.configuration.workerLimits.room.participants)
                let p = try await cluster.registry.place(room: b.room, limits: limits)
                return ok(PlacementAnswer(room: p.room, node: p.node, controlURL: p.controlURL, reason: p.reason.rawValue, home: p.home, epoch: p.epoch))
            } catch RegistryError.noCapacity {
                throw APIError(.serviceUnavailable, code: 6020, "no live serving node of the cluster has room")
            } catch let e as APIError {
                throw e
            } catch {
                throw APIError(.serviceUnavailable, code: 6019, "the cluster registry failed: \(error)")
            }
        }
        router.get("/v1/nodes") { request, _ in
            guard let cluster else {
                let me = NodeList.Entry(node: "local", controlURL: node.configuration.answeredControlURL(host: host(of: request)),
                                        state: node.isDraining ? "draining" : "serving", alive: true)
                return ok(NodeList(nodes: [me]))
            }
            do {
                return ok(NodeList(nodes: try await cluster.registry.nodes().map {
                    NodeList.Entry(node: $0.id, controlURL: $0.controlURL, state: $0.state.rawValue, alive: $0.alive)
                }))
            } catch {
                throw APIError(.serviceUnavailable, code: 6019, "the cluster registry failed: \(error)")
            }
        }
        router.post("/v1/node/drain") { _, _ in
            node.drain()
            if let cluster { try? await cluster.registry.setState(node: cluster.record.id, .draining) }
            return ok(Done())
        }
    }

    /// The request's Host: the address it came to.
    static func host(of request: Request) -> String? { request.headers[HTTPField.Name("Host")!] ?? request.head.authority }
}
