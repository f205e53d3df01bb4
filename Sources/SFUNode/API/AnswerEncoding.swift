import Foundation
import SFU

/// For Benchmarks/NodeBenchmarks, not for callers: a room's two big answers as the API writes them
/// (`JSONWriter`), so their cost and mallocs can be measured.
@_spi(Benchmarks) public enum AnswerEncoding {
    public static func statsAnswer(_ stats: [ParticipantStats], _ counters: RoomCounters) -> [UInt8] {
        Success(body: RoomStats(stats, counters)).jsonBytes
    }

    public static func stateAnswer(_ snapshot: RoomSnapshot) -> [UInt8] {
        Success(body: RoomState(snapshot: snapshot)).jsonBytes
    }
}
