/// A participant's publishing transport and the tracks it sends: its audio track, its camera and its screen
/// share (each one track, or one per simulcast layer, lowest first), the routes from its SSRCs, MIDs and RIDs
/// to them, and the ingress of what it sends - decrypt, route, bind, restore repairs - up to the point where
/// each packet is its track's.
final class Publisher {
    unowned let participant: Participant
    let connection: Connection
    let effects: RoomEffects
    var audio: PublishedTrack?
    /// The published camera: one track, or one per simulcast layer (lowest first).
    var camera: [PublishedTrack] = []
    /// The published screen share, the same way.
    var screen: [PublishedTrack] = []
    /// Each source's live simulcast layers, lowest first, and the rate of each that can be trusted (nil: still
    /// ramping or unmeasured), re-read at most every 250 ms: layer choice runs on every subscriber's feedback.
    var layerRankings: [VideoSource: LayerRanking] = [:]
    /// Since when its screen share has been arriving (without a gap of `videoStaleAfter`): under
    /// `ScreenShareRule.always` the oldest share keeps the screen slot when another begins.
    var screenSharedSince: MonoTime?
    /// Inbound SSRC -> (track, is RTX).
    var tracksBySSRC: [UInt32: (track: PublishedTrack, rtx: Bool)] = [:]
    /// Tracks bound by the MID extension (or a simulcast layer's RID), whose SSRCs are learned from packets,
    /// and followed when the sender moves them to a new SSRC.
    var midRoutes: [MidRoute] = []
    /// What the node tells the publisher (`Publisher+Feedback`).
    var feedback = PublisherFeedback()

    init(participant: Participant, connection: Connection, effects: RoomEffects) {
        self.participant = participant
        self.connection = connection
        self.effects = effects
    }

    var videoTracks: [PublishedTrack] { screen.isEmpty ? camera : camera + screen }
    var allTracks: [PublishedTrack] { (audio.map { [$0] } ?? []) + videoTracks }
    func tracks(_ source: VideoSource) -> [PublishedTrack] { source == .camera ? camera : screen }

    // MARK: Binding an offer's tracks

    /// Takes a publish offer's tracks. Those it declares again, unchanged, continue. So does a track whose
    /// description changed (codec, RED, header extensions, feedback, screen share, simulcast index) while its
    /// RTP stream goes on - the SSRC it declares, or the mid and rid that bound it: its SRTP stream (rollover
    /// counter), sequence unwrapping, reception statistics and history follow the packets the client keeps
    /// sending on that SSRC (issue 23: re-created, libsrtp restarted the SSRC at ROC 0 and, once its sequence
    /// numbers had wrapped, every packet failed authentication). The rest end; `make` builds the new ones.
    /// Returns the tracks that ended and those that began.
    func bind(_ published: [TrackDescription], make: (TrackDescription) -> PublishedTrack) -> (ended: [PublishedTrack], added: [PublishedTrack]) {
        let existing = allTracks
        var kept: [PublishedTrack] = []
        var changed: [(track: PublishedTrack, to: TrackDescription)] = []
        var fresh: [TrackDescription] = []
        for d in published {
            if let t = existing.first(where: { e in e.description == d && !kept.contains { $0 === e } }) {
                kept.append(t)
            } else {
                fresh.append(d)
            }
        }
        fresh = fresh.filter { d in
            guard let t = existing.first(where: { e in !kept.contains { $0 === e } && e.isStream(of: d) }) else { return true }
            kept.append(t)
            changed.append((t, d))
            return false
        }
        // SSRCs some track of the new offer still uses keep their libsrtp streams; the others are retired.
        var stillUsed = Set(published.flatMap { [$0.ssrc, $0.rtxSSRC].compactMap { $0 } })
        for (t, d) in changed {
            let before = [t.ssrc, t.rtxSSRC].compactMap { $0 }
            redescribe(t, d)
            stillUsed.formUnion([t.ssrc, t.rtxSSRC].compactMap { $0 })
            for ssrc in before where !stillUsed.contains(ssrc) { connection.inboundSSRCs.retire(ssrc) }
        }
        let ended = existing.filter { t in !kept.contains { $0 === t } }
        for t in ended { end(t, keeping: stillUsed) }
        let added = fresh.map(make)
        for t in added { t.publisher = self }
        audio = (kept + added).first { $0.kind == .audio }
        // Layers in the offer's order: the lowest first, as browsers and RFC 8853's examples list them.
        let video = (kept + added).filter { $0.kind == .video }.sorted {
            ($0.description.simulcast?.index ?? 0) < ($1.description.simulcast?.index ?? 0)
        }
        camera = video.filter { $0.description.source == .camera }
        screen = video.filter { $0.description.source == .screen }
        layerRankings = [:]
        if screen.isEmpty { screenSharedSince = nil }
        rebuildRoutes()
        return (ended, added)
    }

    /// A track's new description of the same stream. The consumers it feeds keep it when what they send is
    /// the same (codec, payload type, H.264 profile, camera or screen); otherwise they let go and are placed
    /// again, as for a new track (a key frame in a format they take).
    private func redescribe(_ t: PublishedTrack, _ d: TrackDescription) {
        let old = t.description
        t.redescribe(d)
        if old.codec != d.codec || old.payloadType != d.payloadType || old.h264 != d.h264 || old.source != d.source {
            t.releaseConsumers()
        }
    }

    /// Ends a track: its consumers let go of it, its SSRCs stop routing and their libsrtp streams are retired
    /// (`InboundStreams`), but for those in `keeping` (another track of the new offer sends on them).
    func end(_ t: PublishedTrack, keeping: Set<UInt32> = []) {
        t.releaseConsumers()
        t.publisher = nil
        for ssrc in [t.ssrc, t.rtxSSRC].compactMap({ $0 }) where !keeping.contains(ssrc) { connection.inboundSSRCs.retire(ssrc) }
    }

    /// Every track ends (the publisher goes).
    func endAll() {
        for t in allTracks { end(t) }
        audio = nil
        camera = []
        screen = []
        layerRankings = [:]
        screenSharedSince = nil
        tracksBySSRC = [:]
        midRoutes = []
    }

    /// The SSRC routes and MID bindings, from the tracks; the feedback the tracks' extensions allow.
    func rebuildRoutes() {
        tracksBySSRC.removeAll()
        midRoutes.removeAll()
        let published = allTracks
        feedback.negotiate(transportCC: published.compactMap(\.description.transportCCExtensionID).first,
                           absSendTime: videoTracks.lazy.compactMap(\.description.absSendTimeExtensionID).first,
                           remb: videoTracks.contains { $0.description.remb })
        if feedback.nextREMB != .never { effects.wake(at: feedback.nextREMB) }
        for t in published {
            if let s = t.ssrc { tracksBySSRC[s] = (t, false); connection.inboundSSRCs.use(s) }
            if let r = t.rtxSSRC { tracksBySSRC[r] = (t, true); connection.inboundSSRCs.use(r) }
            // A track bound by its MID (or RID) keeps the route after binding: the sender may move it to a new
            // SSRC (resolving a collision, RFC 3550 section 8.2), and `midBinding` follows it there.
            if t.description.ssrc == nil, let mid = t.description.mid, let id = t.description.midExtensionID {
                let layer = t.description.simulcast
                midRoutes.append(MidRoute(mid: Array(mid.utf8), midExtensionID: id, track: t, rid: layer?.rid.map { Array($0.utf8) },
                                          ridExtensionID: layer?.ridExtensionID, repairedRidExtensionID: layer?.repairedRidExtensionID))
            }
        }
    }
}

/// A track whose SSRCs are learned from header extensions sent in clear (RFC 3711 section 3.1): its MID
/// (RFC 8843 section 9.2), or for a simulcast layer its RID and repaired RID (RFC 8852 section 3).
struct MidRoute {
    var mid: [UInt8]
    var midExtensionID: UInt8
    var track: PublishedTrack
    var rid: [UInt8]?
    var ridExtensionID: UInt8?
    var repairedRidExtensionID: UInt8?
}

/// A video source's live layers, lowest first, with their trusted rates, as ranked at `at`.
struct LayerRanking {
    var at: MonoTime
    var layers: [PublishedTrack]
    var rates: [Double?]
}
