extension Node {
    /// Rooms with their participants, and the datagram counters, for the cluster's heartbeat: each worker
    /// answers on its own thread (a command like any other), so nothing reads a room from outside.
    func loadSnapshot() async -> (rooms: [String: Int], datagramsIn: UInt64, datagramsOut: UInt64) {
        var rooms: [String: Int] = [:]
        var datagramsIn: UInt64 = 0, datagramsOut: UInt64 = 0
        for w in workers where w.isRunning {
            guard let (r, i, o) = try? await w.perform({ core, _ in
                (core.rooms.mapValues(\.participantCount), w.socket.datagramsReceived, w.socket.datagramsSent)
            }) else { continue }
            rooms.merge(r) { a, _ in a }
            datagramsIn &+= i
            datagramsOut &+= o
        }
        return (rooms, datagramsIn, datagramsOut)
    }
}
