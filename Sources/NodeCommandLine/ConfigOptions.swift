import ArgumentParser
import Foundation
import SFUNode

/// The configuration options every node command takes, and the one way they are loaded.
public struct ConfigOptions: ParsableArguments {
    public init() {}

    @Option(name: .long, help: "A configuration file (TOML subset: [section], key = value).")
    public var config: String?

    @Option(name: .customLong("set"), help: "Override one key, e.g. --set workers=2 (repeatable).")
    public var overrides: [String] = []

    /// Defaults, then the file, then SFU_* environment variables, then --set; errors name the key.
    public func load() throws -> NodeConfiguration {
        var file: (String, String)?
        if let path = config {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("cannot read the configuration file \(path)")
            }
            file = (path, text)
        }
        do {
            return try NodeConfiguration.load(file: file, environment: ProcessInfo.processInfo.environment, flags: overrides)
        } catch {
            throw ValidationError(error.description)
        }
    }
}
