import ClusterLab
import Testing

/// `sfu registry-bench` on a small plan: it places every participant, never splits a room across the four
/// signaling servers racing on it, and reads what the database wrote (no figure is checked: those are for
/// Benchmarks/README.md).
@Suite struct RegistryBenchTests {
    @Test func theRegistryBenchPlacesEveryoneWithoutSplittingARoomAndCountsTheWrites() async throws {
        var plan = RegistryBench.Plan()
        plan.nodes = 4
        plan.rooms = 12
        plan.participantsPerRoom = 6
        plan.minimumSeconds = 1.5
        let r = try await RegistryBench.run(url: try PostgresServer.shared.get().database(), plan: plan)
        #expect(r.placements == 72 && r.refused == 0 && r.splitRooms == 0, "\(r)")
        #expect(!r.heartbeatMillis.isEmpty && r.transactions >= 72 && r.rowsWritten >= 72, "\(r)")
    }
}
