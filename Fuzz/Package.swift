// swift-tools-version:6.0
// libFuzzer build of the engine's fuzz entry points (see scripts/fuzz.sh, which passes the coverage and
// sanitizer flags; a plain `swift build` here does not link, by design).
import PackageDescription

let package = Package(
    name: "sfu-fuzz",
    dependencies: [.package(name: "sfu", path: "..")],
    targets: [
        .executableTarget(name: "sfu-fuzz", dependencies: [.product(name: "SFUFuzzTargets", package: "sfu")]),
    ]
)
