import ArgumentParser
import Foundation
import SFUNode

/// Prints the effective configuration (defaults, file, environment, flags) or checks a file.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Print the effective configuration, or check a configuration file.",
        discussion: "Sources, each overriding the one before: defaults, --config FILE, SFU_<SECTION>_<KEY> environment variables, --set section.key=value."
    )

    @Option(name: .long, help: "A configuration file (TOML subset: [section], key = value).")
    var config: String?

    @Option(name: .customLong("set"), help: "Override one key, e.g. --set media.listen=127.0.0.1:10000 (repeatable).")
    var overrides: [String] = []

    @Flag(help: "List every key with its meaning.")
    var keys = false

    func run() throws {
        if keys {
            for k in NodeConfiguration.keys { print("\(k.key.padding(toLength: 26, withPad: " ", startingAt: 0)) \(k.help)") }
            return
        }
        var file: (String, String)?
        if let path = config {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("cannot read the configuration file \(path)")
            }
            file = (path, text)
        }
        do {
            let c = try NodeConfiguration.load(file: file, environment: ProcessInfo.processInfo.environment, flags: overrides)
            print(c.fileText, terminator: "")
        } catch {
            throw ValidationError(error.description)
        }
    }
}
