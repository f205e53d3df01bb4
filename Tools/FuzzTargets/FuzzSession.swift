import Foundation
import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// The `session` target: a fresh `WorkerCore` per input, driven through its session API as the control API
/// drives it. The input is a sequence of operations on participants A-D: admit and re-admit, publish offers
/// (audio/video, SSRCs from a small pool so publishers collide, the MID extension instead of SSRCs, RTX,
/// rejected, bundle-only, unbundled or unmuxed m-lines, extra codecs, simulcast) and subscribe offers (slot
/// counts, mids from a small alphabet, duplicates), each with the same or new ICE credentials and DTLS
/// fingerprint, as real SDP text (sometimes damaged); remove, hard mute, pins, roles, lock, floor, settings;
/// connecting a transport (ICE check and DTLS handshake, possibly left half done), media on it, time steps;
/// destroying and recreating the room.
///
/// Promises, after every operation: at most one transport per participant and direction (the core holds no
/// more than two per participant, its router and the room exactly the core's); no handshake left pending; a
/// refused offer changes nothing (transports, credentials, room state, events); an accepted offer's
/// `change` is what its credentials and fingerprint say against the transport the direction had; its answer
/// parses and has one m-line per offered m-line; a renegotiated or ICE-restarted subscription keeps each
/// remaining mid's SSRC; a removed participant's transports are gone; every slot map (in the room's stats and
/// in `active_talkers` events) names only participants in the room, never the subscriber itself, each at
/// most once per kind, and a talker list is no longer than the room's and the subscriber's talker counts;
/// pins, talkers, hands and the dominant speaker are participants; and a packet from a publisher that may
/// not be heard or seen (hard mute, room mute, lecture floor) is never forwarded in any slot of that kind.
struct FuzzSession {
    static let ids = ["A", "B", "C", "D"]
    static let mids = ["0", "1", "2", "3", "a", "v", "audio", "x-y"]
    static let steps: [Int64] = [0, 20, 300, 1_000, 5_000, 12_000, 31_000, 61_000]
    /// `SFU_FUZZ_TRACE=1`: each operation and refusal on standard error, to read a finding.
    static let trace = ProcessInfo.processInfo.environment["SFU_FUZZ_TRACE"] != nil

    static func log(_ s: @autoclosure () -> String) {
        if trace { FileHandle.standardError.write(("session: " + s() + "\n").data(using: .utf8)!) }
    }

    /// What the model knows of a participant's transport in one direction.
    struct Session {
        var client: FuzzClient
        var connection: ConnectionID
        /// What the accepted offer said: credentials and fingerprint.
        var remote: RemoteTransport
        var ice: ICECredentials
        var identity: Int
        var slotSSRCs: [String: UInt32]
    }

    struct Key: Hashable {
        var participant: String
        var publish: Bool
    }

    let net: FuzzNetwork
    var roomName = "r"
    var sessions: [Key: Session] = [:]
    var connects = 0
    /// Each participant's own talker count, as last set (admission or setting); absent: none.
    var talkerCounts: [String: Int] = [:]
    /// Set by an operation that destroyed the room: the events drained after it are the old room's.
    var destroyed = false
    /// Where each stream's next packet is numbered (`stream`), and the streams fuzzed packets have touched.
    var streams: [StreamKey: UInt16] = [:]
    var tainted: Set<StreamKey> = []

    init(_ r: inout FuzzReader) {
        var limits = WorkerLimits()
        limits.pendingHandshakes = 6
        limits.room.slotsPerSubscription = 8
        net = FuzzNetwork(limits: limits, batchCapacity: 256)
        net.keepEvents = true
        makeRoom(&r)
    }

    @discardableResult
    static func run(_ data: UnsafeRawBufferPointer) -> FuzzSession {
        var r = FuzzReader(data)
        var s = FuzzSession(&r)
        var ops = 0
        while !r.isEmpty, ops < 48 {
            ops += 1
            s.step(&r)
            s.checkTables()
            s.checkSlotsAndTalkers()
        }
        return s
    }

    var room: Room? { net.core.room(roomName) }

    func makeRoom(_ r: inout FuzzReader) {
        let f = r.u8()
        var config = RoomConfiguration()
        config.mode = f & 0x80 != 0 ? .lecture : .group
        config.maxActiveTalkers = 1 + Int(f & 0x7F) % 12
        config.levelSource = [.extension, .decode, .verify][Int(f >> 5) % 3]
        var limits = RoomLimits()
        limits.participants = 3
        net.core.addRoom(try! Room(name: roomName, configuration: config, limits: limits, now: net.now))
    }

    mutating func step(_ r: inout FuzzReader) {
        let op = r.u8()
        let who = Self.ids[Int(op >> 4) & 3]
        let by = Self.ids[Int(op >> 6) & 3]
        let batch = net.core.batch
        let now = net.now
        Self.log("op \(op & 0x0F) who \(who) by \(by) t=\(now)")
        switch op & 0x0F {
        case 0:
            let role: Role = r.bool() ? .moderator : .participant
            let count = r.bool() ? 1 + r.index(12) : nil
            if (try? room?.admit(who, role: role, talkerCount: count, now: now)) != nil { talkerCounts[who] = count }
        case 1, 2: offer(who, publish: true, &r)
        case 3, 4: offer(who, publish: false, &r)
        case 5:
            let before = room?.sessions.connections(of: who) ?? []
            if (try? net.core.removeParticipant(room: roomName, who, by: r.bool() ? by : nil, now: now)) != nil {
                for c in before { promise(net.core.edge.router.agent(c) == nil, "\(who) was removed but its transport \(c) stays") }
                promise(room?.contains(participant: who) == false, "\(who) is still in the room")
                sessions = sessions.filter { $0.key.participant != who }
                talkerCounts[who] = nil
            }
        case 6:
            let a = r.u8()
            try? room?.moderation.hardMute(by: by, target: who, audio: a & 1 == 0 ? nil : a & 2 != 0, video: a & 4 == 0 ? nil : a & 8 != 0, now: now, into: batch)
        case 7: try? room?.moderation.hardMuteRoom(by: by, audio: r.bool(), now: now, into: batch)
        case 8:
            let n = r.u8()
            let targets = (0..<Int(n & 3)).map { _ in Self.ids[r.index(4)] }
            if n & 4 != 0 { try? room?.moderation.unpin(by: by, targets, now: now, into: batch) } else { try? room?.moderation.pin(by: by, targets, now: now, into: batch) }
        case 9: connect(who, r.u8())
        case 10:
            let f = r.u8()
            if f & 0x81 == 0x80 { stream(who, &r) } else { media(who, f, &r) }
        case 11:
            net.advance(by: Self.steps[r.index(Self.steps.count)] + Int64(r.u8()))
            for s in sessions.values where s.client.connected { net.check(s.client, nominate: false) }
        case 12:
            net.core.destroyRoom(roomName, now: now)
            sessions = [:]
            talkerCounts = [:]
            destroyed = true
            promise(net.core.connectionCount == 0, "the destroyed room's transports stay: \(net.core.connectionCount)")
            makeRoom(&r)
        default: moderate(who, by: by, &r)
        }
        net.deliver()
    }

    /// Roles, lock, floor, settings, a subscriber's own settings.
    mutating func moderate(_ who: String, by: String, _ r: inout FuzzReader) {
        guard let room else { return }
        let batch = net.core.batch
        let now = net.now
        let f = r.u8()
        switch f & 7 {
        case 0: try? room.moderation.setRole(by: by, target: who, role: f & 8 != 0 ? .moderator : .participant, now: now, into: batch)
        case 1: try? room.moderation.lock(by: by, locked: f & 8 != 0)
        case 2: try? room.moderation.floor(by: by, action: FloorAction.allCases[Int(f >> 3) % FloorAction.allCases.count], target: who, now: now, into: batch)
        case 3:
            let v = r.u8(), kbps = Int(r.u16())
            try? room.update(now: now, into: batch) { c in
                c.maxActiveTalkers = Int(v & 0x0F)
                c.mode = v & 0x10 != 0 ? .lecture : .group
                c.streamBandwidthKbps = kbps
            }
        case 4:
            let count = f & 8 != 0 ? Int(f >> 4) : nil
            if (try? room.downlinks.setTalkerCount(who, count, now: now, into: batch)) != nil { talkerCounts[who] = count }
        default: try? room.setVideoMuted(who, f & 8 != 0, now: now, into: batch)
        }
    }

    /// The SDP of a publish or subscribe offer, from the input.
    /// Returns the text and, unless it was damaged, the offer as meant (m-line count, transport).
    func offerText(_ who: String, publish: Bool, ice: ICECredentials, identity: Int,
                   _ r: inout FuzzReader) -> (text: String, meant: (mlines: Int, remote: RemoteTransport)?) {
        let f = r.u8(), g = r.u8()
        var o = FuzzOffer(ice: ice, fingerprint: FuzzClient.fingerprintTexts[identity])
        if g & 0x40 != 0 { o.setup = ["passive", "active", "holdconn"][Int(g >> 4) % 3] }
        let base = UInt32(0x1000_0000) | UInt32(r.u8() & 0x0F) << 4  // a small pool: publishers collide
        let count = publish ? Int(f & 3) + (f & 4 != 0 ? 1 : 0) : Int(f & 7) + Int(g & 3)
        for i in 0..<count {
            let video = publish ? (i % 2 == 1) != (f & 0x80 != 0) : i >= Int(f & 7)
            let quirks = r.u8()
            var m = FuzzOffer.Media(video: video, mid: publish ? "\(i)" : Self.mids[Int(quirks >> 5) % Self.mids.count],
                                    direction: publish ? (quirks & 0x10 != 0 ? "sendrecv" : "sendonly") : (quirks & 0x10 != 0 ? "sendrecv" : "recvonly"))
            if quirks & 0x01 != 0 { m.rejected = true; m.bundleOnly = quirks & 0x02 != 0 }
            if quirks & 0x0E == 0x04 { m.bundled = false }
            if quirks & 0x0E == 0x06 { m.muxed = false }
            if quirks & 0x0E == 0x08 { m.extraCodec = true }
            if quirks & 0x0E == 0x0A, f & 0x40 != 0 { m.simulcast = true }
            if quirks & 0x0E == 0x0C { m.direction = "inactive" }
            if !video || publish { m.levelExtension = video ? nil : 1 + (quirks & 0x0E == 0x0E ? 14 : 0) }
            if publish {
                m.midExtension = f & 0x20 != 0 ? 4 : nil
                if f & 0x10 == 0 { m.ssrc = base + UInt32(i) * 2 }
                if video, f & 0x08 != 0 { m.rtxPayloadType = 97; if m.ssrc != nil { m.rtxSSRC = base + UInt32(i) * 2 + 1 } }
            }
            o.media.append(m)
        }
        let text = o.text
        guard g & 0x80 != 0 else {
            let print = identity < FuzzClient.certificates.count ? FuzzClient.certificates[identity].fingerprint : FuzzClient.foreignFingerprint
            return (text, (o.media.count, RemoteTransport(ufrag: ice.ufrag, password: ice.password, fingerprint: print)))
        }
        var bytes = Array(text.utf8)  // damage: a few bytes overwritten
        for _ in 0..<(1 + Int(g & 3)) { bytes[Int(r.u16()) % bytes.count] = r.u8() }
        return (String(decoding: bytes, as: UTF8.self), nil)
    }

    /// An offer with the same or new ICE credentials and identity (certificate or a foreign fingerprint):
    /// checked against the session model.
    mutating func offer(_ who: String, publish: Bool, _ r: inout FuzzReader) {
        let key = Key(participant: who, publish: publish)
        let existing = sessions[key]
        let v = r.u8()
        let ice = v & 1 == 0 ? existing?.ice ?? FuzzICE.credentials[0] : FuzzICE.credentials[Int(v >> 1) % FuzzICE.credentials.count]
        let identity = v & 8 == 0 ? existing?.identity ?? 0 : Int(v >> 4) % (FuzzClient.certificates.count + 1)
        let (text, meant) = offerText(who, publish: publish, ice: ice, identity: identity, &r)
        let before = snapshot()
        let client = existing?.client ?? FuzzClient(
            address: TransportAddress(ip: .v4(0x0A02_0000 | UInt32(Self.ids.firstIndex(of: who)!) << 8 | (publish ? 1 : 2)), port: 5000),
            ice: ice, identity: identity)
        let (oldICE, oldIdentity) = (client.ice, client.identity)
        client.ice = ice
        client.identity = identity
        let answer: SessionAnswer
        let parsed: SessionDescription?
        do {
            (answer, parsed) = try net.offer(client, room: roomName, participant: who, publish: publish, text: text)
        } catch {
            Self.log("refused: \(error)\n\(text)")
            (client.ice, client.identity) = (oldICE, oldIdentity)
            if existing == nil { net.forget(client) }
            let after = snapshot()
            promise(after == before, "a refused offer (\(error)) changed the core: \(before) -> \(after)")
            return
        }
        // What the offer says about the client's transport decides the change (a damaged one is read back
        // rather than trusting what was meant).
        let offered: (mlines: Int, remote: RemoteTransport)
        if let meant {
            offered = meant
        } else {
            guard let offer = try? SessionDescription.parse(text), let remote = try? OfferAnswer.remoteTransport(offer) else {
                promise(false, "an accepted offer does not parse")
                return
            }
            offered = (offer.media.count, remote)
        }
        let remote = offered.remote
        let expected: SessionChange
        if let e = existing {
            expected = e.remote.fingerprint == remote.fingerprint
                ? (e.remote.ufrag == remote.ufrag && e.remote.password == remote.password ? .renegotiated : .iceRestarted) : .replaced
        } else {
            expected = .created
        }
        Self.log("\(answer.change) \(answer.connection)")
        promise(answer.change == expected, "\(who) \(publish ? "publish" : "subscribe"): \(answer.change), expected \(expected)")
        if expected == .renegotiated || expected == .iceRestarted { promise(answer.connection == existing?.connection, "a renegotiation moved the transport") }
        if answer.change == .replaced, let old = existing { promise(net.core.edge.router.agent(old.connection) == nil, "the replaced transport stays") }
        promise(parsed != nil, "the answer does not parse: \(answer.sdp)")
        promise(parsed?.media.count == offered.mlines, "the answer has \(parsed?.media.count ?? -1) m-lines for \(offered.mlines) offered")
        if !publish, let e = existing, answer.change == .renegotiated || answer.change == .iceRestarted {
            for (mid, ssrc) in client.slotSSRCs {
                if let old = e.slotSSRCs[mid] { promise(old == ssrc, "slot \(mid) moved from SSRC \(old) to \(ssrc) on renegotiation") }
            }
        }
        sessions[key] = Session(client: client, connection: answer.connection, remote: remote, ice: ice, identity: identity,
                                slotSSRCs: client.slotSSRCs)
    }

    /// A nominating check on a participant's transport (flags bit 0: the publishing one), and the DTLS
    /// handshake when it has none yet or (bit 2) starts over with a new ClientHello; with bit 1 the node's
    /// answers are lost on the way, leaving the handshake half done (retransmission timers, handshake
    /// timeout, removal or replacement mid-handshake). A handful of handshakes per input: each costs one.
    mutating func connect(_ who: String, _ flags: UInt8) {
        guard let s = sessions[Key(participant: who, publish: flags & 1 == 1)] else { return }
        let c = s.client
        if flags & 4 != 0, !c.connected { c.dtls = nil }
        if c.dtls != nil { net.check(c, nominate: true); return }
        guard connects < 4 else { return }
        connects += 1
        net.check(c, nominate: true)
        guard c.checkAnswered else { return }
        if flags & 2 != 0 { net.blackholed.insert(c.address) }
        for d in c.startDTLS(now: net.now) { net.send(d, from: c.address) }
        net.blackholed.remove(c.address)
    }

    /// RTP on a publisher's SSRC (from the pool) or RTCP on a subscriber's slot, protected when connected.
    mutating func media(_ who: String, _ f: UInt8, _ r: inout FuzzReader) {
        guard let s = sessions[Key(participant: who, publish: f & 1 == 0)], s.client.connected else { return }
        var p = r.chunk(max: 600)
        guard p.count >= 12 else { return }
        p[0] = (p[0] & 0x3F) | 0x80
        if f & 1 == 0 {
            let ssrc = UInt32(0x1000_0000) | UInt32(f >> 1)
            for i in 0..<4 { p[8 + i] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * UInt32(i))) }
        } else if let slot = s.slotSSRCs.values.sorted().first {
            for i in 0..<4 { p[8 + i] = UInt8(truncatingIfNeeded: slot >> (24 - 8 * UInt32(i))) }
        }
        // Fuzzed numbers on a stream: its SRTP index no longer follows `stream`'s runs, whose promise is off.
        if f & 1 == 0 { tainted.insert(StreamKey(connection: s.connection, ssrc: UInt32(0x1000_0000) | UInt32(f >> 1))) }
        guard let d = s.client.protect(p) else { return }
        // A publisher's packet is its own track's (SSRCs bind per connection): while it may not be heard
        // (or seen), no slot of that kind may send anything for it.
        let silenced = f & 1 == 0 ? refusedKinds(who) : []
        let before = packetsSent(silenced)
        net.send(d, from: s.client.address)
        promise(packetsSent(silenced) == before, "\(who) may not be forwarded (\(silenced)), yet its packet left in a slot")
    }

    /// A run of packets a publisher keeps sending on one of the SSRCs its connection routes, numbered on from
    /// its last run (the first starting just before the wrap, or anywhere): what a browser does across
    /// renegotiations, ICE restarts and talker switches. The promise: none of them is refused by SRTP or
    /// routing (issue 23: a renegotiation that described a track anew restarted its SRTP stream, and once the
    /// sequence numbers had wrapped every packet failed authentication).
    mutating func stream(_ who: String, _ r: inout FuzzReader) {
        let pick = r.u8(), start = r.u16(), runs = 1 + Int(r.u8() & 0x7F)
        guard let s = sessions[Key(participant: who, publish: true)], s.client.connected,
              let routes = room?.sessions.routes(of: s.connection), !routes.media.isEmpty else { return }
        let (ssrc, kind) = routes.media[Int(pick) % routes.media.count]
        let key = StreamKey(connection: s.connection, ssrc: ssrc)
        var seq = streams[key] ?? (pick & 0x80 != 0 ? 65_500 : start)
        let payload: [UInt8] = kind == .audio ? [0xF8, 0xFF, 0xFE] : [0x90, 0x80, 0x80, 0x01, 0x10, 0x00, 0x9D, 0x01, 0x2A, 7, 7, 7]
        let refusals: [DropReason] = [.srtpAuthFailed, .srtpReplay, .unknownSSRC, .noSRTPContext, .ssrcLimit]
        for _ in 0..<runs {
            var p = [UInt8](repeating: 0, count: 12) + payload
            p[0] = 0x80
            p[1] = kind == .audio ? 111 : 96
            p[2] = UInt8(seq >> 8); p[3] = UInt8(seq & 0xFF)
            for i in 0..<4 { p[4 + i] = UInt8(truncatingIfNeeded: (UInt32(seq) &* 960) >> (24 - 8 * UInt32(i))) }
            for i in 0..<4 { p[8 + i] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * UInt32(i))) }
            seq &+= 1
            guard let d = s.client.protect(p) else { break }
            let before = room?.counters.drops
            net.send(d, from: s.client.address)
            guard !tainted.contains(key), room?.sessions.routes(of: s.connection)?.evictions == 0, let before, let after = room?.counters.drops else { continue }
            let refused = refusals.filter { after[$0] > before[$0] }
            promise(refused.isEmpty, "\(who)'s packet \(seq &- 1) on routed SSRC \(ssrc) was refused: \(refused)")
        }
        streams[key] = seq
    }
}

/// One RTP stream a fuzzed client sends on one of its transports.
struct StreamKey: Hashable {
    var connection: ConnectionID
    var ssrc: UInt32
}
