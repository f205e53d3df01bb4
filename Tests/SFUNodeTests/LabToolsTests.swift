import NodeCommandLine
import Testing

/// `sfu compose` and every tool command run from the sfu-lab binary beside `sfu` (issue 40). One who followed the
/// README's set-up (`scripts/run.sh`, which built only `sfu`) got a message naming a command that builds a
/// debug sfu-lab elsewhere, without the libsrtp set-up, and claiming run.sh builds both. The message says
/// exactly what to run for the binary it came from.
@Suite struct LabToolsTests {
    @Test func aMissingSfuLabIsAnsweredWithTheCommandThatBuildsItBesideThisSfu() {
        let release = LabTools.missing(tool: "compose", labPath: "/home/ann/sfu/.build/x86_64-unknown-linux-gnu/release/sfu-lab",
                                       reason: "No such file or directory")
        #expect(release.contains("cd /home/ann/sfu && source scripts/lib.sh && build_sfu release sfu-lab"), "\(release)")
        #expect(release.contains("scripts/run.sh compose"), "or the run script, which builds both: \(release)")
        let debug = LabTools.missing(tool: "bench", labPath: "/src/sfu/.build/debug/sfu-lab", reason: "No such file or directory")
        #expect(debug.contains("cd /src/sfu && source scripts/lib.sh && build_sfu debug sfu-lab"), "\(debug)")
        // Installed outside a build tree: no build command to give, only where the binary must go.
        let installed = LabTools.missing(tool: "hostile", labPath: "/usr/local/bin/sfu-lab", reason: "No such file or directory")
        #expect(installed.contains("/usr/local/bin") && !installed.contains("build_sfu"), "\(installed)")
        #expect(!release.contains("swift build --product sfu-lab"), "that builds a debug sfu-lab, not one beside a release sfu")
    }
}
