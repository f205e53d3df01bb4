import Foundation
import NodeIO
import SFU
import SFUMedia
import WebRTCEdge

/// Floods a keyed client sends at the speed of its socket, to cost the worker its other rooms' media.
enum FloodAttacks {
    /// How many receiver reports each round of the SRTCP flood sends.
    static let srtcpFloodCount = 40_000

    /// 23. A subscriber in a room of its own sends 40,000 authenticated receiver reports back to back from its
    /// checked address, sealed beforehand, twice: all from one sender SSRC (each would be decrypted and parsed:
    /// refused past the connection's `limits.rtcp_per_second`, `rtcp_rate`), then each from a new one (refused
    /// past `limits.ssrcs_per_connection`, `ssrc_limit`). The victim room on the same
    /// worker keeps its audio; the evidence says how long the victim publisher itself paused (the load
    /// generator's share of a gap) and how long the node's worker waited for a CPU.
    static let srtcpSSRCFlood = Attack(number: 25, name: "subscriber SRTCP SSRC flood") { ctx in
        var o = AttackOutcome()
        let room = try await ctx.newRoom("rtcpflood")
        try await ctx.admit(room, "flooder", moderator: true)
        let sub = try ctx.subscriber(audio: 1)
        try await ctx.join(room, "flooder", sub, "subscribe")
        guard try await ctx.connect([sub]), let keys = sub.dtls?.keys, let node = sub.nodeAddress else {
            o.fail("the flooding subscriber did not connect")
            return o
        }
        for newSSRCs in [false, true] {
            let packets = try sealReceiverReports(count: srtcpFloodCount, newSSRCs: newSSRCs, keys: keys.outbound, seed: 0x5EED_F100D)
            let round = newSSRCs ? "new SSRCs" : "one SSRC"
            let before = try await ctx.metrics()
            let kernelBefore = KernelUDPDrops.count(port: node.port)
            let workerBefore = ProcessProbe.schedulerSeconds(pid: ctx.node.pid, threadsNamed: "sfu-worker")
            let start = MonoClock.now()
            var sent = 0
            for p in packets where sub.transmit(p) { sent += 1 }
            let sending = (MonoClock.now() - start).milliseconds
            try await ctx.drive(seconds: 1, clients: [sub])
            let end = MonoClock.now()
            let after = try await ctx.metrics()
            let workerAfter = ProcessProbe.schedulerSeconds(pid: ctx.node.pid, threadsNamed: "sfu-worker")
            let kernel = KernelUDPDrops.count(port: node.port) - kernelBefore
            let refused = after.drop("ssrc_limit") - before.drop("ssrc_limit") + after.drop("rtcp_rate") - before.drop("rtcp_rate")
            let read = sent - kernel
            var evidence = "\(round): \(sent) reports in \(sending) ms, victim gap \(ctx.victim.maxGap(from: start, to: end).gapMs) ms "
                + "(the victim publisher's own \(ctx.victim.publisherGap(from: start, to: end)) ms)"
            if let b = workerBefore, let a = workerAfter {
                evidence += String(format: ", worker CPU %.0f ms, waited %.0f ms for one", (a.cpu - b.cpu) * 1000, (a.wait - b.wait) * 1000)
            }
            evidence += ", kernel drops \(kernel), " + after.dropsSince(before).sorted { $0.key < $1.key }.map { "\($0.key) +\($0.value)" }.joined(separator: ", ")
            let allowed = newSSRCs ? 64 : 2 * RoomLimits().rtcpPerSecond
            o.check(sent == packets.count && refused >= read - allowed, evidence,
                    "\(evidence): of \(read) reports the node read, only \(refused) were refused (ssrc_limit, rtcp_rate)")
        }
        await ctx.deleteRoom(room)
        return o
    }

    /// `count` receiver reports protected with `keys`: each from a new sender SSRC, or all from one. A new
    /// outbound context every 32 SSRCs: one context protecting ever-new SSRCs walks a list that grows with each
    /// (the flooder's cost, which would pace the flood, not the node's).
    static func sealReceiverReports(count: Int, newSSRCs: Bool, keys: SRTPKeyingMaterial, seed: UInt64) throws -> [[UInt8]] {
        var rng = SplitMix64(seed: seed)
        var packets: [[UInt8]] = []
        packets.reserveCapacity(count)
        var session = try SRTPSession(keys: keys, direction: .outbound)
        var buffer = [UInt8](repeating: 0, count: 256)
        let one = UInt32(truncatingIfNeeded: rng.next()) | 1
        for i in 0..<count {
            if newSSRCs, i > 0, i % 32 == 0 { session = try SRTPSession(keys: keys, direction: .outbound) }
            let ssrc = newSSRCs ? UInt32(truncatingIfNeeded: rng.next()) | 1 : one
            let plain = RTCPBuilder.build([RTCPBuilder.receiverReport(ssrc, naming: [])])
            let n: Int? = buffer.withUnsafeMutableBytes { out in
                plain.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[0..<plain.count]).copyMemory(from: $0) }
                if case .success(let m) = session.protectRTCP(out, length: plain.count) { return m }
                return nil
            }
            if let n { packets.append(Array(buffer[0..<n])) }
        }
        return packets
    }
}
