/// The tool commands of the `sfu` binary, which live in the `sfu-lab` binary beside it (`sfu <tool>` runs
/// `sfu-lab <tool>`), and what `sfu` says when that binary is not there.
public enum LabTools {
    /// The commands that live in sfu-lab.
    public static let names = ["bench", "demo", "signaling", "soak", "hostile", "scenario", "tune", "registry-bench", "relay-sim", "relay-bench", "compose"]

    /// The message for `tool` when sfu-lab cannot run from `labPath` (`reason`: the system's).
    public static func missing(tool: String, labPath: String, reason: String) -> String {
        "sfu: `\(tool)` is a tool of sfu-lab, which cannot run from \(labPath): \(reason).\n"
            + "Build it beside sfu: swift build --product sfu-lab (scripts/run.sh and the test scripts build both).\n"
    }
}
