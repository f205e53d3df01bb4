/// What the subscriber's downlink estimate decides: how many videos it is shown (ABWD), and what it would
/// take to be shown more.
extension Subscriber {
    /// Updates the number of videos from the estimate; returns the alert when it changed (`bandwidth_alert`).
    func updateVideoCount(costs: VideoCosts.Measure, configuration c: RoomConfiguration, now: MonoTime) -> VideoCountPolicy.Alert? {
        guard let bps = estimator.estimate else { return nil }
        let audio = c.audioReserveKbps * audioSlotsInUse
        // Before a first measurement the node has sent next to nothing: any estimate is app-limited.
        let sent = sentKbps(now: now) ?? 0
        // videos_first: videos are counted at their highest layer, but one is kept (at a lower layer) while
        // even one highest layer does not fit and a lowest one does: fewer videos first, then lower layers.
        // Its estimate is not read as capped by what is sent: layers lowered for a share that no longer fits
        // send less, and an estimate just above that must still take a video away.
        let estimate = Int(bps / 1000)
        let videosFirst = c.videoDegradation == .videosFirst
        let keepOne = videosFirst && estimate - max(costs.lowest, audio) >= costs.lowest
        return videoCount.update(estimateKbps: estimate, streamKbps: costs.perVideo(c.videoDegradation), audioKbps: audio,
                                 minVideos: keepOne ? 1 : 0, maxVideos: videoSlots.count, sentKbps: videosFirst ? nil : sent, now: now)
    }

    /// When it would take more videos if its estimate allowed - `cameras` and `screens` others could show it -
    /// the bandwidth all it could show would take (`VideoCountPolicy`'s up rule: reserve + k videos x 1.15);
    /// nil when it has all it can use.
    func bandwidthForMoreVideos(cameras: Int, screens: Int, streamKbps: Int, audioReserveKbps: Int) -> Double? {
        let screenSlots = videoSlots.count { $0.description.source == .screen }
        let wanted = min(videoSlots.count - screenSlots, cameras) + min(screenSlots, screens)
        guard videoCount.numberOfVideos < wanted else { return nil }
        let r = max(streamKbps, audioReserveKbps * max(1, audioSlotsInUse))
        return (Double(r) + Double(wanted * streamKbps) * videoCount.parameters.upMargin) * 1000
    }
}
