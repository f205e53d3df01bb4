/// What each of this node's subscribers is sent, as it asks (its own talker count, the size it renders a video
/// slot at) and as its downlink allows: a new estimate may change its number of videos (ABWD, reported as
/// `bandwidth_alert`) and its layers and caps, and what more videos would take is what its probes aim at.
///
/// Owns the room's measure of what a video costs (`VideoCosts`); the subscribers' own estimates, video counts
/// and slots stay on `Subscriber`.
public final class RoomDownlinks {
    unowned let room: Room
    var videoCosts = VideoCosts()

    init(room: Room) { self.room = room }

    /// The subscriber's own talker count (at most the room's max_active_talkers).
    public func setTalkerCount(_ id: String, _ count: Int?, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let p = try room.ownParticipant(id)
        if let t = count { try Roster.checkTalkerCount(t) }
        p.talkerCount = count
        room.refreshSubscriber(p, now: now, into: out)
    }

    /// The subscriber renders its video slot `mid` at most this large (nil: no limit): a simulcast source is
    /// then sent the smallest layer that covers it, or a lower one if the estimate says so.
    public func setRenderLimit(_ id: String, mid: String, _ limit: RenderLimit?, now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let p = try room.ownParticipant(id)
        guard let s = p.subscriber, let slot = s.videoSlots.first(where: { $0.description.mid == mid }) else {
            throw RoomError(.invalidSetting, .notFound, "participant \(id) has no video slot \(mid)")
        }
        if let w = limit?.maxWidth, !(1...16_384).contains(w) { throw RoomError(.invalidSetting, .invalid, "max_width must be 1-16384") }
        if let h = limit?.maxHeight, !(1...16_384).contains(h) { throw RoomError(.invalidSetting, .invalid, "max_height must be 1-16384") }
        slot.renderLimit = limit?.maxWidth == nil && limit?.maxHeight == nil ? nil : limit
        // The subscriber asked: no hold times for this move.
        slot.climb.reset()
        if s.reviewLayers(configuration: room.configuration, now: now, into: out) { room.refreshSubscriber(p, now: now, into: out) }
    }

    /// A new downlink estimate for a subscriber: the video count may change (and be reported), then its layers
    /// and caps are reviewed.
    func estimated(_ s: Subscriber, now: MonoTime, into out: DatagramBatch) {
        let c = room.configuration
        if let e = s.estimator.estimate { s.estimateFloor.note(Double(e), now: now) }
        if let alert = s.updateVideoCount(costs: costs(now: now), configuration: c, now: now) {
            room.effects.events.append(.bandwidthAlert(participant: s.participant.id, bandwidthKbps: alert.bandwidthKbps,
                                                       streamBandwidthKbps: alert.streamBandwidthKbps, numberOfVideos: alert.numberOfVideos))
            room.refreshSubscriber(s.participant, now: now, into: out)
        }
        // The slot map reports a layer that moved.
        if s.reviewLayers(configuration: c, now: now, into: out) { room.refreshSubscriber(s.participant, now: now, into: out) }
        s.reviewLayerCaps(audioReserveKbps: c.audioReserveKbps, now: now, into: out)
    }

    /// When the subscriber would take more videos if its estimate allowed, what all it could show would take
    /// (its probe target); nil when it has all it can use.
    func bandwidthForMoreVideos(_ p: Participant, _ s: Subscriber, now: MonoTime) -> Double? {
        let rules = room.rules
        let others = room.participants.all.lazy.filter { $0.index != p.index && rules.videoAllowed($0) }
        let cameras = others.count { ($0.publisher?.videoLive() ?? false) && !$0.videoMuted }
        let screens = others.count { $0.publisher?.videoLive(.screen) ?? false }
        return s.bandwidthForMoreVideos(cameras: cameras, screens: screens,
                                        streamKbps: costs(now: now).perVideo(room.configuration.videoDegradation),
                                        audioReserveKbps: room.configuration.audioReserveKbps)
    }

    /// What a video costs in the room now: its publishers' measured rates, the configured stream bandwidth
    /// before any is measured.
    private func costs(now: MonoTime) -> VideoCosts.Measure {
        videoCosts.measure(room.participants.all.lazy.compactMap(\.publisher), fallbackKbps: room.configuration.streamBandwidthKbps, now: now)
    }
}
