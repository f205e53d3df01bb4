// swift-tools-version:6.1
// Microbenchmarks of the media engine, the edge and the node's control API (package-benchmark). Run from this folder:
//   swift package benchmark                 # all, with wall clock, throughput and malloc counts
//   swift package benchmark --filter Forward
import PackageDescription

let package = Package(
    name: "sfu-benchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "sfu", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "EngineBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SFU", package: "sfu"),
                .product(name: "SFUMedia", package: "sfu"),
                .product(name: "SFUSimulation", package: "sfu"),
                .product(name: "SFUFuzzTargets", package: "sfu"),
            ],
            path: "Benchmarks/EngineBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "EdgeBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SFU", package: "sfu"),
                .product(name: "WebRTCEdge", package: "sfu"),
            ],
            path: "Benchmarks/EdgeBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "NodeBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SFU", package: "sfu"),
                .product(name: "SFUNode", package: "sfu"),
                .product(name: "SFUMedia", package: "sfu"),
                .product(name: "SFUSimulation", package: "sfu"),
            ],
            path: "Benchmarks/NodeBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
