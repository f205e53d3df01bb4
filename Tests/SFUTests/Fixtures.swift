import SFU
import SFUMedia
import SFUSimulation

/// Real speech shared by the scenario tests (espeak-ng, made once per run).
enum Voices {
    static let a = try! Speech.say("Hello everyone, thank you for joining the meeting this morning. Let us look at the numbers.")
    static let c = try! Speech.say("I have a question about the second chart, could you explain the drop in March please?", voice: "en-us")
}

extension RoomHarness {
    func talkerEvents(for subscriber: String) -> [(MonoTime, [RoomEvent.Talker], [RoomEvent.SlotAssignment])] {
        events.compactMap { (t, e) in
            if case .activeTalkers(let s, let talkers, let slots) = e, s == subscriber { return (t, talkers, slots) }
            return nil
        }
    }

    var dominantSpeakers: [(MonoTime, String?)] {
        events.compactMap { (t, e) in if case .dominantSpeaker(let p) = e { return (t, p) } else { return nil } }
    }

    /// RTP a member's subscribe connection received on the slot with `mid`.
    func slotPackets(_ m: RoomHarness.Member, ssrcOffset: UInt32) -> [(header: RTPHeader, packet: [UInt8])] {
        let base = m.audio.ssrc - 1
        return rtp(to: m.subscribe.connection).filter { $0.header.ssrc == base + ssrcOffset }
    }
}

/// Slot SSRC offsets the harness uses: audio slot i at 0x100 + i, video slot i at 0x200 + i.
enum SlotSSRC {
    static func audio(_ i: UInt32) -> UInt32 { 0x100 + i }
    static func video(_ i: UInt32) -> UInt32 { 0x200 + i }
}

extension RoomHarness {
    /// Audio packets a member received (any audio slot) whose payload only `from` sent (frames that two
    /// encoders happened to produce alike are not attributed).
    func audio(to m: RoomHarness.Member, from sender: SimulatedParticipant, slots: Int = 3) -> [(header: RTPHeader, packet: [UInt8])] {
        (0..<slots).flatMap { slotPackets(m, ssrcOffset: SlotSSRC.audio(UInt32($0))) }
            .filter { payloadSenders[Array($0.packet[$0.header.payloadRange])] == [sender.id] }
            .sorted { $0.header.timestamp < $1.header.timestamp }
    }
}
