/// What one subscriber should receive, decided from the room's rules alone: its ordered talker list, and the
/// participants its audio, camera and screen slots should show, most important first. Pure - the talker
/// ranking (with pins, the floor and mutes already in the candidates), the subscriber's own talker count,
/// its number_of_videos (ABWD) and the screen-share rule in, a plan out - so every rule has table tests of its
/// own; the room applies the plan to the slots (`SlotPlanner` keeps what each slot already shows).
enum SlotPolicy {
    /// What the policy needs to know of the subscriber.
    struct Subscriber {
        var index: Int
        /// Its own talker count (at most the room's max_active_talkers), when it set one.
        var talkerCount: Int?
        var audioSlots: Int
        var cameraSlots: Int
        var screenSlots: Int
        /// The videos its downlink allows (ABWD).
        var numberOfVideos: Int
        /// Whom its camera slots show now, in slot order (nil: empty).
        var cameraAssignments: [Int?]
    }

    /// A screen share that may be shown: its presenter, its place among the pins (nil: not pinned), and since
    /// when it has been shared.
    struct ScreenShare {
        var presenter: Int
        var pinOrder: Int?
        var since: MonoTime?
    }

    struct Plan: Equatable {
        var talkers: [TalkerEntry]
        var audio: [Int]
        var cameras: [Int]
        var screens: [Int]
    }

    /// The plan for `s`. Screen slots show screen shares (`screenShares`) and take their share of the
    /// subscriber's number_of_videos first; camera slots show the talkers' cameras with what is left. A talker
    /// who only just started takes no camera slot from someone still showing: the burst may be a "yeah" (no
    /// video switch for bursts under 600 ms, media-core.md); one whose camera is already showing keeps it.
    static func plan(for s: Subscriber, talkers prepared: TalkerListBuilder.Prepared, maxActiveTalkers k: Int,
                     screenShares shares: [ScreenShare], rule: ScreenShareRule) -> Plan {
        let c = prepared.candidates
        let length = min(k, s.talkerCount ?? k, max(s.audioSlots, s.cameraSlots))
        let videos = min(s.numberOfVideos, s.cameraSlots + s.screenSlots)
        var list = prepared.list(for: s.index, length: length, videos: min(videos, s.cameraSlots))
        let screens = s.screenSlots == 0 ? [] : Array(screenSharesWanted(by: s.index, talkers: list, shares: shares, rule: rule)
            .prefix(min(videos, s.screenSlots)))
        if !screens.isEmpty {
            list = prepared.list(for: s.index, length: length, videos: min(videos - screens.count, s.cameraSlots))
        }
        let audio = Array(list.filter { c[$0.participant]!.hasAudio }.map(\.participant).prefix(s.audioSlots))
        var cameras = Array(list.filter(\.video).map(\.participant).prefix(s.cameraSlots))
        var showing = s.cameraAssignments.compactMap { $0 }.filter { c[$0]?.hasVideo == true && !cameras.contains($0) && $0 != s.index }
        // One already showing takes nothing from anyone: swapping it out for its 600 ms would cost two video
        // switches (and two key frames) for a pause in its own speech.
        for i in cameras.indices where c[cameras[i]]?.young == true && !s.cameraAssignments.contains(cameras[i]) && !showing.isEmpty {
            cameras[i] = showing.removeFirst()
        }
        for i in list.indices { list[i].video = cameras.contains(list[i].participant) }
        return Plan(talkers: list, audio: audio, cameras: cameras, screens: screens)
    }

    /// The screen shares subscriber `subscriber`'s screen slots should show, most important first: under
    /// `ScreenShareRule.always` every share but its own, pinned presenters first, then the oldest share (a
    /// presentation keeps its slot when another begins); under `.talker` the shares of the talkers in its
    /// list, in the list's order. `shares` holds only shares that may be shown (live, presenter not hard-muted
    /// and with the floor: a share that may not be sent is dropped at ingress as a camera is).
    static func screenSharesWanted(by subscriber: Int, talkers: [TalkerEntry], shares: [ScreenShare], rule: ScreenShareRule) -> [Int] {
        let others = shares.filter { $0.presenter != subscriber }
        switch rule {
        case .talker:
            return talkers.map(\.participant).filter { t in others.contains { $0.presenter == t } }
        case .always:
            return others.sorted { a, b in
                let pa = a.pinOrder ?? Int.max, pb = b.pinOrder ?? Int.max
                if pa != pb { return pa < pb }
                let sa = a.since ?? .never, sb = b.since ?? .never
                return sa != sb ? sa < sb : a.presenter < b.presenter
            }.map(\.presenter)
        }
    }
}
