import ArgumentParser

@main
struct SFUCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sfu",
        abstract: "A selective forwarding unit for active-talker video conferencing.",
        discussion: "The media node (`sfu serve`) is being built; `sfu scenario` runs the media engine on virtual time.",
        subcommands: [ScenarioCommand.self, ConfigCommand.self]
    )
}
