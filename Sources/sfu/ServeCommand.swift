import ArgumentParser
import Foundation
import Hummingbird
import Logging
import SFUNode

/// Runs the media node: workers on UDP, the control API on HTTP, until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the media node (UDP media workers and the HTTP control API).",
        discussion: "Defaults need no file: API on 127.0.0.1:8080, media on UDP 127.0.0.1:10000 (one port per worker, counting up), one worker per core. See `sfu config --keys`."
    )

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let settings = try options.load()
        var logger = Logger(label: "sfu")
        logger.logLevel = Logger.Level(rawValue: settings.logLevel) ?? .info
        let node = try Node(configuration: settings)
        node.start()
        for w in node.workers { logger.info("media worker \(w.index) on udp \(w.socket.local)") }
        logger.info("DTLS fingerprint \(node.certificate.fingerprint)")
        let app = Application(
            router: ControlAPI.router(node: node),
            configuration: .init(address: .hostname(settings.apiListen.host, port: Int(settings.apiListen.port)), serverName: "sfu"),
            logger: logger
        )
        try await app.runService()
        logger.info("stopping media workers")
        node.stop()
    }
}
