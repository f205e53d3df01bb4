import SFU
import SFUMedia
import SFUSimulation

/// The session target's seed programs, written in `FuzzSession.step`'s format.
extension FuzzSession {
    /// Seeds: a session's life (admit three, publish audio+video, subscribe, connect, talk, renegotiate,
    /// restart ICE, replace, moderate, remove and re-admit, time out), and moderation under media (a
    /// moderator mutes itself while it talks, a room mute, talker counts, a pin, a lecture floor).
    static var seeds: [[UInt8]] { [lifecycleSeed, moderationSeed, continuitySeed] }

    static var lifecycleSeed: [UInt8] {
        var w = SeedWriter()
        w.raw(6)  // group room, 7 talkers
        w.admit(0, moderator: true)
        w.admit(1)
        w.admit(2)
        w.publish(0, ice: 0, certificate: 0, video: true)
        w.subscribe(1, ice: 1, certificate: 1, audio: 2, video: 1)
        w.connect(0, publish: true)  // ICE and DTLS
        w.connect(1, publish: false)
        for _ in 0..<3 { w.talk(0, ssrc: 2) }  // A's audio: m-line 1 of pool 0
        w.subscribe(1, ice: nil, certificate: nil, audio: 3, video: 1)  // renegotiated: a third audio slot
        w.subscribe(1, ice: 2, certificate: nil, audio: 3, video: 1)  // new credentials: ICE restart
        w.connect(1, publish: false)
        w.publish(0, ice: 3, certificate: 2, video: false)  // a new certificate: replaced, audio only
        w.raw(SeedWriter.op(6, 1)); w.raw(0x03)  // A hard-mutes B's audio
        w.raw(SeedWriter.op(8, 0)); w.raw(0x01); w.raw(1)  // A pins B
        w.raw(SeedWriter.op(5, 1, by: 0)); w.raw(1)  // A drops B
        w.admit(1)  // B comes back
        w.publish(2, ice: 2, certificate: 3, video: false)  // C publishes; its DTLS handshake is left half done
        w.raw(SeedWriter.op(9, 2)); w.raw(0x03)
        w.raw(SeedWriter.op(11, 0)); w.raw(6); w.raw(0)  // 31 s: handshakes under way time out
        return w.w.bytes
    }

    static var moderationSeed: [UInt8] {
        var w = SeedWriter()
        w.raw(6)
        w.admit(0, moderator: true)
        w.admit(1, talkerCount: 2)
        w.admit(2)
        w.publish(0, ice: 0, certificate: 0, video: false)  // SSRC 0x10000000
        w.publish(2, ice: 2, certificate: 2, video: false, pool: 1)  // SSRC 0x10000010
        w.subscribe(1, ice: 1, certificate: 1, audio: 2, video: 0)
        w.connect(0, publish: true)
        w.connect(2, publish: true)
        w.connect(1, publish: false)
        for _ in 0..<3 { w.talk(0, ssrc: 0) }  // A is heard by B
        w.raw(SeedWriter.op(6, 0, by: 0)); w.raw(0x03)  // A hard-mutes its own audio...
        for _ in 0..<3 { w.talk(0, ssrc: 0) }  // ...and is not heard
        w.raw(SeedWriter.op(13, 1)); w.raw(0x1C)  // B wants one talker
        w.raw(SeedWriter.op(8, 0, by: 0)); w.raw(0x01); w.raw(2)  // A pins C
        w.raw(SeedWriter.op(7, 0, by: 0)); w.raw(1)  // A mutes the room: C is not heard
        for _ in 0..<2 { w.talk(2, ssrc: 0x10) }
        w.raw(SeedWriter.op(7, 0, by: 0)); w.raw(0)  // the room unmuted
        w.raw(SeedWriter.op(13, 0, by: 0)); w.raw(0x03); w.raw(0x16); w.u16(500)  // a lecture room: C has no floor
        for _ in 0..<2 { w.talk(2, ssrc: 0x10) }
        w.raw(SeedWriter.op(6, 0, by: 0)); w.raw(0x01)  // A unmutes itself and is heard again
        for _ in 0..<3 { w.talk(0, ssrc: 0) }
        return w.w.bytes
    }

    /// A publisher's audio wraps its sequence numbers, then its offer describes the track anew (the level
    /// extension under another id) on the same transport and it keeps sending; the subscriber renegotiates
    /// its slot's description too (issue 23).
    static var continuitySeed: [UInt8] {
        var w = SeedWriter()
        w.raw(6)
        w.admit(0)
        w.admit(1)
        w.publish(0, ice: 0, certificate: 0, video: false)
        w.subscribe(1, ice: 1, certificate: 1, audio: 1, video: 0)
        w.connect(0, publish: true)
        w.connect(1, publish: false)
        w.stream(0, nearWrap: true, packets: 100)
        w.publish(0, ice: nil, certificate: nil, video: false, quirks: 0x0E)  // renegotiated: level extension id 15
        w.stream(0, nearWrap: true, packets: 100)
        w.subscribe(1, ice: nil, certificate: nil, audio: 1, video: 0, quirks: 0x0E)  // the slot described anew
        w.stream(0, nearWrap: true, packets: 60)
        w.publish(0, ice: nil, certificate: nil, video: false)  // and back
        w.stream(0, nearWrap: true, packets: 60)
        return w.w.bytes
    }

    /// Writes session programs in `step`'s format.
    struct SeedWriter {
        var w = FuzzWriter()
        var audio = RTPStreamWriter(ssrc: 0, payloadType: 111, audioLevelExtensionID: 1)

        static func op(_ kind: UInt8, _ who: Int, by: Int = 0) -> UInt8 { UInt8(by) << 6 | UInt8(who) << 4 | kind }

        mutating func raw(_ b: UInt8) { w.u8(b) }
        mutating func u16(_ v: UInt16) { w.u16(v) }

        /// The byte choosing credentials (pool index) and identity (certificate index; 4 = foreign), or
        /// keeping the session's when nil.
        static func identity(ice: Int?, certificate: Int?) -> UInt8 {
            UInt8(ice == nil ? 0 : 1 | ice! << 1) | UInt8(certificate == nil ? 0 : 8 | certificate! << 4)
        }

        mutating func admit(_ who: Int, moderator: Bool = false, talkerCount: Int? = nil) {
            w.u8(Self.op(0, who)); w.u8(moderator ? 1 : 0)
            if let t = talkerCount { w.u8(1); w.u8(UInt8(t - 1)) } else { w.u8(0) }
        }

        /// f: 1 or 2 m-lines, video first when both, RTX; g: no quirks; the SSRC pool; one quirks byte each.
        mutating func publish(_ who: Int, ice: Int?, certificate: Int?, video: Bool, pool: UInt8 = 0, quirks: UInt8 = 0) {
            w.u8(Self.op(1, who)); w.u8(Self.identity(ice: ice, certificate: certificate))
            w.u8(video ? 0x8A : 0x01); w.u8(0); w.u8(pool)
            for _ in 0..<(video ? 2 : 1) { w.u8(quirks) }
        }

        /// f: audio slots (0-7), g: video slots (0-3); mids "0", "1", "2", ... from the alphabet.
        mutating func subscribe(_ who: Int, ice: Int?, certificate: Int?, audio: Int, video: Int, quirks: UInt8 = 0) {
            w.u8(Self.op(3, who)); w.u8(Self.identity(ice: ice, certificate: certificate))
            w.u8(UInt8(audio)); w.u8(UInt8(video)); w.u8(0)
            for i in 0..<(audio + video) { w.u8(UInt8(i) << 5 | quirks) }
        }

        /// A run of `packets` on the publisher's first routed SSRC (`FuzzSession.stream`), the first starting
        /// just before the wrap when `nearWrap`.
        mutating func stream(_ who: Int, nearWrap: Bool, packets: Int) {
            w.u8(Self.op(10, who)); w.u8(0x80); w.u8(nearWrap ? 0x80 : 0); w.u16(1000); w.u8(UInt8(packets - 1))
        }

        mutating func connect(_ who: Int, publish: Bool) { w.u8(Self.op(9, who)); w.u8(publish ? 1 : 0) }

        /// One Opus packet (a new sequence number each) on the publisher's SSRC 0x100000NN, then 20 ms.
        mutating func talk(_ who: Int, ssrc: UInt8) {
            w.u8(Self.op(10, who)); w.u8(ssrc << 1); w.chunk(audio.packet([0x78, 0x80, 0x11, 0x22, 0x33, 0x44], level: 20))
            w.u8(Self.op(11, 0)); w.u8(1); w.u8(0)
        }
    }
}
