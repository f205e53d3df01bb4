import ArgumentParser

@main
struct SFUCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sfu",
        abstract: "A selective forwarding unit for active-talker video conferencing.",
        discussion: "`sfu serve` runs the media node; `sfu soak` churns simulated clients through a node and checks it stays up and does not leak; `sfu hostile` attacks a node with misbehaving clients; `sfu scenario` runs the media engine on virtual time.",
        subcommands: [ServeCommand.self, DemoCommand.self, SignalingCommand.self, BenchCommand.self, SoakCommand.self, HostileCommand.self, ScenarioCommand.self, ConfigCommand.self]
    )
}
