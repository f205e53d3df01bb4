import ArgumentParser
import NodeCommandLine

/// The node's binary: it serves and checks configuration, and links nothing else (no encoders, load
/// generator, fuzz targets or test harnesses). The tools (`sfu bench`, `demo`, `signaling`, `soak`, `hostile`,
/// `scenario`, `tune`) live in `sfu-lab`, built next to it; `sfu <tool> ...` runs `sfu-lab <tool> ...`, as git runs
/// its `git-<name>` helpers, so the commands people know keep working.
struct SFUCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sfu",
        abstract: "A selective forwarding unit for active-talker video conferencing.",
        discussion: """
            `sfu serve` runs the media node; `sfu config` prints or checks its configuration. \
            The tools run from the sfu-lab binary beside this one: \(LabDispatch.tools.joined(separator: ", ")) \
            (e.g. `sfu bench --help`).
            """,
        subcommands: [ServeCommand.self, ConfigCommand.self]
    )
}

@main
enum SFUMain {
    static func main() async {
        let arguments = CommandLine.arguments
        if arguments.count > 1, LabDispatch.tools.contains(arguments[1]) {
            LabDispatch.run(arguments: Array(arguments.dropFirst()))  // replaces this process; returns only on error
        }
        await SFUCommand.main()
    }
}
