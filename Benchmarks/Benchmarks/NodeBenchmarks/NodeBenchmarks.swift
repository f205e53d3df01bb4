import Benchmark
import SFU
@_spi(Benchmarks) import SFUNode
import SFUMedia
import SFUSimulation

/// The control API's two big answers for a room of 64 (the room of `sfu bench`'s video conference: 4 VP8
/// publishers, 60 subscribers of 4 audio + 4 video slots), written as the API writes them (JSONWriter; a
/// JSONEncoder per answer took about 10 times as long: Benchmarks/README.md), one answer per operation.
/// Building the value (the room's `stats()` or `snapshot()`, on the worker) is not measured.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(3), maxIterations: 1000)

    let room = ConferenceRoom()
    Benchmark("Stats answer of a room of 64, JSONWriter") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(AnswerEncoding.statsAnswer(room.stats, room.counters)) }
    }
    Benchmark("State answer of a room of 64, JSONWriter") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(AnswerEncoding.stateAnswer(room.snapshot)) }
    }
}

/// A room after 2 s of media (virtual time) from 4 publishers of Opus and VP8 to 60 subscribers, so the
/// counters have the digits of a running room and every slot shows a publisher.
final class ConferenceRoom: @unchecked Sendable {
    let stats: [ParticipantStats]
    let counters: RoomCounters
    let snapshot: RoomSnapshot

    init() {
        let h = try! RoomHarness()
        h.nullCipher = true
        h.keepReceived = false
        var publishers = (0..<4).map { try! h.join("publisher-\($0)", publishVideo: true, audioSlots: 0) }
        for i in 0..<60 { _ = try! h.join("subscriber-\(i)", audioSlots: 4, videoSlots: 4) }
        let opus = OpusFrameEncoder().encode(ArraySlice(TestSignal.sine(dbfs: -20, seconds: 0.02)))
        for frame in 0..<100 {
            for p in publishers.indices {
                h.send(publishers[p].audio.packet(opus, level: 25), from: publishers[p].publish)
                publishers[p].audio.timestamp &+= 960
                var vp8 = [UInt8](repeating: UInt8(frame & 0xFF), count: 1100)  // VP8 descriptor: picture id, key frame first
                vp8.replaceSubrange(0..<6, with: [0x90, 0x80, 0x80 | UInt8((frame >> 8) & 0x7F), UInt8(frame & 0xFF), 0x00, frame == 0 ? 0x10 : 0x11])
                h.send(publishers[p].video.packet(vp8, marker: true), from: publishers[p].publish)
                publishers[p].video.timestamp &+= 1800
            }
            h.advance(to: h.now + .milliseconds(20))
        }
        stats = h.room.stats()
        counters = h.room.counters
        snapshot = h.room.snapshot()
        let shown = stats.flatMap(\.slots).filter { $0.participant != nil }.count
        precondition(stats.count == 64 && shown >= 60 * 4, "the room is not the bench's: \(stats.count) participants, \(shown) slots showing someone")
    }
}
