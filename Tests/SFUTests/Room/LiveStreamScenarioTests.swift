import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// A room's live stream on virtual time (issue 26; EnableX "Start / Stop Live Streaming"): the seeds' codes, a
/// subscriber that is nobody whose slots follow the talkers and obey hard mute, and audio slots nobody talks on
/// kept going with silence so that an encoder reading a fixed SDP starts.
@Suite struct LiveStreamScenarioTests {
    /// What the shell would send to the encoder: the room writes the live stream's packets here.
    final class Capture: Egress {
        let batch = DatagramBatch(capacity: 4096)
        /// RTP packets per SSRC, and what they carried last (the Opus payload).
        var packets: [UInt32: Int] = [:]
        var lastPayload: [UInt32: [UInt8]] = [:]

        func drain() {
            for i in 0..<batch.count {
                let d = Array(batch.datagram(at: i))
                guard d.count >= 12, !(200...206).contains(d[1]) else { continue }
                let ssrc = UInt32(d[8]) << 24 | UInt32(d[9]) << 16 | UInt32(d[10]) << 8 | UInt32(d[11])
                packets[ssrc, default: 0] += 1
                lastPayload[ssrc] = Array(d[12...])
            }
            batch.removeAll()
        }
    }

    static func talk(_ h: RoomHarness, _ members: inout [RoomHarness.Member], who: Set<Int>, frames: Int, capture: Capture) {
        for _ in 0..<frames {
            for i in members.indices where who.contains(i) {
                h.send(members[i].audio.packet([0xF8, 0xFF, 0xFE, UInt8(i)], level: 10), from: members[i].publish)
                members[i].audio.timestamp &+= 960
            }
            h.advance(by: 20)
            capture.drain()
        }
    }

    static let audioSSRCs: [UInt32] = [0x4C49_5610, 0x4C49_5611, 0x4C49_5612]

    @Test func theStreamsSlotsFollowTheTalkersKeepSilentSlotsGoingAndTheSeedsCodesRefuseTheRest() throws {
        var c = RoomConfiguration()
        c.levelSource = .extension
        c.maxActiveTalkers = 4
        let h = try RoomHarness(configuration: c)
        var members = [try h.join("M", role: .moderator, audioSlots: 1), try h.join("A", audioSlots: 1)]
        let capture = Capture()
        func code(_ body: () throws -> Void) -> Int? {
            do { try body() } catch let e as RoomError { return e.code.rawValue } catch { return -1 }
            return nil
        }
        #expect(code { try h.room.liveStream.requestStart(id: "s", by: "A", now: h.now) } == 5003)
        #expect(code { _ = try h.room.liveStream.requestStop(by: "M", now: h.now) } == 5124)
        try h.room.liveStream.requestStart(id: "s", by: "M", now: h.now)
        #expect(code { try h.room.liveStream.requestStart(id: "t", by: "M", now: h.now) } == 5121)
        let slots = try #require(h.room.liveStream.started(id: "s", connection: ConnectionID(9_999), egress: capture, audioSlots: 3,
                                                         now: h.now, into: h.batch))
        h.flush()
        #expect(slots.map(\.codec) == [.vp8, .opus, .opus, .opus])
        #expect(!h.events.contains { if case .streaming = $0.1 { true } else { false } }, "told only once the encoder runs")
        h.room.liveStream.launched(id: "s")
        h.flush()
        #expect(h.events.contains { $0.1 == .streaming(state: .starting, id: "s", by: "M", reason: nil) })
        #expect(h.room.streaming?.live == false, "starting: not live until the encoder's output is open")
        h.room.liveStream.live(id: "s")
        h.room.liveStream.live(id: "s")
        h.flush()
        #expect(h.events.filter { $0.1 == .streaming(state: .on, id: "s", by: "M", reason: nil) }.count == 1)
        #expect(h.room.streaming?.live == true)
        #expect(code { try h.room.liveStream.requestStart(id: "t", by: "M", now: h.now) } == 5122)
        // Only A talks: A's audio reaches the stream; the slots nobody talks on send silence every 20 ms.
        Self.talk(h, &members, who: [1], frames: 50, capture: capture)
        let carrying = Self.audioSSRCs.filter { capture.lastPayload[$0]?.last == 1 }
        #expect(carrying.count == 1, "A's audio on one slot: \(capture.lastPayload)")
        // Three audio slots, two publishers: A's slot carries A, M's carries what M sends (nothing here), and the
        // third, empty, sends silence - every slot an encoder waits on gets packets once its publisher sends.
        let busy = Self.audioSSRCs.filter { (capture.packets[$0] ?? 0) >= 45 }
        #expect(busy.count == 2, "\(capture.packets)")
        #expect(busy.contains { capture.lastPayload[$0] == [0xF8, 0xFF, 0xFE] }, "the empty slot sends Opus silence")
        // Hard mute holds for the stream as for any subscriber: A's audio stops reaching it.
        _ = try h.room.moderation.moderate(.hardMute(target: "A", audio: true, video: nil), by: "M", now: h.now, into: h.batch)
        capture.packets.removeAll()
        capture.lastPayload.removeAll()
        Self.talk(h, &members, who: [1], frames: 50, capture: capture)
        #expect(!Self.audioSSRCs.contains { capture.lastPayload[$0]?.last == 1 }, "nothing of A after the hard mute")
        // Stop: the room lets go, and says so.
        let (id, conn) = try h.room.liveStream.requestStop(by: "M", now: h.now)
        #expect(id == "s" && conn == ConnectionID(9_999))
        #expect(code { _ = try h.room.liveStream.requestStop(by: "M", now: h.now) } == 5123)
        #expect(h.room.liveStream.stopped(id: "old") == nil, "an old stream's late cleanup ends nothing")
        #expect(h.room.liveStream.stopped(id: "s") == ConnectionID(9_999))
        h.flush()
        #expect(h.events.contains { $0.1 == .streaming(state: .off, id: "s", by: "M", reason: nil) })
        #expect(h.room.streaming == nil && h.room.sessions.connection(ConnectionID(9_999)) == nil)
        capture.packets.removeAll()
        Self.talk(h, &members, who: [0, 1], frames: 10, capture: capture)
        #expect(capture.packets.isEmpty, "nothing is written for a stopped stream")
    }

    /// An encoder that restarts is starting again until its output reopens; one that gives up is `failed`; a
    /// room destroyed while streaming tells `off` with the reason before its end (issue 40).
    @Test func aStreamIsStartingUntilItsEncoderIsLiveAndSaysFailedOrOffWhenItEnds() throws {
        let h = try RoomHarness(configuration: RoomConfiguration())
        _ = try h.join("M", role: .moderator, audioSlots: 1)
        let capture = Capture()
        try h.room.liveStream.requestStart(id: "s", by: "M", now: h.now)
        _ = try #require(h.room.liveStream.started(id: "s", connection: ConnectionID(9_998), egress: capture, audioSlots: 1, now: h.now, into: h.batch))
        h.room.liveStream.launched(id: "s")
        h.room.liveStream.live(id: "s")
        h.room.liveStream.notice(id: "s", reason: "encoder restarted: ffmpeg exited with status 1")
        #expect(h.room.streaming?.live == false)
        h.room.liveStream.live(id: "s")
        h.room.liveStream.stopped(id: "s", reason: "encoder gave up: refused connection", failed: true)
        h.flush()
        let states = h.events.compactMap { e -> String? in
            guard case .streaming(let state, _, let by, let reason) = e.1 else { return nil }
            return "\(state.rawValue) \(by ?? "-") \(reason ?? "-")"
        }
        #expect(states == ["starting M -", "on M -", "starting - encoder restarted: ffmpeg exited with status 1", "on M -",
                           "failed - encoder gave up: refused connection"])
        try h.room.liveStream.requestStart(id: "t", by: "M", now: h.now)
        _ = try #require(h.room.liveStream.started(id: "t", connection: ConnectionID(9_997), egress: capture, audioSlots: 1, now: h.now, into: h.batch))
        h.room.liveStream.launched(id: "t")
        h.room.destroy(now: h.now)
        h.flush()
        let last = h.events.suffix(3).map(\.1)
        #expect(last.contains(.streaming(state: .off, id: "t", by: nil, reason: "room destroyed")), "\(last)")
        #expect(last.last == .roomDestroyed, "the stream's end is told before the room's")
    }
}
