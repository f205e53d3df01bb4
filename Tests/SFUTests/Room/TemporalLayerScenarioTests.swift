@testable import SFU
@testable import SFUBase
import SFUMedia
import SFUSimulation
import Testing

/// VP8 temporal layers on virtual time (issue 14): a simulcast publisher whose layers each carry three temporal
/// layers in libwebrtc's pattern (0, 2, 1, 2); a subscriber whose share falls between two spatial layers is
/// sent the higher one at a fraction of its frames, as one continuous stream.
@Suite struct TemporalLayerScenarioTests {
    /// Temporal layer and Y bit of each frame in a cycle: TL1 and the first TL2 reference only the base layer.
    static let pattern: [(tid: UInt8, sync: Bool)] = [(0, false), (2, true), (1, true), (2, false)]
    static let ssrcs: [UInt32] = [0xC1, 0xC2, 0xC3]

    final class Call {
        let h: RoomHarness
        let publisher: RoomHarness.Member
        let subscriber: RoomHarness.Member
        var writers = TemporalLayerScenarioTests.ssrcs.map { RTPStreamWriter(ssrc: $0, payloadType: 96, timestamp: 90_000) }
        var pictureID: UInt16 = 300
        var tl0: UInt8 = 7
        var frame = 0
        var rtcpRead = 0

        init(_ configuration: RoomConfiguration = .init()) throws {
            h = try RoomHarness(configuration: configuration)
            publisher = try h.join("P")
            subscriber = try h.join("S", audioSlots: 1, videoSlots: 1)
            try h.publishSimulcast(publisher, layers: TemporalLayerScenarioTests.ssrcs)
        }

        /// `ms` of frames, one packet per layer every 10 ms (a key frame on a layer when the node asks), and the
        /// subscriber's estimate `bps` as REMB every 100 ms.
        func run(ms: Int, bps: UInt64) {
            for step in 0..<(ms / 10) {
                let rtcp = h.rtcp(to: publisher.publish.connection)
                let plis = Set(rtcp.dropFirst(rtcpRead).filter { $0.count >= 12 && $0[1] == 206 && $0[0] & 0x1F == 1 }
                    .map { UInt32($0[8]) << 24 | UInt32($0[9]) << 16 | UInt32($0[10]) << 8 | UInt32($0[11]) })
                rtcpRead = rtcp.count
                let (tid, sync) = TemporalLayerScenarioTests.pattern[frame % 4]
                for i in 0..<3 {
                    let key = frame == 0 || plis.contains(TemporalLayerScenarioTests.ssrcs[i])
                    var payload = [UInt8](repeating: UInt8(i), count: SimulcastScenarioTests.sizes[i])
                    // RFC 7741 section 4.2: X, S; I, L, T; 15-bit picture id; TL0PICIDX; TID and Y.
                    let t: UInt8 = key ? 0 : tid
                    payload.replaceSubrange(0..<8, with: [0x90, 0xE0, 0x80 | UInt8(pictureID >> 8), UInt8(pictureID & 0xFF), tl0,
                                                         t << 6 | (sync && !key ? 0x20 : 0), key ? 0x10 : 0x11, UInt8(i)])
                    let packet = writers[i].packet(payload, marker: true)
                    writers[i].timestamp &+= 900
                    h.send(packet, from: publisher.publish)
                }
                pictureID = (pictureID + 1) & 0x7FFF
                frame += 1
                if TemporalLayerScenarioTests.pattern[frame % 4].tid == 0 { tl0 &+= 1 }
                if step % 10 == 0 {
                    var buf = [UInt8](repeating: 0, count: 64)
                    let n = buf.withUnsafeMutableBytes { REMB(senderSSRC: 0xB0B, bitrate: bps, ssrcs: [1]).write(into: $0) }!
                    h.send(Array(buf[0..<n]), from: subscriber.subscribe)
                }
                h.advance(by: 10)
            }
        }

        /// What the subscriber's video slot carried: each packet's layer tag, temporal layer, sequence number,
        /// picture id and TL0PICIDX.
        func received() -> [(layer: UInt8, tid: UInt8, sequence: UInt16, pictureID: UInt16, tl0: UInt8)] {
            h.rtp(to: subscriber.subscribe.connection).filter { $0.header.payloadType == 98 }.map { r in
                let p = r.packet, o = r.header.payloadOffset
                return (p[o + 7], p[o + 5] >> 6, r.header.sequenceNumber, UInt16(p[o + 2] & 0x7F) << 8 | UInt16(p[o + 3]), p[o + 4])
            }
        }

        func slotMap() -> RoomEvent.SlotAssignment? {
            h.events.compactMap { e -> RoomEvent.SlotAssignment? in
                if case .activeTalkers("S", _, let slots) = e.1 { return slots.first { $0.kind == .video } } else { return nil }
            }.last
        }
    }

    /// Layers measure ~150, ~500 and ~990 kbit/s; the top one's base layer carries a quarter of its frames and
    /// TL0+TL1 half. 600 kbit/s less audio pays for the top layer up to TL1 (~500 kbit/s) before the middle one whole.
    @Test func aShareBetweenLayersGetsTheHigherLayerAtAFractionOfItsFramesInOneContinuousStream() throws {
        let c = try Call()
        c.run(ms: 4000, bps: 5_000_000)
        #expect(c.slotMap()?.layer == 2 && c.slotMap()?.temporalLayer == nil, "the whole top layer first")
        c.run(ms: 2000, bps: 600_000)
        c.h.clearReceived()
        c.run(ms: 1000, bps: 600_000)
        #expect(c.slotMap()?.layer == 2 && c.slotMap()?.temporalLayer == 1, "\(String(describing: c.slotMap()))")
        let stats = c.h.room.stats().first { $0.participant == "S" }?.slots.first { $0.kind == .video }
        #expect(stats?.layer == 2 && stats?.temporalLayer == 1, "room stats say what the slot passes")
        let got = c.received()
        #expect(Set(got.map(\.layer)) == [2] && Set(got.map(\.tid)) == [0, 1], "TL2 frames dropped")
        #expect((45...55).contains(got.count), "half the frames: \(got.count) in 1 s")
        #expect(zip(got, got.dropFirst()).allSatisfy { $1.sequence == $0.sequence &+ 1 }, "no sequence gaps for what was dropped")
        #expect(zip(got, got.dropFirst()).allSatisfy { ($1.pictureID &- $0.pictureID) & 0x7FFF == 1 }, "picture ids continuous")
        #expect(zip(got, got.dropFirst()).allSatisfy { $1.tl0 &- $0.tl0 <= 1 }, "TL0PICIDX untouched: base frames are all there")
    }

    /// The top layer up to TL1 is 50 frames a second here: with a floor of 60 it is not a step, and the same
    /// share gets the middle layer whole.
    @Test func aLayerAboveTheLowestIsNotThinnedBelowTheFrameRateFloor() throws {
        var config = RoomConfiguration()
        config.minTemporalFrameRate = 60
        let c = try Call(config)
        c.run(ms: 4000, bps: 5_000_000)
        c.run(ms: 3000, bps: 600_000)
        #expect(c.slotMap()?.layer == 1 && c.slotMap()?.temporalLayer == nil, "\(String(describing: c.slotMap()))")
    }

    @Test func theDroppedLayersComeBackAtASyncFrameOnceTheEstimateAllows() throws {
        let c = try Call()
        c.run(ms: 4000, bps: 5_000_000)
        c.run(ms: 3000, bps: 600_000)
        #expect(c.slotMap()?.temporalLayer == 1)
        c.h.clearReceived()
        c.run(ms: 5000, bps: 5_000_000)
        #expect(c.slotMap()?.layer == 2 && c.slotMap()?.temporalLayer == nil)
        let got = c.received()
        let back = try #require(got.firstIndex { $0.tid == 2 }, "TL2 frames are sent again")
        #expect(TemporalLayerScenarioTests.pattern[1].sync, "the first TL2 of a cycle is the sync frame")
        #expect(got[back...].count > 100 && Set(got[back...].map(\.tid)) == [0, 1, 2])
        #expect(zip(got, got.dropFirst()).allSatisfy { $1.sequence == $0.sequence &+ 1 && ($1.pictureID &- $0.pictureID) & 0x7FFF == 1 })
    }
}
