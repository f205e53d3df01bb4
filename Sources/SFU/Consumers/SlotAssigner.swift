/// Applies a subscriber's slot plan (`SlotPolicy`) to its slots: audio, camera and screen slots each planned
/// apart (every kind keeps its own sources), sticky (`SlotPlanner`: a kept source keeps its slot, a newcomer
/// takes an evicted source's slot), and a placed participant whose track changed (re-published, another
/// layer) placed again. Returns the slot map to report when the list or map changed.
enum SlotAssigner {
    static func apply(_ ranking: RoomRanking, to s: Subscriber, participants: Roster, configuration: RoomConfiguration,
                      now: MonoTime, into out: DatagramBatch) -> (event: RoomEvent, switches: Int)? {
        let p = s.participant
        let cameraSlots = s.videoSlots.filter { $0.description.source == .camera }
        let screenSlots = s.videoSlots.filter { $0.description.source == .screen }
        let plan = SlotPolicy.plan(
            for: .init(index: p.index, talkerCount: p.talkerCount, audioSlots: s.audioSlots.count, cameraSlots: cameraSlots.count,
                       screenSlots: screenSlots.count, numberOfVideos: s.videoCount.numberOfVideos, cameraAssignments: cameraSlots.map(\.assigned)),
            talkers: ranking.talkers, maxActiveTalkers: configuration.maxActiveTalkers, screenShares: ranking.screenShares,
            rule: configuration.screenShare)
        let assign = { (wanted: [Int], slots: [SlotSender]) in
            Self.assign(wanted, to: slots, of: s, participants: participants, configuration: configuration, now: now, into: out)
        }
        assign(plan.audio, s.audioSlots)
        assign(plan.cameras, cameraSlots)
        if !screenSlots.isEmpty { assign(plan.screens, screenSlots) }
        return s.noteSlotMap(talkers: plan.talkers, names: { participants[$0]?.id })
    }

    private static func assign(_ wanted: [Int], to slots: [SlotSender], of s: Subscriber, participants: Roster,
                               configuration: RoomConfiguration, now: MonoTime, into out: DatagramBatch) {
        for move in SlotPlanner.plan(current: slots.map(\.assigned), wanted: wanted) {
            switch move {
            case .place(let who, let i): if let q = participants[who] { s.place(q, in: slots[i], configuration: configuration, now: now, into: out) }
            case .clear(let i): slots[i].clear()
            }
        }
        for slot in slots {
            if let q = slot.assignee,
               let t = s.chooseTrack(of: q, for: slot, current: slot.pending ?? slot.current, configuration: configuration, now: now),
               slot.current !== t, slot.pending !== t, slot.undecodable !== t {
                s.place(q, in: slot, configuration: configuration, now: now, into: out)
            }
        }
    }
}
