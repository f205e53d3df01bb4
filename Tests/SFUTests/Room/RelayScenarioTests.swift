import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

/// A room's relay to another node on virtual time (issue 25; docs/cluster.md, Relays): what crosses to the
/// peer is the local top K, however many talk in turn, and nothing the room does not forward.
@Suite struct RelayScenarioTests {
    /// `count` publishers of Opus (level extension id 1; the room trusts it, so no decoding), each loud during
    /// its own turn and silent otherwise, every 20 ms of virtual time.
    struct TurnTaking {
        let h: RoomHarness
        var members: [RoomHarness.Member]
        let turn: (Int) -> Range<Double>

        init(_ h: RoomHarness, count: Int, turn: @escaping (Int) -> Range<Double>) throws {
            self.h = h
            self.turn = turn
            members = try (0..<count).map { try h.join("p\($0)", audioSlots: 0) }
        }

        mutating func run(seconds: Double, every check: (Double) -> Void) {
            let frames = Int(seconds * 50)
            for f in 0..<frames {
                let t = Double(f) * 0.02
                for i in members.indices {
                    let loud = turn(i).contains(t)
                    let packet = members[i].audio.packet([0xF8, 0xFF, 0xFE], marker: false, level: loud ? 10 : 127)
                    members[i].audio.timestamp &+= 960
                    h.send(packet, from: members[i].publish)
                }
                h.advance(by: 20)
                if f % 5 == 4 { check(t) }
            }
        }
    }

    static func configuration(k: Int) -> RoomConfiguration {
        var c = RoomConfiguration()
        c.maxActiveTalkers = k
        c.levelSource = .extension
        return c
    }

    @Test func aRelayCarriesTheLocalTopKWhoeverTalksAndEachTalkerOnItsOwnContinuousStream() throws {
        let k = 3
        let h = try RoomHarness(configuration: Self.configuration(k: k))
        // Forty publishers, each talking 1.5 s in turn, a new one every 0.5 s: three at once at most.
        var room = try TurnTaking(h, count: 40, turn: { Double($0) * 0.5 + 0.2 ..< Double($0) * 0.5 + 1.7 })
        let peer = try h.relay(to: "node-b")
        var most = 0
        var everRelayed = Set<String>()
        var owners: [UInt32: String] = [:]
        room.run(seconds: 22) { _ in
            let carried = h.room.relays.carried(to: "node-b") ?? []
            most = max(most, carried.count)
            everRelayed.formUnion(carried.map(\.participant))
            for c in carried { owners[c.ssrc] = c.participant }
            let link = h.room.relays.links["node-b"]!
            #expect(link.subscriber.audioSlots.count <= 2 * k, "the relay's slots are bounded: \(link.subscriber.audioSlots.count)")
        }
        #expect(most == k, "at most K audio streams at any time, and K when K talk")
        #expect(everRelayed.count == 40, "every talker was relayed in its turn: \(everRelayed.count)")
        // What the peer received: each participant under the SSRC the relay gives it (one while its slot lasts),
        // sequence numbers without a gap or a repeat across the times it left the relay and came back.
        let packets = h.rtp(to: peer.connection)
        for i in [0, 17, 39] {
            let ssrcs = owners.filter { $0.value == "p\(i)" }.keys
            #expect(ssrcs.count == 1, "p\(i) kept one stream: \(ssrcs.count)")
            let seqs = packets.filter { ssrcs.contains($0.header.ssrc) }.map(\.header.sequenceNumber)
            #expect(seqs.count > 50, "p\(i): \(seqs.count) packets relayed")
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "p\(i)'s relayed stream is continuous")
        }
        // Slots dropped past the link's cap and made again never reuse an SSRC: no (SSRC, sequence number) pair
        // goes out twice under the relay's one key (AES-GCM's nonce is made of them).
        let pairs = packets.map { UInt64($0.header.ssrc) << 16 | UInt64($0.header.sequenceNumber) }
        #expect(Set(pairs).count == pairs.count, "\(pairs.count - Set(pairs).count) (SSRC, sequence) pairs sent twice")
        #expect(h.room.counters.drops.total == 0, "\(h.room.counters.drops.nonZero)")
    }

    /// K = 1 keeps two audio slots on the link: a talker whose slot two later talkers pushed out is bound a new
    /// slot when it talks again, under a new SSRC - its sequence numbers start over, and under its old SSRC
    /// they would repeat (SSRC, sequence) pairs, so AES-GCM nonces, under the relay's one key.
    @Test func aTalkerRelayedAgainAfterItsSlotWentGetsANewSSRC() throws {
        let h = try RoomHarness(configuration: Self.configuration(k: 1))
        var members = try (0..<3).map { try h.join("t\($0)", audioSlots: 0) }
        let peer = try h.relay(to: "node-b")
        let turns: [[Range<Double>]] = [[0.2..<2.0, 7.2..<9.0], [2.2..<4.5], [4.7..<7.0]]
        var owners: [UInt32: Set<String>] = [:]
        for f in 0..<500 {
            let t = Double(f) * 0.02
            for i in members.indices {
                let loud = turns[i].contains { $0.contains(t) }
                let packet = members[i].audio.packet([0xF8, 0xFF, 0xFE], level: loud ? 10 : 127)
                members[i].audio.timestamp &+= 960
                h.send(packet, from: members[i].publish)
            }
            h.advance(by: 20)
            for c in h.room.relays.carried(to: "node-b") ?? [] { owners[c.ssrc, default: []].insert(c.participant) }
        }
        #expect(owners.values.allSatisfy { $0.count == 1 }, "an SSRC carries one participant: \(owners)")
        #expect(owners.values.filter { $0 == ["t0"] }.count == 2, "t0 came back on a new SSRC: \(owners)")
        let packets = h.rtp(to: peer.connection)
        let pairs = packets.map { UInt64($0.header.ssrc) << 16 | UInt64($0.header.sequenceNumber) }
        #expect(Set(pairs).count == pairs.count, "\(pairs.count - Set(pairs).count) (SSRC, sequence) pairs sent twice")
    }

    @Test func aRelayCarriesTheTalkersCamerasEachFromAKeyFrame() throws {
        let k = 2
        let h = try RoomHarness(configuration: Self.configuration(k: k))
        var members = try (0..<4).map { try h.join("v\($0)", video: PayloadFormat(codec: .vp9, payloadType: 98), audioSlots: 0) }
        let cameras = members.map { CraftedVideoSender($0, codec: .vp9, payloadType: 98, pictureID: 100) }
        let peer = try h.relay(to: "node-b")
        var mostVideos = 0
        for f in 0..<400 {  // 8 s: v0 and v1 talk first, then v2 and v3
            let t = Double(f) * 0.02
            for i in members.indices {
                let loud = (i < 2 ? 0.2..<4.0 : 4.2..<8.0).contains(t)
                let packet = members[i].audio.packet([0xF8, 0xFF, 0xFE], level: loud ? 10 : 127)
                members[i].audio.timestamp &+= 960
                h.send(packet, from: members[i].publish)
            }
            if f % 2 == 0 { for c in cameras { c.sendFrame(h) } }
            h.advance(by: 20)
            mostVideos = max(mostVideos, (h.room.relays.carried(to: "node-b") ?? []).count { $0.kind == .video })
        }
        #expect(mostVideos == k, "K cameras at most, K while K talk")
        let packets = h.rtp(to: peer.connection)
        for i in 0..<4 {
            let index = try #require(h.room.participants.lookup("v\(i)")).index
            let video = packets.filter { $0.header.ssrc == h.room.relays.links["node-b"]!.ssrc(participant: index, kind: .camera) }
            let first = try #require(video.first, "v\(i)'s camera was relayed")
            let descriptor = first.packet.withUnsafeBytes { VideoDescriptor.parse(.vp9, payload: UnsafeRawBufferPointer(rebasing: $0[first.header.payloadRange])) }
            #expect((try? descriptor.get())?.isKeyframeStart == true, "v\(i)'s relayed video starts at a key frame")
            #expect(video.allSatisfy { $0.header.payloadType == 98 }, "VP9 under the relay's VP9 format")
        }
        #expect(cameras.allSatisfy { $0.plisReceived >= 1 }, "each camera was asked for a key frame when the relay took it")
    }

    /// A screen share crosses like a camera, in a relay slot of its own marked as a screen: the other node
    /// binds it as its presenter's screen share, and its subscribers' screen slots show it whoever talks.
    @Test func aScreenShareOnOneNodeIsShownInTheScreenSlotsOfTheOther() throws {
        let nodes = try RelayedRooms(configuration: Self.configuration(k: 2))
        let (a, b) = (nodes.a, nodes.b)
        let presenter = SimulatedParticipant(try a.join("S", publishAudio: false, publishScreen: true, audioSlots: 0)) { _ in nil }
        presenter.sendsScreen = true  // VP8 from libvpx, 5 frames a second
        let viewer = try b.join("V", publishAudio: false, audioSlots: 1, screenSlots: 1)
        for f in 0..<200 {  // 4 s
            presenter.step(a, t: Double(f) / 50, stepIndex: f)
            try nodes.step()
        }
        let relayed = (a.room.relays.carried(to: "node-b") ?? []).filter { $0.participant == "S" }
        #expect(relayed.map(\.source) == [.screen], "the relay carries S's share as a screen: \(relayed)")
        #expect(b.room.snapshot().participants.first { $0.id == "S" }.map { $0.publishesScreen && !$0.publishesVideo } == true)
        let maps = b.talkerEvents(for: "V").compactMap { $0.2.first { $0.mid == "s0" } }
        #expect(maps.last?.participant == "S" && maps.last?.source == .screen, "V's screen slot shows S: \(maps)")
        let out = b.slotPackets(viewer, ssrcOffset: 0x280)
        #expect(out.count >= 40, "5 frames a second of several packets each: \(out.count)")
        let seqs = out.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "one continuous stream")
        let first = try #require(out.first)
        let descriptor = first.packet.withUnsafeBytes { VideoDescriptor.parse(.vp8, payload: UnsafeRawBufferPointer(rebasing: $0[first.header.payloadRange])) }
        #expect((try? descriptor.get())?.isKeyframeStart == true, "from a key frame")
        // The share stops: it leaves the relay's plan, and B's screen slot empties.
        presenter.sendsScreen = false
        for _ in 0..<150 { try nodes.step() }
        #expect(b.talkerEvents(for: "V").last?.2.first { $0.mid == "s0" }?.participant == nil)
    }

    /// A simulcast camera crosses whole: one relay slot per layer, bound on the other node as one simulcast
    /// source, whose subscribers each take the layer their estimate fits - as the publisher's own node's do
    /// (a relay that carried one layer left a weak subscriber there nothing smaller).
    @Test func aSimulcastCameraCrossesWithEveryLayerAndEachSubscriberThereTakesItsOwn() throws {
        let nodes = try RelayedRooms(configuration: Self.configuration(k: 2))
        let (a, b) = (nodes.a, nodes.b)
        var publisher = try a.join("P", audioSlots: 0)
        let ssrcs: [UInt32] = [0xA1, 0xA2, 0xA3], sizes = [150, 600, 1200], frames = [(320, 180), (640, 360), (1280, 720)]
        try a.publishSimulcast(publisher, layers: ssrcs)
        let low = try b.join("low", publishAudio: false, audioSlots: 1, videoSlots: 1)
        let high = try b.join("high", publishAudio: false, audioSlots: 1, videoSlots: 1)
        var writers = ssrcs.map { RTPStreamWriter(ssrc: $0, payloadType: 96, timestamp: 90_000) }
        var pictureIDs = [UInt16](repeating: 100, count: 3)
        var rtcpRead = 0
        func remb(_ m: RoomHarness.Member, _ bps: UInt64) {
            var buf = [UInt8](repeating: 0, count: 64)
            let n = buf.withUnsafeMutableBytes { REMB(senderSSRC: 0xB0B, bitrate: bps, ssrcs: [1]).write(into: $0) }!
            b.send(Array(buf[0..<n]), from: m.subscribe)
        }
        func run(steps: Int) throws {
            for step in 0..<steps {
                // Key frames where the node asked for them (a PLI on the layer's SSRC), and every 2 s.
                let rtcp = a.rtcp(to: publisher.publish.connection)
                var plis: Set<UInt32> = []
                for p in rtcp.dropFirst(rtcpRead) where p.count >= 12 && p[1] == 206 && p[0] & 0x1F == 1 {
                    plis.insert(UInt32(p[8]) << 24 | UInt32(p[9]) << 16 | UInt32(p[10]) << 8 | UInt32(p[11]))
                }
                rtcpRead = rtcp.count
                a.send(publisher.audio.packet([0xF8, 0xFF, 0xFE], level: 10), from: publisher.publish)
                publisher.audio.timestamp &+= 960
                for _ in 0..<2 {
                    for i in 0..<3 {
                        let key = plis.contains(ssrcs[i]) || step % 100 == 0
                        var payload = [UInt8](repeating: UInt8(i), count: sizes[i])
                        let pid = pictureIDs[i]
                        payload.replaceSubrange(0..<6, with: [0x90, 0x80, 0x80 | UInt8(pid >> 8), UInt8(pid & 0xFF), key ? 0x10 : 0x11, UInt8(i)])
                        if key {
                            let (w, h) = frames[i]
                            payload.replaceSubrange(7..<14, with: [0x9D, 0x01, 0x2A, UInt8(w & 0xFF), UInt8(w >> 8), UInt8(h & 0xFF), UInt8(h >> 8)])
                        }
                        pictureIDs[i] = (pid + 1) & 0x7FFF
                        a.send(writers[i].packet(payload, marker: true), from: publisher.publish)
                        writers[i].timestamp &+= 900
                    }
                    plis.removeAll()
                }
                if step % 5 == 0 {
                    remb(low, 400_000)
                    remb(high, 5_000_000)
                }
                try nodes.step()
            }
        }
        try run(steps: 200)
        let relayed = (a.room.relays.carried(to: "node-b") ?? []).filter { $0.participant == "P" && $0.kind == .video }
        #expect(relayed.map(\.layer) == [0, 1, 2], "every layer of P's camera crosses: \(relayed)")
        b.clearReceived()
        try run(steps: 50)
        func shown(_ m: RoomHarness.Member) -> [UInt8] {
            b.slotPackets(m, ssrcOffset: SlotSSRC.video(0)).map { $0.packet[$0.header.payloadOffset + 5] }
        }
        let (lows, highs) = (shown(low), shown(high))
        #expect(lows.count >= 50 && Set(lows) == [0], "400 kbit/s on node B takes the lowest layer: \(Set(lows)), \(lows.count)")
        #expect(highs.count >= 50 && Set(highs) == [2], "5 Mbit/s on node B takes the highest: \(Set(highs)), \(highs.count)")
    }

    /// A simulcast camera renegotiated to one layer at its node: the next description names one camera stream,
    /// and the receiving node drops the layers no longer described instead of keeping a simulcast source with
    /// dead layers.
    @Test func aCameraDescribedWithFewerLayersLosesTheLayersNoLongerDescribed() throws {
        let nodes = try RelayedRooms(configuration: Self.configuration(k: 2))
        let b = nodes.b
        let layers = (0..<3).map { RelayedStream(participant: "x", name: "x", kind: .video, codec: .vp8, ssrc: 0x1000_0010 + UInt32($0), payloadType: 96, layer: $0) }
        let audio = RelayedStream(participant: "x", name: "x", kind: .audio, codec: .opus, ssrc: 0x1000_0001, payloadType: 111)
        try b.room.relays.receive([audio] + layers, from: "node-a", now: b.now, into: b.batch)
        let cameras = { b.room.participants.lookup("x")?.publisher?.tracks(.camera).count ?? 0 }
        #expect(cameras() == 3)
        try b.room.relays.receive([audio, RelayedStream(participant: "x", name: "x", kind: .video, codec: .vp8, ssrc: 0x1000_0020, payloadType: 96)],
                                  from: "node-a", now: b.now, into: b.batch)
        #expect(cameras() == 1, "one camera, not one plus two dead layers")
        #expect(b.room.participants.lookup("x")?.publisher?.tracks(.camera).first?.description.simulcast == nil)
        // Audio only now: the camera keeps its binding (it may come back), the audio is unchanged.
        try b.room.relays.receive([audio], from: "node-a", now: b.now, into: b.batch)
        #expect(cameras() == 1)
    }

    @Test func aTalkerOnAnotherNodeTakesTheSlotALocalTalkerHadAndIsHeard() throws {
        let nodes = try RelayedRooms(configuration: Self.configuration(k: 1))
        let (a, b) = (nodes.a, nodes.b)
        var remote = try a.join("far", audioSlots: 0)
        var local = try b.join("near", audioSlots: 0)
        let listener = try b.join("L", publishAudio: false, audioSlots: 1)
        for f in 0..<350 {  // 7 s: "near" talks first, then "far" on the other node
            let t = Double(f) * 0.02
            let far = remote.audio.packet([0xF8, 0xFF, 0xFE], level: (3.0..<7.0).contains(t) ? 10 : 127)
            remote.audio.timestamp &+= 960
            a.send(far, from: remote.publish)
            let near = local.audio.packet([0xF8, 0xFF, 0xFE], level: (0.2..<2.5).contains(t) ? 10 : 127)
            local.audio.timestamp &+= 960
            b.send(near, from: local.publish)
            try nodes.step()
        }
        let shown = b.talkerEvents(for: "L").compactMap { $0.2.first { $0.mid == "a0" }?.participant }
        #expect(shown.first == "near" && shown.last == "far", "L's one audio slot: \(shown)")
        // The remote talker's audio reached the listener, in its slot, rewritten to the slot's stream.
        let slot = b.rtp(to: listener.subscribe.connection).filter { $0.header.ssrc == listener.audio.ssrc - 1 + 0x100 }
        #expect(slot.count > 150, "L received \(slot.count) packets")
        let seqs = slot.map(\.header.sequenceNumber)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "one continuous stream across the local and the remote talker")
        // Each node knows the other's talker as a remote participant, and never relays it back.
        #expect(b.room.participants.lookup("far")?.origin == "node-a" && a.room.participants.lookup("near")?.origin == "node-b")
        #expect(!(a.room.relays.carried(to: "node-b") ?? []).contains { $0.participant == "near" })
        #expect(!(b.room.relays.carried(to: "node-a") ?? []).contains { $0.participant == "far" })
        #expect(a.room.counters.drops.total == 0 && b.room.counters.drops.total == 0,
                "\(a.room.counters.drops.nonZero) \(b.room.counters.drops.nonZero)")
        // A peer that describes one SSRC for two participants binds nothing; a relay that closes takes its
        // remote participants out of the room.
        let farSSRC = try #require(b.room.relays.links["node-a"]?.connection.remotePublishers.keys.first)
        let clash = RelayedStream(participant: "other", name: "other", kind: .audio, codec: .opus, ssrc: farSSRC, payloadType: 111)
        #expect(throws: RoomError.self) { try b.room.relays.receive([clash], from: "node-a", now: b.now, into: b.batch) }
        #expect(!b.room.contains(participant: "other"))
        b.room.sessions.detach(nodes.ba.connection, reason: nil, now: b.now, into: b.batch)
        #expect(!b.room.contains(participant: "far") && b.room.contains(participant: "near"))
    }

    @Test func theHomesModerationAppliesOnTheOtherNodeAndAHardMutedTalkerStopsAtItsOwn() throws {
        let nodes = try RelayedRooms(configuration: Self.configuration(k: 2))
        let (a, b) = (nodes.a, nodes.b)
        _ = try a.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        var far = try a.join("far", audioSlots: 0)
        var near = try b.join("near", audioSlots: 0)
        let nearsOwn: [UInt8] = [0xF8, 0xFF, 0xFE, 0x4E, 0x45]  // what only "near" sends
        func talk(_ seconds: Double) throws {
            for _ in 0..<Int(seconds * 50) {
                a.send(far.audio.packet([0xF8, 0xFF, 0xFE], level: 10), from: far.publish)
                far.audio.timestamp &+= 960
                b.send(near.audio.packet(nearsOwn, level: 10), from: near.publish)
                near.audio.timestamp &+= 960
                try nodes.step()
            }
        }
        func nearsPacketsOnTheLink() -> Int {
            (b.received[nodes.ba.connection] ?? []).count { $0.count >= nearsOwn.count && Array($0.suffix(nearsOwn.count)) == nearsOwn }
        }
        try talk(2)
        #expect(nearsPacketsOnTheLink() > 50, "near is relayed while it may talk")
        // The moderator, on node A (the home), hard-mutes near, who is on node B: a hard mute alone is a new state.
        try a.room.moderation.hardMute(by: "M", target: "near", audio: true, video: nil, now: a.now, into: a.batch)
        let muted = a.room.home.moderationState
        #expect(muted.hardMuted["near"] == .init(audio: true, video: false))
        #expect(b.room.home.applyModeration(muted, now: b.now, into: b.batch))
        #expect(!b.room.home.applyModeration(muted, now: b.now, into: b.batch), "a state no newer than the one applied is ignored")
        // B changes its own copy (someone leaves, taking a pin along): the home's next state still applies.
        _ = try b.join("passer", audioSlots: 0)
        try b.room.remove("passer", now: b.now, into: b.batch)
        try a.room.moderation.pin(by: "M", ["far"], now: a.now, into: a.batch)
        #expect(b.room.home.applyModeration(a.room.home.moderationState, now: b.now, into: b.batch))
        #expect(b.room.pinned == ["far"] && b.room.snapshot().participants.first { $0.id == "near" }?.hardMutedAudio == true)
        let before = nearsPacketsOnTheLink()
        try talk(2)
        #expect(nearsPacketsOnTheLink() == before, "not one of near's packets crossed after its node applied the mute")
        #expect(b.room.counters.drops[.hardMuted] > 0, "near's node dropped them at ingress")
        // near leaves its node and comes back: still muted, as the home's state says.
        try b.room.remove("near", now: b.now, into: b.batch)
        _ = try b.join("near", audioSlots: 0)
        #expect(b.room.snapshot().participants.first { $0.id == "near" }?.hardMutedAudio == true, "back, and still muted")
    }

    /// Listeners on two nodes hear four talkers, two on each node, speaking in overlapping turns; node B follows
    /// the home's (A's) ranking or ranks on its own. Returns the share of 100 ms samples at which both
    /// listeners' talker lists were the same, in the same order.
    func agreement(following: Bool) throws -> (share: Double, lists: ([[String]], [[String]])) {
        let nodes = try RelayedRooms(configuration: Self.configuration(k: 2), following: following)
        let (a, b) = (nodes.a, nodes.b)
        var talkers = [try a.join("a0", audioSlots: 0), try a.join("a1", audioSlots: 0), try b.join("b0", audioSlots: 0), try b.join("b1", audioSlots: 0)]
        _ = try a.join("LA", publishAudio: false, audioSlots: 2)
        _ = try b.join("LB", publishAudio: false, audioSlots: 2)
        let turns: [Range<Double>] = [0.2..<3, 4..<8, 1.5..<5, 6..<10]
        var same = 0, samples = 0
        for f in 0..<600 {
            let t = Double(f) * 0.02
            for i in talkers.indices {
                let packet = talkers[i].audio.packet([0xF8, 0xFF, 0xFE], level: turns[i].contains(t) || (i == 0 && t >= 9) ? 10 : 127)
                talkers[i].audio.timestamp &+= 960
                (i < 2 ? a : b).send(packet, from: talkers[i].publish)
            }
            try nodes.step()
            if f % 5 == 4, t > 1 {
                let la = a.talkerEvents(for: "LA").last?.1.map(\.participant), lb = b.talkerEvents(for: "LB").last?.1.map(\.participant)
                samples += 1
                if la == lb { same += 1 }
            }
        }
        // The lists each listener was shown, in order (a list reported again unchanged, or with only its slot
        // map changed, counted once).
        func shown(_ h: RoomHarness, _ who: String) -> [[String]] {
            h.talkerEvents(for: who).map { $0.1.map(\.participant) }.reduce(into: []) { acc, l in if acc.last != l { acc.append(l) } }
        }
        return (Double(same) / Double(samples), (shown(a, "LA"), shown(b, "LB")))
    }

    @Test func aNodeFollowingTheHomesRankingShowsItsListenersTheSameTalkersInTheSameOrder() throws {
        let followed = try agreement(following: true)
        let own = try agreement(following: false)
        // The follower applies the home's order as it comes (`RelayedRooms`: a control channel faster than a step).
        #expect(followed.share >= 0.98, "lists agreed at \(Int(followed.share * 100)) % of samples (each node on its own: \(Int(own.share * 100)) %)")
        // From the first list both were shown (before the home's first ranking arrived B listed its own), the
        // same lists in the same order.
        let home = followed.lists.0, follower = Array(followed.lists.1.drop { $0 != followed.lists.0.first })
        #expect(home == follower, "both listeners were shown the same lists in the same order: \(followed.lists)")
        #expect(followed.lists.0.count >= 6 && followed.lists.0.last?.first == "a0", "\(followed.lists.0)")
    }

    @Test func aFollowedRankingOlderThanTheOneHeldIsIgnoredAndTheHomesDominantSpeakerIsReported() throws {
        let h = try RoomHarness(configuration: Self.configuration(k: 2))
        _ = try h.join("x", audioSlots: 0)
        let r = SharedRanking(epoch: 3, version: 5, recency: ["x"], speaking: ["x"], young: [], dominant: "x")
        #expect(h.room.home.followRanking(r))
        #expect(!h.room.home.followRanking(SharedRanking(epoch: 3, version: 4, recency: [], speaking: [], young: [], dominant: nil)))
        #expect(!h.room.home.followRanking(SharedRanking(epoch: 2, version: 9, recency: [], speaking: [], young: [], dominant: nil)))
        #expect(h.room.home.followRanking(SharedRanking(epoch: 4, version: 1, recency: ["x"], speaking: [], young: [], dominant: nil)), "a new home's epoch")
        h.flush()
        #expect(h.dominantSpeakers.map(\.1) == ["x", nil])
    }

    @Test func aModeratorOnAnotherNodeIsHeardInALecture() throws {
        var config = Self.configuration(k: 2)
        config.mode = .lecture
        let nodes = try RelayedRooms(configuration: config, following: true)
        let (a, b) = (nodes.a, nodes.b)
        var lecturer = try a.join("lecturer", role: .moderator, audioSlots: 0)
        let listener = try b.join("L", publishAudio: false, audioSlots: 1)
        for _ in 0..<150 {
            a.send(lecturer.audio.packet([0xF8, 0xFF, 0xFE], level: 10), from: lecturer.publish)
            lecturer.audio.timestamp &+= 960
            try nodes.step()
        }
        #expect(b.room.participants.lookup("lecturer")?.role == .moderator, "the role crossed with the stream")
        let slot = b.rtp(to: listener.subscribe.connection).filter { $0.header.ssrc == listener.audio.ssrc - 1 + 0x100 }
        #expect(slot.count > 100, "the lecturer, a moderator on node A, is heard on node B: \(slot.count)")
    }

    @Test func aRelayDescriptionThatDoesNotHoldTogetherIsRefusedWholeAndAnotherNodesCopyOfALocalIsSkipped() throws {
        let nodes = try RelayedRooms(configuration: Self.configuration(k: 2))
        let b = nodes.b
        _ = try b.join("local", audioSlots: 0)
        let own = b.room.tracks.byIndex.count
        let fine = RelayedStream(participant: "newcomer", name: "n", kind: .audio, codec: .opus, ssrc: 0x1000_0000, payloadType: 111)
        let opusAsVideo = RelayedStream(participant: "x", name: "x", kind: .video, codec: .opus, ssrc: 0x1000_0001, payloadType: 111)
        let notTheirs = RelayedStream(participant: "local", name: "l", kind: .audio, codec: .opus, ssrc: 0x1000_0004, payloadType: 111)
        #expect(throws: RoomError.self) { try b.room.relays.receive([fine, opusAsVideo], from: "node-a", now: b.now, into: b.batch) }
        // One participant's camera whose RTX SSRC is its screen share's media SSRC: two streams under one SSRC.
        let camera = RelayedStream(participant: "newcomer", name: "n", kind: .video, codec: .vp8, ssrc: 0x1000_0002, payloadType: 96,
                                   rtxSSRC: 0x1000_0003, rtxPayloadType: 97)
        let screen = RelayedStream(participant: "newcomer", name: "n", kind: .video, codec: .vp8, ssrc: 0x1000_0003, payloadType: 96, source: .screen)
        #expect(throws: RoomError.self) { try b.room.relays.receive([fine, camera, screen], from: "node-a", now: b.now, into: b.batch) }
        #expect(!b.room.contains(participant: "newcomer") && b.room.tracks.byIndex.count == own, "nothing of the description was bound")
        // A stream of one of this node's own participants (one that moved here, which its old node still
        // describes) is skipped; the rest binds.
        try b.room.relays.receive([fine, notTheirs], from: "node-a", now: b.now, into: b.batch)
        #expect(b.room.contains(participant: "newcomer") && b.room.tracks.byIndex.count == own + 1 && b.room.relays.origin(of: "local") == nil)
        // A remote participant removed here is bound again when the peer describes it again.
        try b.room.remove("newcomer", now: b.now, into: b.batch)
        try b.room.relays.receive([fine], from: "node-a", now: b.now, into: b.batch)
        #expect(b.room.contains(participant: "newcomer") && b.room.tracks.byIndex.count == own + 1)
    }

    @Test func aHardMutedTalkerIsNeverRelayed() throws {
        let h = try RoomHarness(configuration: Self.configuration(k: 2))
        _ = try h.join("M", role: .moderator, publishAudio: false, audioSlots: 0)
        var room = try TurnTaking(h, count: 4, turn: { $0 == 2 ? 0.0 ..< 6.0 : Double($0) ..< Double($0) + 0.8 })
        try h.room.moderation.hardMute(by: "M", target: "p2", audio: true, video: nil, now: h.now, into: h.batch)
        let peer = try h.relay(to: "node-b")
        var relayedMuted = false
        room.run(seconds: 6) { _ in relayedMuted = relayedMuted || (h.room.relays.carried(to: "node-b") ?? []).contains { $0.participant == "p2" } }
        let muted = try #require(h.room.participants.lookup("p2")).index
        #expect(!relayedMuted)
        #expect(h.room.relays.links["node-b"]!.ssrc(participant: muted, kind: .audio) == nil, "no slot was ever bound to the muted talker")
        #expect(!h.rtp(to: peer.connection).contains { $0.header.ssrc == h.room.relays.links["node-b"]!.ssrc(participant: muted, kind: .audio) },
                "not one packet of the muted talker crossed")
        #expect(h.rtp(to: peer.connection).count > 100, "the others were relayed")
    }

    @Test func aRelayToTheSamePeerTwiceOrOverTheLimitIsRefusedAndOneThatGoesLeavesTheRoomAsItWas() throws {
        let h = try RoomHarness(configuration: Self.configuration(k: 2))
        _ = try h.relay(to: "node-b")
        #expect(throws: RoomError.self) { try h.room.relays.attach(peer: "node-b", connection: ConnectionID(999), now: h.now, into: h.batch) }
        #expect(throws: RoomError.self) { try h.room.relays.attach(peer: "", connection: ConnectionID(998), now: h.now, into: h.batch) }
        let conn = try #require(h.room.relays.links["node-b"]?.connection.id)
        h.room.sessions.detach(conn, reason: nil, now: h.now, into: h.batch)
        #expect(h.room.relays.isEmpty && h.room.relays.carried(to: "node-b") == nil && h.room.sessions.connection(conn) == nil)
        _ = try h.relay(to: "node-b")  // again, on a new connection
        #expect(h.room.relays.links.count == 1)
    }
}
