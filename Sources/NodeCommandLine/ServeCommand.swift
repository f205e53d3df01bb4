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
        // NaN when no AES-GCM session could be made (libsrtp without GCM, or not initialised): said, not trapped on.
        let cost = srtp.protectNanoseconds.isFinite ? "\(Int(saturating: srtp.protectNanoseconds)) ns per 1200-byte GCM protect"
            : "not measured: libsrtp could not make an AES-GCM session"
        logger.info("SRTP", metadata: ["backend": "\(srtp.name)", "version": "\(srtp.version)", "cost": "\(cost)"])
        if srtp.isSlow {
            logger.warning("libsrtp runs on NSS, 3-5x slower per packet than on OpenSSL: build with scripts/run.sh (scripts/build-libsrtp.sh)",
                           metadata: ["cost": "\(cost)"])
        }
        // With `cluster.registry` set, the node registers and heartbeats (docs/cluster.md); without, it is on its own.
        let cluster = settings.clusterRegistry.isEmpty ? nil : try ClusterMembership(node: node, logger: logger)
        let app = ControlAPI.application(node: node, cluster: cluster, logger: logger)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: app)]
        // Dual stack: the same API on the other family's address too.
        for address in node.configuration.apiListenAlso {
            services.append(.init(service: ControlAPI.application(node: node, cluster: cluster, logger: logger, address: address)))
        }
        if let cluster { services.insert(.init(service: cluster), at: 0) }
        // Last, so it is the first to shut down (services stop in reverse order): the node leaves its cluster and
        // stops while the API servers still carry the events; then they close, then the registry's connections.
        services.append(.init(service: NodeService(node: node, cluster: cluster)))
        // A stop that hangs (a peer that never closes, a disk that never answers) is cut short: the process exits.
        try await Self.group(services, logger: logger).run()
        logger.info("stopped")
    }

    /// How long a graceful stop may take before the rest is cancelled (a stop normally takes well under 2 s:
    /// Benchmarks/README.md, "Stopping a node").
    public static let stopLimit: Duration = .seconds(10)

    /// The service group every command that serves uses: graceful shutdown on SIGTERM and SIGINT in reverse
    /// order of `services`, cut short after `stopLimit` (then 2 s of cancellation) so that no stop hangs.
    public static func group(_ services: [ServiceGroupConfiguration.ServiceConfiguration], logger: Logger) -> ServiceGroup {
        var configuration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = stopLimit
        configuration.maximumCancellationDuration = .seconds(2)
        return ServiceGroup(configuration: configuration)
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
