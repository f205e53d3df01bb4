import ArgumentParser
import Foundation
import SFUNode

/// Prints the effective configuration (defaults, file, environment, flags) or checks a file.
public struct ConfigCommand: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Print the effective configuration, or check a configuration file.",
        discussion: "Sources, each overriding the one before: defaults, --config FILE, SFU_<SECTION>_<KEY> environment variables, --set section.key=value."
    )

    @OptionGroup public var options: ConfigOptions

    @Flag(help: "List every key with its meaning.")
    public var keys = false

    @Flag(help: "Print the reference of every key with its default, as Markdown (docs/configuration.md).")
    public var markdown = false

    @Flag(help: "Print secrets (api.key, the registry's password) as they are, not hidden.")
    public var showSecrets = false

    public func run() throws {
        if keys {
            for k in NodeConfiguration.table { print("\(k.name.padding(toLength: 34, withPad: " ", startingAt: 0)) \(k.help)") }
            return
        }
        if markdown {
            print(NodeConfiguration.markdownReference, terminator: "")
            return
        }
        print(try options.load().fileText(showingSecrets: showSecrets), terminator: "")
    }
}
