import Foundation
@testable import LoadGen
import SFU
import WebRTCEdge
import Testing

/// The pure pieces of the hostile suite and of the soak's session changes.
@Suite struct HostileToolTests {
    /// `sfu hostile --only` and the README count them by number: each of 1...25 once, in order.
    @Test func theAttacksAreNumberedOneToTwentyFiveOnce() {
        #expect(Hostile.attacks.map(\.number) == Array(1...25))
        #expect(Hostile.attacks.first { $0.number == 21 }?.name == "ICE-TCP floods")
        #expect(Hostile.attacks.first { $0.number == 22 }?.name == "awaited participant")
        #expect(Hostile.attacks.first { $0.number == 23 }?.name == "live stream URLs")
        #expect(Hostile.attacks.first { $0.number == 24 }?.name == "ICE-TCP adoption after a reset")
        #expect(Hostile.attacks.last?.name == "subscriber SRTCP SSRC flood")
        #expect(Hostile.attacks.first { $0.number == 15 }?.name == "events since")
        #expect(Hostile.attacks.first { $0.number == 16 }?.name == "rebinding host")
        #expect(Hostile.attacks.first { $0.number == 17 }?.name == "renegotiation after wrap")
        #expect(Hostile.attacks.first { $0.number == 18 }?.name == "slot re-offer after switches")
        #expect(Hostile.attacks.first { $0.number == 19 }?.name == "rid SSRC change")
        #expect(Hostile.attacks.first { $0.number == 20 }?.name == "extension ids above 14")
    }

    @Test func receivedExtensionIDsAreReadAsAReceiverReadsThem() {
        func packet(_ profile: UInt16, _ body: [UInt8]) -> [UInt8] {
            let words = body.count / 4
            return [0x90, 111, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, UInt8(profile >> 8), UInt8(profile & 0xFF), 0, UInt8(words)] + body + [0xF8]
        }
        // One-byte: id 1 (1 byte), padding, id 2 (3 bytes), padding to the word.
        packet(0xBEDE, [0x10, 0x55, 0x00, 0x22, 1, 2, 3, 0x00]).withUnsafeBytes { #expect(SlotTally.extensionIDs($0) == [1, 2]) }
        // Id 15 ends the parse (abs-send-time offered as 255, written in the one-byte form): reported, nothing after.
        packet(0xBEDE, [0x10, 0x55, 0xF2, 1, 2, 3, 0x30, 9]).withUnsafeBytes { #expect(SlotTally.extensionIDs($0) == [1, 15]) }
        // Two-byte form: id 17, 2 bytes.
        packet(0x1000, [17, 2, 0xAB, 0xCD]).withUnsafeBytes { #expect(SlotTally.extensionIDs($0) == [17]) }
        [0x80, 111, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0xF8].withUnsafeBytes { #expect(SlotTally.extensionIDs($0).isEmpty) }
        #expect(SlotTally.largestStepBack([65534, 65535, 0, 1]) == 0, "a wrap is a step forward")
        #expect(SlotTally.largestStepBack([40100, 40101, 30050, 30051]) == 10051)
    }

    @Test func theLongestGapCountsTheWindowsEdges() {
        var log = ArrivalLog()
        for ms in [0, 20, 40, 300, 320] as [Int64] { log.add(.milliseconds(1000 + ms)) }
        let (gap, packets) = log.maxGap(from: .milliseconds(1010), to: .milliseconds(1500))
        #expect(packets == 4)
        #expect(gap == .milliseconds(260), "40 -> 300 ms")
        #expect(log.maxGap(from: .milliseconds(1010), to: .milliseconds(2000)).gap == .milliseconds(680), "the silence after the last arrival")
        #expect(ArrivalLog().maxGap(from: .milliseconds(0), to: .milliseconds(700)) == (.milliseconds(700), 0))
    }

    @Test func anOversizedTransportCCFeedbackIs36BytesAndRefusedBeforeExpansion() {
        let b = RTCPBuilder.transportCC(1, media: 2, statusCount: 0xFFFF)
        #expect(b.count == 36)
        b.withUnsafeBytes { p in
            #expect(RTCPCompound.validate(p) == nil, "well-formed RTCP: only its claim is absurd")
            _ = RTCPCompound.forEach(p) { pkt in
                #expect(TransportCCFeedback.statusCount(p, pkt) == 65535)
                #expect(TransportCCFeedback.parse(p, pkt, maxPackets: 1023) == nil)
            }
        }
    }

    @Test func unpackedNACKPairsEachNameSeventeenPackets() {
        let b = RTCPBuilder.nackPairs(1, media: 2, (0..<330).map { (UInt16($0) * 100, 0xFFFF) })
        #expect(b.count == 12 + 330 * 4)
        var lost = 0
        b.withUnsafeBytes { p in
            #expect(RTCPCompound.validate(p) == nil)
            _ = RTCPCompound.forEach(p) { pkt in _ = GenericNACK.forEachLost(p, pkt) { _ in lost += 1 } }
        }
        #expect(lost == 330 * 17)
    }

    @Test func anOfferWithExtraAudioBundlesEveryNewMid() throws {
        let client = try LoadClient(certificate: DTLSCertificate(commonName: "t"), profile: .publisher(audio: true, video: true))
        let sdp = try SessionDescription.parse(APIAttacks.withExtraAudio(client.offer(), count: 2))
        #expect(sdp.media.map(\.kind) == ["audio", "video", "audio", "audio"])
        #expect(sdp.media.compactMap(\.mid) == ["0", "1", "x0", "x1"])
        #expect(sdp.attribute("group") == "BUNDLE x0 x1 0 1")
        #expect(Set(sdp.media.flatMap { $0.values("ssrc") }.compactMap { $0.split(separator: " ").first.flatMap { UInt32($0) } }).count == 4)
    }

    @Test func eachSessionChangeHappensInOneRoomPerCycle() {
        for cycle in 0..<8 {
            let changes = SessionChanges(cycle: cycle, rooms: 4, participants: 4, enabled: true)
            let rooms = Soak.SessionChange.allCases.map { changes.rooms($0) }
            #expect(rooms.allSatisfy { $0.count == 1 })
            #expect(Set(rooms.flatMap { $0 }) == [0, 1, 2, 3])
        }
        #expect(SessionChanges(cycle: 0, rooms: 4, participants: 4, enabled: false).rooms(.vanish).isEmpty)
    }
}

@Suite struct LoadClientRenegotiationTests {
    static let local = LocalTransport(ice: .random(), fingerprint: try! DTLSCertificate(commonName: "n").fingerprint,
                                      candidates: [TransportAddress("127.0.0.1:9")!])

    @Test func aReofferDescribesTheSameStreamsAnewOnTheSameTransport() throws {
        var p = LoadClient.Profile.publisher(audio: true, video: true)
        p.audioSequenceStart = 65_500
        p.videoSequenceStart = 65_300
        let client = try LoadClient(certificate: DTLSCertificate(commonName: "t"), profile: p)
        #expect(client.nextAudioSequence == 65_500 && client.nextVideoSequence() == 65_300)
        let first = try SessionDescription.parse(client.offer())
        let before = try OfferAnswer.answerPublish(first, local: Self.local).tracks
        var changed = p
        changed.audioLevelID = 3
        changed.offerRED = true
        changed.videoNACK = false
        let again = try SessionDescription.parse(client.offer(profile: changed))
        #expect(again.media.map { $0.attribute("ice-ufrag") } == first.media.map { $0.attribute("ice-ufrag") })
        #expect(again.media.map { $0.attribute("fingerprint") } == first.media.map { $0.attribute("fingerprint") })
        #expect(again.media.map(\.ssrcs) == first.media.map(\.ssrcs) && again.media.map(\.mid) == first.media.map(\.mid))
        let after = try OfferAnswer.answerPublish(again, local: Self.local).tracks
        #expect(before.map(\.ssrc) == after.map(\.ssrc))
        #expect(before[0].audioLevelExtensionID == 1 && after[0].audioLevelExtensionID == 3)
        #expect(before[0].redPayloadType == nil && after[0].redPayloadType == 63)
        #expect(before[1].nack && !after[1].nack)

        var paused = p
        paused.audioInactive = true
        let inactive = try SessionDescription.parse(client.offer(profile: paused))
        #expect(inactive.media.map(\.mid) == first.media.map(\.mid) && inactive.media[0].has("inactive") && inactive.media[0].ssrcs.isEmpty)
        #expect(try OfferAnswer.answerPublish(inactive, local: Self.local).tracks.map(\.codec) == [.vp8])
    }

    @Test func ridSimulcastIsOfferedWithoutSSRCsAndTaggedOnEachStreamsFirstPackets() throws {
        var p = LoadClient.Profile.publisher(audio: true, video: true, simulcastLayers: 2)
        p.ridSimulcast = true
        let client = try LoadClient(certificate: DTLSCertificate(commonName: "t"), profile: p)
        let offer = try SessionDescription.parse(client.offer())
        #expect(offer.media[1].ssrcs.isEmpty && offer.media[1].attribute("simulcast") == "send l;m")
        let tracks = try OfferAnswer.answerPublish(offer, local: Self.local).tracks.filter { $0.codec == .vp8 }
        #expect(tracks.map { $0.simulcast?.rid } == ["l", "m"] && tracks.allSatisfy { $0.ssrc == nil && $0.mid == "1" })
        // The first packets of a stream carry MID and RID, the rest nothing; a moved stream's first again.
        var w = RTPStreamHeader(ssrc: 5, payloadType: 96, levelExtension: false)
        w.tag([(4, Array("1".utf8)), (10, Array("h".utf8))], packets: 2)
        var out = [UInt8](repeating: 0, count: 100)
        var ids: [[UInt8]] = []
        for i in 0..<4 {
            if i == 3 { w.move(to: 6); w.tag([(4, Array("1".utf8))], packets: 1) }
            let n = out.withUnsafeMutableBytes { w.write(payload: [1, 2, 3], level: nil, marker: false, into: $0) }
            ids.append(out.withUnsafeBytes { SlotTally.extensionIDs(UnsafeRawBufferPointer(rebasing: $0[0..<n])) })
        }
        #expect(ids == [[4, 10], [4, 10], [], [4]] && w.ssrc == 6)
    }
}

@Suite struct LoadClientSessionTests {
    static func answer(ufrag: String, password: String, slots: [(mid: String, ssrc: UInt32)]) -> String {
        var l = ["v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE " + slots.map(\.mid).joined(separator: " ")]
        for s in slots {
            l += ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 127.0.0.1", "a=mid:\(s.mid)", "a=sendonly", "a=rtcp-mux",
                  "a=ice-ufrag:\(ufrag)", "a=ice-pwd:\(password)", "a=setup:passive",
                  "a=fingerprint:sha-256 B0:60:F4:BB:20:11:C2:0E:E5:CC:C0:59:9A:8D:4C:5D:C6:CE:A6:CD:92:8B:90:48:F2:23:FD:15:44:FE:51:38",
                  "a=rtpmap:111 opus/48000/2", "a=ssrc:\(s.ssrc) cname:sfu", "a=candidate:1 1 udp 2130706431 127.0.0.1 9 typ host"]
        }
        return l.joined(separator: "\r\n") + "\r\n"
    }

    @Test func aRenegotiationKeepsTheTransportAndAnICERestartChangesOnlyTheCredentials() throws {
        let client = try LoadClient(certificate: DTLSCertificate(commonName: "t"), profile: .subscriber(audio: 1))
        let first = try SessionDescription.parse(client.offer())
        try client.start(answer: Self.answer(ufrag: "node", password: "node-password-22-chars-", slots: [("0", 11)]), now: .zero)
        #expect(client.answeredSlots.map(\.ssrc) == [11])

        let renegotiation = try SessionDescription.parse(client.offer(profile: .subscriber(audio: 2)))
        #expect(renegotiation.media.count == 2)
        #expect(renegotiation.media[0].attribute("ice-ufrag") == first.media[0].attribute("ice-ufrag"))
        #expect(renegotiation.media[0].attribute("fingerprint") == first.media[0].attribute("fingerprint"))
        try client.update(answer: Self.answer(ufrag: "node", password: "node-password-22-chars-", slots: [("0", 11), ("1", 12)]), now: .zero)
        #expect(client.answeredSlots.map(\.ssrc) == [11, 12])
        #expect(client.remoteICE?.ufrag == "node")

        let restart = try SessionDescription.parse(client.offer(restartICE: true))
        #expect(restart.media[0].attribute("ice-ufrag") != first.media[0].attribute("ice-ufrag"))
        #expect(restart.media[0].attribute("fingerprint") == first.media[0].attribute("fingerprint"))
        try client.update(answer: Self.answer(ufrag: "edon", password: "another-password-22-ch", slots: [("0", 11), ("1", 12)]), now: .zero)
        #expect(client.remoteICE == ICECredentials(ufrag: "edon", password: "another-password-22-ch"))
        #expect(client.checksSucceededSinceRestart == 0)
        #expect(client.lastCheckSent != nil, "the first check with the new credentials went out at once")
    }
}
