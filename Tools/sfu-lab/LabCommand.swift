import ArgumentParser

/// The tools around the node, kept out of the node's binary because they link what serving never needs:
/// Opus and VP8 encoders, speech synthesis, simulated clients, the load generator, the example signaling
/// server. `sfu <tool>` runs them through this binary.
@main
struct LabCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sfu-lab",
        abstract: "Tools around the sfu node: demo, example signaling server, benchmarks, soak, hostile clients, scenarios, tuning.",
        discussion: "`sfu demo` runs a node with the example signaling server and its demo page; `sfu bench` measures a node under load; `sfu soak` churns simulated clients through a node and checks it stays up and does not leak; `sfu hostile` attacks a node with misbehaving clients; `sfu scenario` runs the media engine on virtual time; `sfu tune` compares max_active_talkers values on a simulated meeting; `sfu compose` mixes a recording's files into one video. `sfu <tool>` and `sfu-lab <tool>` are the same.",
        subcommands: [DemoCommand.self, SignalingCommand.self, BenchCommand.self, SoakCommand.self, HostileCommand.self, ScenarioCommand.self, TuneCommand.self,
                      RegistryBenchCommand.self, RelaySimCommand.self, RelayBenchCommand.self, ComposeCommand.self]
    )
}
