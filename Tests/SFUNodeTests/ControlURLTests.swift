import Foundation
import Hummingbird
import HTTPTypes
import HummingbirdTesting
@testable import SFUNode
import Testing
import WebRTCEdge

/// The control URL a node hands out (issue 40): `api.listen` is where the API binds, not an address a signaling
/// server can be sent to - 0.0.0.0 names none, and a dual-stack node has two.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ControlURLTests {
    static func node(listen: [String], controlURL: String = "") throws -> Node {
        var c = NodeConfiguration()
        c.workers = 1
        c.mediaListen = TransportAddress("127.0.0.1:0")!
        c.apiListen = TransportAddress(listen[0])!
        c.apiListenAlso = listen.dropFirst().map { TransportAddress($0)! }
        c.apiKey = "k"
        c.clusterControlURL = controlURL
        let n = try Node(configuration: c)
        n.start()
        return n
    }

    /// A placement and the node list, asked at `host`.
    static func answers(_ node: Node, host: String) async throws -> (placed: String?, listed: String?) {
        let app = Application(router: ControlAPI.router(node: node))
        let r = try await ControlAPITests.call(app, [
            (.post, "/v1/placements", ["room": "standup"], ["Host": host, "Authorization": "Bearer k"]),
            (.get, "/v1/nodes", nil, ["Host": host, "Authorization": "Bearer k"]),
        ])
        return (r[0].json["control_url"] as? String, (r[1].json["nodes"] as? [[String: Any]])?.first?["control_url"] as? String)
    }

    /// Without a registry the node answers with the address the signaling server reached it at: on every address
    /// (it answered http://0.0.0.0:8080), and on IPv4 and IPv6 (it answered the first, whichever was asked).
    @Test func aNodeWithoutARegistryNamesTheAddressItWasAskedAt() async throws {
        let wildcard = try Self.node(listen: ["0.0.0.0:8080"])
        defer { wildcard.stop() }
        let a = try await Self.answers(wildcard, host: "10.0.0.5:8080")
        #expect(a.placed == "http://10.0.0.5:8080" && a.listed == "http://10.0.0.5:8080", "\(a)")
        let dual = try Self.node(listen: ["192.0.2.7:8080", "[2001:db8::7]:8080"])
        defer { dual.stop() }
        let b = try await Self.answers(dual, host: "[2001:db8::7]:8080")
        #expect(b.placed == "http://[2001:db8::7]:8080" && b.listed == "http://[2001:db8::7]:8080", "\(b)")
        // An operator's URL (a proxy's name, https) wins; a Host no URL can be made of is not echoed.
        let named = try Self.node(listen: ["0.0.0.0:8080"], controlURL: "https://sfu-1.example.com")
        defer { named.stop() }
        #expect(try await Self.answers(named, host: "10.0.0.5:8080").placed == "https://sfu-1.example.com")
        #expect(wildcard.configuration.answeredControlURL(host: "evil.example/x?y") == "http://127.0.0.1:8080")
        #expect(dual.configuration.answeredControlURL(host: nil) == "http://192.0.2.7:8080")
        // What `sfu demo`'s signaling server connects to (it took api.listen's host: [::1] lost its brackets).
        var v6 = NodeConfiguration()
        v6.apiListen = TransportAddress("[::1]:8080")!
        #expect(v6.localControlURL == "http://[::1]:8080" && URL(string: v6.localControlURL) != nil)
        v6.apiListen = TransportAddress("[::]:8080")!
        #expect(v6.localControlURL == "http://[::1]:8080")
    }

    /// In a cluster the registry keeps one URL for other nodes and every signaling server: a node on every address
    /// must name it, or it does not start.
    @Test func aClusterNodeOnEveryAddressMustSayItsControlURL() throws {
        var c = NodeConfiguration()
        c.apiListen = TransportAddress("0.0.0.0:8080")!
        c.apiKey = "k"
        c.mediaListen = TransportAddress("10.0.0.11:10000")!
        c.clusterRegistry = "postgres://sfu@10.0.0.2/sfu"
        #expect(throws: ConfigError.self) { try c.validate() }
        c.clusterControlURL = "http://10.0.0.11:8080"
        try c.validate()
        #expect(try c.registeredControlURL() == "http://10.0.0.11:8080")
        c.clusterControlURL = ""
        c.apiListen = TransportAddress("10.0.0.11:8080")!
        #expect(try c.registeredControlURL() == "http://10.0.0.11:8080")
    }
}
