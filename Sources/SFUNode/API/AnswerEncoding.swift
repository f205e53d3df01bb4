import Foundation
import SFU

/// For Benchmarks/NodeBenchmarks, not for callers: a room's two big answers as the API writes them
/// (`JSONWriter`) or as it did before (a fresh `JSONEncoder` per answer, `[.sortedKeys,
/// .withoutEscapingSlashes]`), from the same value, so the two can be timed and their mallocs counted.
@_spi(Benchmarks) public enum AnswerEncoding {
    public static func statsAnswer(_ stats: [ParticipantStats], _ counters: RoomCounters, jsonEncoder: Bool) -> [UInt8] {
        bytes(Success(body: RoomStats(stats, counters)), jsonEncoder: jsonEncoder)
    }

    public static func stateAnswer(_ snapshot: RoomSnapshot, jsonEncoder: Bool) -> [UInt8] {
        bytes(Success(body: RoomState(snapshot: snapshot)), jsonEncoder: jsonEncoder)
    }

    static func bytes(_ body: some JSONFields, jsonEncoder: Bool) -> [UInt8] {
        guard jsonEncoder else { return body.jsonBytes }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(body)) ?? Data())
    }
}
