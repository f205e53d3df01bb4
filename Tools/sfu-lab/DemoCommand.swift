import ArgumentParser
import ExampleSignaling
import NodeCommandLine
import Foundation
import Hummingbird
import Logging
import SFUNode
import ServiceLifecycle

/// The node and the example signaling server together, on loopback: open the printed URL in a browser.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the node and the example signaling server with its demo page.",
        discussion: "The node keeps its usual defaults (API 127.0.0.1:8080, media UDP 127.0.0.1:10000+); the page is served on --host:--port. Open it in two or more browser tabs or machines that reach the media address (see media.announced)."
    )

    @OptionGroup var options: ConfigOptions
    @Option(help: "Address of the demo page and the browsers' WebSocket.") var host = "127.0.0.1"
    @Option(help: "Port of the demo page.") var port = 8000
    @Option(help: "Talker slots of the rooms the demo creates.") var maxActiveTalkers = 4
    @Option(help: "A TURN server the browsers are given (repeatable), e.g. turns:turn.example.com:443?transport=tcp.") var turn: [String] = []
    @Option(help: "The TURN server's username.") var turnUsername: String?
    @Option(help: "The TURN server's credential.") var turnCredential: String?
    @Option(help: "The key that makes a browser a moderator (the page's moderator key field, or ?moderator_key=); without it, a random one is printed.")
    var moderatorKey: String?

    func run() async throws {
        let settings = try options.load()
        let logger = ServeCommand.bootstrapLogging(settings)
        let node = try Node(configuration: settings, logger: logger)
        var signaling = SignalingServer.Configuration()
        // Not built from api.listen's host: an IPv6 one needs brackets, and 0.0.0.0 is no address to connect to.
        signaling.node = URL(string: settings.localControlURL)!
        signaling.nodeKey = settings.apiKey
        signaling.host = host
        signaling.port = port
        signaling.maxActiveTalkers = maxActiveTalkers
        signaling.moderatorKey = ModeratorKey.chosen(moderatorKey)
        if !turn.isEmpty { signaling.iceServers = [.init(urls: turn, username: turnUsername, credential: turnCredential)] }
        let server = SignalingServer(configuration: signaling, logger: logger)
        // The node last, so the first to stop (services stop in reverse order), as `sfu serve` does it.
        let group = ServeCommand.group([
            .init(service: server.application()),
            .init(service: EventRelay(server: server)),
            .init(service: ControlAPI.application(node: node, logger: logger)),
            .init(service: NodeService(node: node)),
        ], logger: logger)
        print("demo: open http://\(host):\(port)/ (node API on \(settings.apiListen)); moderators: \(ModeratorKey.link(host, port, signaling.moderatorKey))")
        try await group.run()
    }
}

/// Runs the example server's event relay as a service until shutdown.
struct EventRelay: Service {
    let server: SignalingServer

    func run() async throws {
        // relayEvents returns only when cancelled: cancel it when the group shuts down (SIGTERM, Ctrl-C).
        // The group never cancels it by itself; it waited forever, reconnecting to the stopped API.
        await cancelWhenGracefulShutdown { await server.relayEvents() }
    }
}

/// The example signaling server alone, beside a node that runs elsewhere.
struct SignalingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signaling",
        abstract: "Run the example signaling server (and its demo page) against a running node."
    )

    @Option(help: "The node's control API.") var node = "http://127.0.0.1:8080"
    @Option(help: "The node's API key, if it has one.") var key: String?
    @Option(help: "Address of the page and the browsers' WebSocket.") var host = "127.0.0.1"
    @Option(help: "Port of the page.") var port = 8000
    @Option(help: "Talker slots of the rooms it creates.") var maxActiveTalkers = 4
    @Option(help: "The key that makes a browser a moderator; without it, a random one is printed.") var moderatorKey: String?

    func run() async throws {
        var c = SignalingServer.Configuration()
        guard let url = URL(string: node) else { throw ValidationError("--node must be a URL") }
        c.node = url
        c.nodeKey = key
        c.host = host
        c.port = port
        c.maxActiveTalkers = maxActiveTalkers
        c.moderatorKey = ModeratorKey.chosen(moderatorKey)
        let server = SignalingServer(configuration: c)
        let group = ServeCommand.group([.init(service: server.application()), .init(service: EventRelay(server: server))],
                                       logger: Logger(label: "signaling"))
        print("signaling: open http://\(host):\(port)/ (node \(node)); moderators: \(ModeratorKey.link(host, port, c.moderatorKey))")
        try await group.run()
    }
}

/// The example server's moderator key: the one given, or a random one (who moderates is the server's to
/// decide, never the browser's: README, "How a signaling server uses the node").
enum ModeratorKey {
    static func chosen(_ given: String?) -> String {
        if let given, !given.isEmpty { return given }
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// The page's address that joins as a moderator.
    static func link(_ host: String, _ port: Int, _ key: String?) -> String {
        "http://\(host):\(port)/?moderator_key=\(key ?? "")"
    }
}
