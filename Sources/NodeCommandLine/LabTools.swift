/// The tool commands of the `sfu` binary, which live in the `sfu-lab` binary beside it (`sfu <tool>` runs
/// `sfu-lab <tool>`), and what `sfu` says when that binary is not there.
public enum LabTools {
    /// The commands that live in sfu-lab.
    public static let names = ["bench", "demo", "signaling", "soak", "hostile", "scenario", "tune", "registry-bench", "relay-sim", "relay-bench", "compose"]

    /// The message for `tool` when sfu-lab cannot run from `labPath` (`reason`: the system's): exactly what to
    /// run. In a checkout's build tree (`<root>/.build/.../<configuration>/sfu-lab`) that is the build of sfu-lab
    /// in the same configuration, with the libsrtp set-up the build needs (scripts/lib.sh), or the command
    /// through scripts/run.sh, which builds both; elsewhere, where the binary must go.
    public static func missing(tool: String, labPath: String, reason: String) -> String {
        let directory = labPath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        var text = "sfu: `\(tool)` is a tool of sfu-lab, which cannot run from \(labPath): \(reason).\n"
        if let build = labPath.range(of: "/.build/"), let configuration = directory.split(separator: "/").last {
            let root = labPath[..<build.lowerBound]
            text += "Build it beside this sfu:\n    cd \(root) && source scripts/lib.sh && build_sfu \(configuration) sfu-lab\n"
                + "or run the command through the run script, which builds both: scripts/run.sh \(tool) ...\n"
        } else {
            text += "Install the sfu-lab binary built with this sfu in \(directory).\n"
        }
        return text
    }
}
