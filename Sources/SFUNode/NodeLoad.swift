extension Node {
    /// One worker's part of the cluster's heartbeat: its rooms with their participants, and its datagram counters.
    struct WorkerLoad: Sendable {
        var rooms: [String: Int]
        var datagrams: LoadRates.Counts
    }

    /// Each running worker's load, asked on its own thread (a command like any other, so nothing reads a room
    /// from outside), all at once and each given `within` to answer: a worker that is busy, stopping or stuck
    /// is missing from the answer rather than holding the heartbeat (a heartbeat late by more than the timeout
    /// makes the node dead to the cluster).
    func workerLoads(within: Duration) async -> [Int: WorkerLoad] {
        await withTaskGroup(of: (Int, WorkerLoad?).self) { group in
            for w in workers where w.isRunning {
                group.addTask {
                    let load = try? await ClusterMembership.deadline(within) {
                        try await w.perform { core, _ in
                            WorkerLoad(rooms: core.rooms.mapValues(\.participantCount),
                                       datagrams: .init(datagramsIn: w.socket.datagramsReceived, datagramsOut: w.socket.datagramsSent))
                        }
                    }
                    return (w.index, load)
                }
            }
            var loads: [Int: WorkerLoad] = [:]
            for await (i, load) in group { if let load { loads[i] = load } }
            return loads
        }
    }
}
