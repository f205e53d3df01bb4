import ArgumentParser
import Foundation
import Hummingbird
import Logging
import SFU
import SFUNode
import ServiceLifecycle

/// Runs the media node: workers on UDP, the control API on HTTP, until SIGTERM or SIGINT.
public struct ServeCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the media node (UDP media workers and the HTTP control API).",
        discussion: "Defaults need no file: API on 127.0.0.1:8080, media on UDP 127.0.0.1:10000 (one port per worker, counting up), one worker per core. See `sfu config --keys`."
    )

    @OptionGroup public var options: ConfigOptions

    public func run() async throws {
        let settings = try options.load()
        let logger = Self.bootstrapLogging(settings)
        let node = try Node(configuration: settings, logger: logger)
        for w in node.workers { logger.info("media worker listening", metadata: ["worker": "\(w.index)", "udp": "\(w.socket.local)"]) }
        logger.info("DTLS identity", metadata: ["fingerprint": "\(node.certificate.fingerprint)"])
        let srtp = SRTPBackend.current
        let cost = "\(Int(srtp.protectNanoseconds)) ns per 1200-byte GCM protect"
        logger.info("SRTP", metadata: ["backend": "\(srtp.name)", "version": "\(srtp.version)", "cost": "\(cost)"])
        if srtp.isSlow {
            logger.warning("libsrtp runs on NSS, 3-5x slower per packet than on OpenSSL: build with scripts/run.sh (scripts/build-libsrtp.sh)",
                           metadata: ["cost": "\(cost)"])
        }
        // With `cluster.registry` set, the node registers and heartbeats (docs/cluster.md); without, it is on its own.
        let cluster = settings.clusterRegistry.isEmpty ? nil : try ClusterMembership(node: node, logger: logger)
        let app = ControlAPI.application(node: node, cluster: cluster, logger: logger)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: app), .init(service: NodeService(node: node))]
        // Dual stack: the same API on the other family's address too.
        for address in node.configuration.apiListenAlso {
            services.append(.init(service: ControlAPI.application(node: node, cluster: cluster, logger: logger, address: address)))
        }
        if let cluster { services.insert(.init(service: cluster), at: 0) }
        let group = ServiceGroup(configuration: .init(
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
        logger.info("stopped")
    }

    /// Text (key=value metadata) or JSON lines on standard error, at the configured level.
    public static func bootstrapLogging(_ settings: NodeConfiguration) -> Logger {
        let level = Logger.Level(rawValue: settings.logLevel) ?? .info
        let json = settings.logFormat == "json"
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = json ? JSONLogHandler(label: label) : TextLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "sfu")
    }
}
