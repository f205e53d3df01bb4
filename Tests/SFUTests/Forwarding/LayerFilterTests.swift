import Testing
@testable import SFU
@testable import SFUBase

/// Temporal and spatial layer dropping per slot (RFC 7741 section 4.2, RFC 9628 section 4.2): which packets a
/// slot sends under a cap, where the cap may move, and how the output closes up over what it leaves out.
@Suite struct LayerFilterTests {
    /// A one-packet VP8 frame: X, S; I (15-bit picture ID), L, T; TID and Y; P clear on a key frame.
    static func vp8(pid: UInt16, tl0: UInt8, tid: UInt8, sync: Bool = false, key: Bool = false) -> VideoDescriptor {
        let bytes: [UInt8] = [0x90, 0xE0, 0x80 | UInt8(pid >> 8), UInt8(pid & 0xFF), tl0, tid << 6 | (sync ? 0x20 : 0), key ? 0x10 : 0x11]
        return bytes.withUnsafeBytes { .vp8(try! VP8Descriptor.parse($0).get()) }
    }

    /// A VP9 layer frame in one packet: I, L (TID, U, SID), B and E, P unless a key frame, TL0PICIDX.
    static func vp9(pid: UInt16, tid: UInt8, sid: UInt8, key: Bool = false, switchUp: Bool = false) -> VideoDescriptor {
        let b0: UInt8 = 0x80 | 0x20 | 0x08 | 0x04 | (key ? 0 : 0x40)
        let bytes: [UInt8] = [b0, 0x80 | UInt8(pid >> 8), UInt8(pid & 0xFF), tid << 5 | (switchUp ? 0x10 : 0) | sid << 1, 7, 0xAA]
        return bytes.withUnsafeBytes { .vp9(try! VP9Descriptor.parse($0).get()) }
    }

    /// L1T3's temporal pattern (0 2 1 2), a picture per frame, the first TL1 and TL2 after each TL0 a sync point.
    static func l1t3(_ n: Int, from: Int = 0) -> [VideoDescriptor] {
        (from..<(from + n)).map { i in
            let tid: UInt8 = [0, 2, 1, 2][i % 4]
            return vp8(pid: UInt16(i), tl0: UInt8(i / 4), tid: tid, sync: i % 4 == 1 || i % 4 == 2, key: i == 0)
        }
    }

    /// A VP8 packet that continues a picture (S clear), for pictures in more than one packet.
    static func vp8Continuation(pid: UInt16, tl0: UInt8, tid: UInt8) -> VideoDescriptor {
        let bytes: [UInt8] = [0x80, 0xE0, 0x80 | UInt8(pid >> 8), UInt8(pid & 0xFF), tl0, tid << 6, 0xAA]
        return bytes.withUnsafeBytes { .vp8(try! VP8Descriptor.parse($0).get()) }
    }

    /// Whether each one-packet frame is sent, in order, its extended sequence number its picture ID.
    func forwarded(_ f: inout LayerFilter, _ frames: [VideoDescriptor]) -> [Bool] {
        frames.map { sent(f.admit($0, marker: true, extendedSequence: Int64($0.numbering?.pictureID ?? 0))) }
    }

    func sent(_ v: LayerFilter.Verdict) -> Bool { if case .forward = v { true } else { false } }

    @Test func aTemporalCapSendsTheLayersAtOrBelowIt() {
        var f = LayerFilter()
        f.wantedTemporal = 1
        let sent = forwarded(&f, Self.l1t3(8))
        #expect(sent == [true, false, true, false, true, false, true, false], "TL0 and TL1, never TL2")
        var all = LayerFilter()
        #expect(forwarded(&all, Self.l1t3(8)).allSatisfy { $0 }, "no cap: everything")
    }

    @Test func goingDownIsImmediateAndGoingUpWaitsForASyncFrameOfThatLayer() {
        var f = LayerFilter()
        _ = forwarded(&f, Self.l1t3(4))
        f.wantedTemporal = 0
        #expect(forwarded(&f, Self.l1t3(4, from: 4)) == [true, false, false, false])
        // Up again: frames 8.. are TL0, TL2 (sync), TL1 (sync), TL2. A TL2 frame without Y would not be taken.
        f.wantedTemporal = nil
        let frames = [Self.vp8(pid: 8, tl0: 2, tid: 0), Self.vp8(pid: 9, tl0: 2, tid: 2), Self.vp8(pid: 10, tl0: 2, tid: 1, sync: true),
                      Self.vp8(pid: 11, tl0: 2, tid: 2), Self.vp8(pid: 12, tl0: 3, tid: 0), Self.vp8(pid: 13, tl0: 3, tid: 2, sync: true)]
        #expect(forwarded(&f, frames) == [true, false, true, false, true, true],
                "TL1 from its sync frame, TL2 only from a TL2 sync frame (its earlier frames were not sent)")
    }

    @Test func aKeyFrameTakesEveryWantedLayerAtOnce() {
        var f = LayerFilter()
        f.wantedTemporal = 0
        _ = forwarded(&f, Self.l1t3(4))
        f.wantedTemporal = 2
        #expect(forwarded(&f, [Self.vp8(pid: 4, tl0: 1, tid: 0, key: true), Self.vp8(pid: 5, tl0: 1, tid: 2)]) == [true, true])
    }

    @Test func aVP9SpatialCapDropsUpperLayersAndMarksTheEndOfThePictureSent() {
        var f = LayerFilter()
        f.wantedSpatial = 1
        let picture = (0...2).map { Self.vp9(pid: 1, tid: 0, sid: UInt8($0), key: true) }
        let verdicts = picture.enumerated().map { f.admit($1, marker: $0 == 2, extendedSequence: Int64($0)) }
        #expect(verdicts == [.forward(endsPicture: false), .forward(endsPicture: true), .skip(closesPicture: false)],
                "layer 1's last packet carries the marker the top layer had")
    }

    @Test func aVP9SpatialLayerComesBackOnlyAtAKeyFrame() {
        var f = LayerFilter()
        f.wantedSpatial = 0
        _ = f.admit(Self.vp9(pid: 1, tid: 0, sid: 0, key: true), marker: false, extendedSequence: 1)
        f.wantedSpatial = nil
        #expect(f.awaitsKeyframe(top: 1))
        #expect(f.admit(Self.vp9(pid: 2, tid: 0, sid: 0), marker: false, extendedSequence: 2) == .forward(endsPicture: true),
                "layer 0 is the top one sent")
        #expect(f.admit(Self.vp9(pid: 2, tid: 0, sid: 1), marker: true, extendedSequence: 3) == .skip(closesPicture: false), "no key frame yet")
        _ = f.admit(Self.vp9(pid: 3, tid: 0, sid: 0, key: true), marker: false, extendedSequence: 4)
        #expect(f.admit(Self.vp9(pid: 3, tid: 0, sid: 1, key: true), marker: true, extendedSequence: 5) == .forward(endsPicture: true))
        #expect(!f.awaitsKeyframe(top: 1))
    }

    /// A VP8 stream has one spatial layer: its temporal caps going back to all layers wait for no key frame
    /// (a PLI would cost every subscriber of the publisher a key frame).
    @Test func backToAllLayersOfAVP8StreamWaitsForNoKeyFrame() {
        var f = LayerFilter()
        f.wantedSpatial = 0
        f.wantedTemporal = 0
        f.reset()
        f.wantedSpatial = nil
        f.wantedTemporal = nil
        #expect(!f.awaitsKeyframe(top: 0))
        #expect(f.awaitsKeyframe(top: 1), "a VP9 stream of two spatial layers capped at the first does")
    }

    @Test func aVP9TemporalLayerComesBackAtASwitchingUpPoint() {
        var f = LayerFilter()
        f.wantedTemporal = 0
        _ = f.admit(Self.vp9(pid: 1, tid: 0, sid: 0, key: true), marker: true, extendedSequence: 1)
        f.wantedTemporal = nil
        #expect(f.admit(Self.vp9(pid: 2, tid: 1, sid: 0), marker: true, extendedSequence: 2) == .skip(closesPicture: true))
        #expect(f.admit(Self.vp9(pid: 3, tid: 1, sid: 0, switchUp: true), marker: true, extendedSequence: 3) == .forward(endsPicture: true))
    }

    /// An RTX repair (RFC 4588) of the key frame that started the group of pictures, arriving after a
    /// temporal drop and a cap lifted again, does not reopen the layers at once: TL2's frames before its next
    /// sync frame refer to TL2 frames the slot left out.
    @Test func aRepairedOldKeyFrameDoesNotReopenATemporalLayerBeforeItsSyncFrame() {
        var f = LayerFilter()
        _ = forwarded(&f, Self.l1t3(4))
        f.wantedTemporal = 0
        #expect(forwarded(&f, Self.l1t3(4, from: 4)) == [true, false, false, false])
        f.wantedTemporal = nil
        #expect(forwarded(&f, [Self.vp8(pid: 8, tl0: 2, tid: 0)]) == [true])
        #expect(sent(f.admit(Self.vp8(pid: 0, tl0: 0, tid: 0, key: true), marker: true, extendedSequence: 0)),
                "the repair itself is base layer, and sent")
        let frames = [Self.vp8(pid: 9, tl0: 2, tid: 2), Self.vp8(pid: 10, tl0: 2, tid: 1, sync: true), Self.vp8(pid: 11, tl0: 2, tid: 2),
                      Self.vp8(pid: 12, tl0: 3, tid: 0), Self.vp8(pid: 13, tl0: 3, tid: 2, sync: true)]
        #expect(forwarded(&f, frames) == [false, true, false, true, true], "the layers come back at the stream's own sync frames")
    }

    /// The same for a VP9 spatial layer: a repaired old key picture does not bring layer 1 back; the next key
    /// frame in order does.
    @Test func aRepairedOldKeyPictureDoesNotBringASpatialLayerBack() {
        var f = LayerFilter()
        _ = f.admit(Self.vp9(pid: 1, tid: 0, sid: 0, key: true), marker: false, extendedSequence: 10)
        _ = f.admit(Self.vp9(pid: 1, tid: 0, sid: 1, key: true), marker: true, extendedSequence: 11)
        f.wantedSpatial = 0
        #expect(f.admit(Self.vp9(pid: 2, tid: 0, sid: 0), marker: false, extendedSequence: 12) == .forward(endsPicture: true))
        f.wantedSpatial = nil
        #expect(f.admit(Self.vp9(pid: 1, tid: 0, sid: 0, key: true), marker: false, extendedSequence: 10) == .forward(endsPicture: true),
                "the repair, judged by the layers sent now")
        #expect(f.awaitsKeyframe(top: 1), "still waiting for a key frame of the stream in order")
        #expect(f.admit(Self.vp9(pid: 3, tid: 0, sid: 0), marker: false, extendedSequence: 14) == .forward(endsPicture: true))
        #expect(f.admit(Self.vp9(pid: 3, tid: 0, sid: 1), marker: true, extendedSequence: 15) == .skip(closesPicture: false))
        _ = f.admit(Self.vp9(pid: 4, tid: 0, sid: 0, key: true), marker: false, extendedSequence: 16)
        #expect(f.admit(Self.vp9(pid: 4, tid: 0, sid: 1, key: true), marker: true, extendedSequence: 17) == .forward(endsPicture: true))
    }

    /// A late picture start (reordered, or repaired) does not apply a lowered cap in the middle of the newer
    /// picture in flight, whose start was sent: the cap takes effect at the next picture start in order.
    @Test func aLatePictureStartDoesNotCloseALayerInTheMiddleOfAPicture() {
        var f = LayerFilter()
        #expect(sent(f.admit(Self.vp8(pid: 0, tl0: 0, tid: 0, key: true), marker: true, extendedSequence: 0)))
        // Packet 1 (picture 1, TL2) is missing; picture 2 (TL1) is packets 2 and 3.
        #expect(sent(f.admit(Self.vp8(pid: 2, tl0: 0, tid: 1, sync: true), marker: false, extendedSequence: 2)))
        f.wantedTemporal = 0
        #expect(sent(f.admit(Self.vp8(pid: 1, tl0: 0, tid: 2, sync: true), marker: true, extendedSequence: 1)),
                "the repair of a TL2 frame the subscriber was sent the layer of")
        #expect(sent(f.admit(Self.vp8Continuation(pid: 2, tl0: 0, tid: 1), marker: true, extendedSequence: 3)), "picture 2 ends whole")
        #expect(!sent(f.admit(Self.vp8(pid: 3, tl0: 0, tid: 2), marker: true, extendedSequence: 4)), "the cap from the next picture on")
        #expect(sent(f.admit(Self.vp8(pid: 4, tl0: 1, tid: 0), marker: true, extendedSequence: 5)))
    }

    @Test func theOutputClosesUpOverSkippedPacketsAndPictures() throws {
        var rw = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        rw.switchTo(1)
        var f = LayerFilter()
        f.wantedTemporal = 1
        var seqs: [UInt16] = [], pids: [UInt16] = []
        for (i, d) in Self.l1t3(12).enumerated() {
            switch f.admit(d, marker: true, extendedSequence: Int64(100 + i)) {
            case .skip(let closes):
                rw.skip(extendedSequence: Int64(100 + i), timestamp: UInt32(i * 3000), closesPicture: closes)
            case .forward:
                let rewritten = rw.rewrite(extendedSequence: Int64(100 + i), timestamp: UInt32(i * 3000), marker: true,
                                           picture: d.numbering, now: .milliseconds(Int64(i) * 33))
                let out = try #require(rewritten)
                seqs.append(out.sequenceNumber)
                pids.append(try #require(out.pictureID))
            }
        }
        #expect(seqs == Array(100..<106), "no gap where TL2 was: \(seqs)")
        #expect(pids == Array(0..<6), "picture IDs closed up too: \(pids)")
    }

    @Test func aLatePacketFromBeforeASkipTakesThePlaceItWouldHaveHad() throws {
        var rw = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        rw.switchTo(1)
        // Picture 0 in packets 10 and 11 (11 arrives late), picture 1 (packet 12) skipped, picture 2 (13) sent.
        let p0 = PictureNumbering(pictureID: 0, pictureIDModulus: 0x8000, tl0PicIdx: nil, keyIndex: nil)
        let p2 = PictureNumbering(pictureID: 2, pictureIDModulus: 0x8000, tl0PicIdx: nil, keyIndex: nil)
        let first = rw.rewrite(extendedSequence: 10, timestamp: 0, marker: false, picture: p0, now: .zero)
        rw.skip(extendedSequence: 12, timestamp: 3000, closesPicture: true)
        let next = rw.rewrite(extendedSequence: 13, timestamp: 6000, marker: true, picture: p2, now: .milliseconds(66))
        let lateOne = rw.rewrite(extendedSequence: 11, timestamp: 0, marker: true, picture: p0, now: .milliseconds(70))
        let a = try #require(first), c = try #require(next), late = try #require(lateOne)
        #expect([a.sequenceNumber, late.sequenceNumber, c.sequenceNumber] == [a.sequenceNumber, a.sequenceNumber &+ 1, a.sequenceNumber &+ 2])
        #expect(late.pictureID == a.pictureID && c.pictureID == a.pictureID.map { $0 + 1 })
    }

    /// However many packets the slot left out since it passed a gap (a spatial layer skipped at a high packet
    /// rate), a late packet from the gap (an RTX repair, or one reordered) takes the place it would have had.
    @Test func aLatePacketTakesItsPlaceHoweverManyPacketsWereLeftOutSince() throws {
        var rw = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        rw.switchTo(1)
        let first = rw.rewrite(extendedSequence: 1, timestamp: 0, marker: true, picture: nil, now: .zero)
        // Packet 2 is missing; 3 to 100 are left out, 101 is sent.
        for ext in Int64(3)...100 { rw.skip(extendedSequence: ext, timestamp: 0, closesPicture: false) }
        let next = rw.rewrite(extendedSequence: 101, timestamp: 3000, marker: true, picture: nil, now: .milliseconds(40))
        let late = rw.rewrite(extendedSequence: 2, timestamp: 0, marker: true, picture: nil, now: .milliseconds(50))
        let a = try #require(first), c = try #require(next)
        #expect(c.sequenceNumber == a.sequenceNumber &+ 2)
        #expect(late?.sequenceNumber == a.sequenceNumber &+ 1)
    }

    /// A late packet the slot leaves out cannot be closed up over: the output went past the number kept for it,
    /// which `skip` gives back for the caller to fill with padding.
    @Test func aLatePacketLeftOutGivesBackTheNumberKeptForIt() throws {
        var rw = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        rw.switchTo(1)
        // 11 is missing, 12 left out, 13 sent; then 11 comes, of a layer left out too.
        let first = rw.rewrite(extendedSequence: 10, timestamp: 0, marker: true, picture: nil, now: .zero)
        #expect(rw.skip(extendedSequence: 12, timestamp: 6000, closesPicture: true) == nil, "in order: closed up over")
        let next = rw.rewrite(extendedSequence: 13, timestamp: 9000, marker: true, picture: nil, now: .milliseconds(100))
        let late = rw.skip(extendedSequence: 11, timestamp: 3000, closesPicture: true)
        let a = try #require(first), c = try #require(next), kept = try #require(late)
        #expect(c.sequenceNumber == a.sequenceNumber &+ 2)
        #expect(kept.sequenceNumber == a.sequenceNumber &+ 1 && kept.timestamp == 3000)
        #expect(rw.skip(extendedSequence: 12, timestamp: 6000, closesPicture: true) == nil, "12 was closed up over, not kept")
    }

    /// The log reaches back `MissingPackets.capacity` gaps: a packet from before more gaps than that cannot be
    /// placed, and is not sent.
    @Test func aPacketFromBeforeMoreGapsThanTheLogHoldsIsNotPlaced() {
        var rw = SlotRewriter(clockRate: 90_000, framesSpanPackets: true)
        rw.switchTo(1)
        _ = rw.rewrite(extendedSequence: 1, timestamp: 0, marker: true, picture: nil, now: .zero)
        // 2 is missing, and every other packet after it: 3, 5, ... are left out.
        for k in 0...Int64(MissingPackets.capacity) { rw.skip(extendedSequence: 3 + 2 * k, timestamp: 0, closesPicture: false) }
        #expect(rw.rewrite(extendedSequence: 2, timestamp: 0, marker: true, picture: nil, now: .zero) == nil)
        #expect(rw.rewrite(extendedSequence: 4, timestamp: 0, marker: true, picture: nil, now: .zero) != nil, "from a gap still held")
    }
}
