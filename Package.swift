// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "sfu",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "SFU", targets: ["SFU"]),
        .library(name: "SFUBase", targets: ["SFUBase"]),
        // Tools' and tests' libraries (Benchmarks/ and Fuzz/ build on them).
        .library(name: "SFUMedia", targets: ["SFUMedia"]),
        .library(name: "SFUSimulation", targets: ["SFUSimulation"]),
        .library(name: "SFUFuzzTargets", targets: ["SFUFuzzTargets"]),
        .library(name: "WebRTCEdge", targets: ["WebRTCEdge"]),
        // For Benchmarks/NodeBenchmarks (the control API's answers); the node is used through its binaries.
        .library(name: "SFUNode", targets: ["SFUNode"]),
        .executable(name: "sfu", targets: ["sfu"]),
        .executable(name: "sfu-lab", targets: ["sfu-lab"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
    ],
    targets: [
        // System libraries, each wrapped once (see Sources/SFUBase/Crypto and Sources/SFU/AudioLevel).
        .systemLibrary(name: "CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CVPX", pkgConfig: "vpx", providers: [.apt(["libvpx-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // Wrappers for C macros and variadic functions Swift cannot call, one per library, each linking only its
        // own library (the node never links libvpx).
        .target(name: "COpusShims", linkerSettings: [.linkedLibrary("opus")]),
        .target(name: "CVPXShims", linkerSettings: [.linkedLibrary("vpx")]),
        .target(name: "COpenSSLShims", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // FFmpeg's muxers (libavformat, Debian's libavformat-dev) behind one small C file: the recorder's files.
        .target(name: "CMediaFile", linkerSettings: [.linkedLibrary("avformat"), .linkedLibrary("avcodec"), .linkedLibrary("avutil")]),
        // What the engine and the edge both speak, below both (as SwiftNIO's NIOCore is below its transports):
        // time, connection ids, drop reasons, datagram batches, RTP/RTCP and payload wire formats, SRTP, and the
        // descriptions an offer makes of media.
        .target(name: "SFUBase", dependencies: ["CSRTP"]),
        // The sans-IO media engine: audio level, talkers, forwarding, rooms (re-exports SFUBase).
        .target(name: "SFU", dependencies: ["SFUBase", "COpus", "COpusShims"]),
        // The WebRTC edge, sans-IO like the engine: RFC 7983 demultiplexing, STUN and ICE-lite, DTLS-SRTP and
        // SDP: datagrams and time in, datagrams, keys and events out. It knows nothing of rooms.
        .target(name: "WebRTCEdge", dependencies: ["SFUBase", "COpenSSL", "COpenSSLShims"]),
        // Recording: the writer thread behind the workers' bounded queues, depacketization, files and manifests.
        .target(name: "SFURecording", dependencies: ["SFUBase", "CMediaFile"]),
        // The node's I/O shell: batched UDP (recvmmsg, sendmmsg, UDP GSO) through a small C shim.
        .target(name: "CNodeIO"),
        .target(name: "NodeIO", dependencies: ["CNodeIO", "SFU", "WebRTCEdge"]),
        // The cluster: the registry of nodes and rooms (PostgreSQL through postgres-nio, behind a protocol) and
        // the placement rule. No media code: the node's control plane uses it.
        .target(name: "SFUCluster", dependencies: [
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The node's control plane: configuration, the control API, the event stream, metrics and logs.
        .target(name: "SFUNode", dependencies: [
            "SFU", "WebRTCEdge", "NodeIO", "SFUCluster", "SFURecording",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "TOMLKit", package: "TOMLKit"),
        ]),
        // The node's targets are above, in Sources/. Tools, the example and what tests build on are below, in
        // Tools/ and Examples/: nothing the node links.
        //
        // Real media for tests, tools and benchmarks: Opus and VP8 encoders and decoders, speech synthesis.
        .target(name: "SFUMedia", dependencies: ["SFU", "COpus", "CVPX", "COpusShims", "CVPXShims"], path: "Tools/MediaKit"),
        // Rooms and worker cores on virtual time with simulated clients (their SRTP, ICE and DTLS ends).
        .target(name: "SFUSimulation", dependencies: ["SFU", "WebRTCEdge", "NodeIO", "SFUMedia"], path: "Tools/Simulation"),
        // The fuzz targets: one entry point per parser, the room, and the worker core's datagrams and sessions.
        .target(name: "SFUFuzzTargets", dependencies: ["SFU", "WebRTCEdge", "NodeIO", "SFUSimulation"], path: "Tools/FuzzTargets"),
        // A Swift client of the node's control API and event stream (no media code).
        .target(name: "SFUClient", dependencies: [
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The load generator: simulated WebRTC clients on real UDP, the soak, (then the benchmarks).
        .target(name: "LoadGen", dependencies: [
            "SFU", "WebRTCEdge", "NodeIO", "SFUSimulation", "SFUMedia", "SFUClient", .product(name: "Logging", package: "swift-log"),
        ], path: "Tools/LoadGen"),
        // Cluster tools: a private PostgreSQL server (tests, benchmarks) and the registry benchmark.
        .target(name: "ClusterLab", dependencies: [
            "SFUCluster",
            .product(name: "PostgresNIO", package: "postgres-nio"),
        ], path: "Tools/ClusterLab"),
        // The example signaling server: browsers over a WebSocket, the node over its control API; serves the
        // demo page. Read it as the reference integration.
        .target(name: "ExampleSignaling", dependencies: [
            "SFUClient",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Examples/ExampleSignaling", resources: [.copy("Public")]),
        // The node's command line (serve, config), shared by both binaries.
        .target(name: "NodeCommandLine", dependencies: [
            "SFU", "SFUNode",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // The node's binary: serves, and links only what serving needs. `sfu <tool>` runs sfu-lab.
        .executableTarget(name: "sfu", dependencies: [
            "NodeCommandLine",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // The tools: demo, example signaling, bench, soak, hostile, scenario (encoders, simulated clients).
        .executableTarget(name: "sfu-lab", dependencies: [
            "SFU", "SFUNode", "NodeCommandLine", "SFUSimulation", "SFUMedia", "LoadGen", "SFUClient", "ExampleSignaling", "ClusterLab", "SFURecording",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], path: "Tools/sfu-lab"),
        .testTarget(name: "SFURecordingTests", dependencies: ["SFURecording", "SFUBase", "SFU", "SFUMedia", "SFUSimulation"]),
        .testTarget(name: "SFUBaseTests", dependencies: ["SFUBase", "SFUSimulation", "SFUMedia"]),
        .testTarget(name: "SFUTests", dependencies: ["SFU", "SFUSimulation", "SFUMedia", "SFUFuzzTargets", "CVPX"]),
        .testTarget(name: "SFUNodeTests", dependencies: [
            "SFUNode", "SFU", "WebRTCEdge", "NodeIO", "SFUClient", "LoadGen", "SFUMedia", "ExampleSignaling", "NodeCommandLine",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "HummingbirdWSTesting", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ]),
        .testTarget(name: "SFUClusterTests", dependencies: [
            "SFUCluster", "SFUNode", "ExampleSignaling", "SFUClient", "ClusterLab", "LoadGen", "SFUMedia", "NodeIO", "SFU", "WebRTCEdge",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
        ]),
        .testTarget(name: "LoadGenTests", dependencies: ["LoadGen", "SFU", "WebRTCEdge", "SFUSimulation", "SFUMedia", "COpus"]),
        .testTarget(name: "NodeIOTests", dependencies: ["NodeIO", "SFU", "WebRTCEdge", "SFUSimulation", "SFUMedia", "SFUFuzzTargets"]),
        .testTarget(name: "WebRTCEdgeTests", dependencies: ["WebRTCEdge", "SFU", "SFUSimulation", "SFUMedia"], resources: [.copy("Fixtures")]),
    ]
)
