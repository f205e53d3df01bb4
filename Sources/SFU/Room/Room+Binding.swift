/// Media binding: a participant's publish and subscribe transports (issue 11's session model).
///
/// A participant has at most one publishing and one subscribing connection. A new offer on the same
/// connection is a renegotiation: the tracks and slots it still declares keep their state (sequence
/// unwrapping, history, rewriters, what feeds them), new ones are added and the others removed. A new
/// connection for the same direction replaces the old one, which is released first.
extension Room {
    /// Binds a participant's sending connection and the tracks its offer declares.
    public func attachPublisher(_ id: String, connection: ConnectionID, tracks published: [PublishedTrack],
                                now: MonoTime) throws(RoomError) {
        let p = try participant(id)
        // A simulcast video is one track however many layers it sends.
        guard published.filter({ ($0.simulcast?.index ?? 0) == 0 }).count <= limits.tracksPerPublish else {
            throw RoomError(.limitReached, .invalid, "a publish may send at most \(limits.tracksPerPublish) tracks", limit: "tracks_per_publish")
        }
        func oneSource(_ source: VideoSource) -> Bool {
            let videos = published.filter { $0.codec.kind == .video && $0.source == source }
            let layers = videos.compactMap(\.simulcast?.index)
            return videos.count <= 1 || (layers.count == videos.count && Set(layers).count == layers.count && layers.count <= 3)
        }
        guard published.filter({ $0.codec.kind == .audio }).count <= 1, oneSource(.camera), oneSource(.screen) else {
            throw RoomError(.invalidMediaDescription, .invalid,
                            "a participant publishes at most one audio track, one camera and one screen share (each of up to 3 simulcast layers)")
        }
        let ssrcs = published.flatMap { [$0.ssrc, $0.rtxSSRC].compactMap { $0 } }
        guard Set(ssrcs).count == ssrcs.count else {
            throw RoomError(.invalidMediaDescription, .invalid, "SSRCs must be distinct")
        }
        guard published.allSatisfy({ $0.ssrc != nil || ($0.mid != nil && $0.midExtensionID != nil) }) else {
            throw RoomError(.invalidMediaDescription, .invalid, "a track needs an SSRC, or a mid and the MID extension id")
        }
        if let old = p.publishConnection, old != connection { detachConnection(old, reason: nil) }
        let conn = connectionFor(connection, participant: p)
        // Tracks the offer declares again, unchanged, continue. So does a track whose description changed
        // (codec, RED, header extensions, feedback, screen share, simulcast index) while its RTP stream goes on
        // - the SSRC it declares, or the mid and rid that bound it: its SRTP stream (rollover counter), sequence
        // unwrapping, reception statistics and history must follow the packets the browser keeps sending on
        // that SSRC (issue 23: re-created, libsrtp restarted the SSRC at ROC 0 and, once its sequence numbers
        // had wrapped, every packet failed authentication). The rest of the old tracks end.
        let existing = ([p.audioTrack].compactMap { $0 } + p.videoTracks).compactMap { tracks[$0] }
        var kept: [SourceTrack] = []
        var changed: [(track: SourceTrack, to: PublishedTrack)] = []
        var fresh: [PublishedTrack] = []
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
        // SSRCs some track of the new offer still uses keep their libsrtp streams.
        var stillUsed = Set(published.flatMap { [$0.ssrc, $0.rtxSSRC].compactMap { $0 } })
        for (t, d) in changed {
            let before = [t.ssrc, t.rtxSSRC].compactMap { $0 }
            redescribeTrack(t, d)
            stillUsed.formUnion([t.ssrc, t.rtxSSRC].compactMap { $0 })
            for ssrc in before where !stillUsed.contains(ssrc) { conn.inboundSSRCs.retire(ssrc) }
        }
        for t in existing where !kept.contains(where: { $0 === t }) { removeTrack(t.index, conn: conn, keeping: stillUsed) }
        p.audioTrack = kept.first { $0.kind == .audio }?.index
        var video = kept.filter { $0.kind == .video }.map(\.index)
        p.publishConnection = connection
        for d in fresh {
            let t = SourceTrack(index: nextTrackIndex, owner: p.index, description: d, levelSource: configuration.levelSource)
            nextTrackIndex += 1
            tracks[t.index] = t
            if d.codec.kind == .audio { p.audioTrack = t.index } else { video.append(t.index) }
        }
        // Layers in the offer's order: the lowest first, as browsers and RFC 8853's examples list them.
        video.sort { (tracks[$0]?.description.simulcast?.index ?? 0) < (tracks[$1]?.description.simulcast?.index ?? 0) }
        p.cameraTracks = video.filter { tracks[$0]?.description.source == .camera }
        p.screenTracks = video.filter { tracks[$0]?.description.source == .screen }
        p.layerRankings = [:]
        if p.screenTracks.isEmpty { p.screenSharedSince = nil }
        rebuildRoutes(conn, of: p)
        if p.audioTrack != nil { detector.addSpeaker(p.index, now: now) } else { stopSpeaking(p) }
        conn.nextReceiverReport = min(conn.nextReceiverReport, now + configuration.receiverReportInterval)
        deadlineCache = nil
        updateCandidacy(p)
        listsDirty = true
    }

    /// Binds a participant's receiving connection: each description is one slot (a recvonly m-line). Slots
    /// whose mid the new offer keeps, unchanged, keep what feeds them and their stream's continuity.
    public func attachSubscriber(_ id: String, connection: ConnectionID, slots: [SlotDescription],
                                 now: MonoTime, into out: DatagramBatch) throws(RoomError) {
        let p = try participant(id)
        guard slots.count <= limits.slotsPerSubscription else {
            throw RoomError(.limitReached, .invalid, "a subscription may have at most \(limits.slotsPerSubscription) slots", limit: "slots_per_subscription")
        }
        let ssrcs = slots.flatMap { [$0.ssrc] + ($0.rtxSSRC.map { [$0] } ?? []) }
        guard Set(ssrcs).count == ssrcs.count, Set(slots.map(\.mid)).count == slots.count else {
            throw RoomError(.invalidMediaDescription, .invalid, "slot SSRCs (with their RTX) and mids must be distinct")
        }
        // The node writes header extensions in the one-byte form (`OutgoingRTP`): ids 1-14 only.
        guard slots.allSatisfy({ s in
            [s.audioLevelExtensionID, s.absSendTimeExtensionID, s.transportCCExtensionID].allSatisfy { $0.map(OutgoingRTP.oneByteIDs.contains) ?? true }
        }) else {
            throw RoomError(.invalidMediaDescription, .invalid, "a slot's header extension ids must be 1-14")
        }
        guard slots.allSatisfy({ s in
            (1...SlotDescription.maxFormats).contains(s.formats.count) && s.formats.allSatisfy { $0.codec.kind == s.formats[0].codec.kind }
        }) else {
            throw RoomError(.invalidMediaDescription, .invalid, "a slot has 1-\(SlotDescription.maxFormats) formats, all of one kind")
        }
        if let old = p.subscribeConnection, old != connection { detachConnection(old, reason: nil) }
        let conn = connectionFor(connection, participant: p)
        let previous = p.subscriber
        if let s = previous { detachAllSinks(of: p, s) }
        var oldByMid: [String: Slot] = [:]
        for slot in (previous?.audioSlots ?? []) + (previous?.videoSlots ?? []) { oldByMid[slot.description.mid] = slot }
        func make(_ d: SlotDescription) -> Slot {
            guard let old = oldByMid[d.mid], old.description.ssrc == d.ssrc, old.description.codec.kind == d.codec.kind else { return Slot(d) }
            if old.description == d { return old }
            // Changed under the same SSRC: the same stream goes on, in a format of the new description.
            var slot = Slot(d, continuing: old)
            if d.codec.kind == .video {
                func fits(_ t: Int?) -> PayloadFormat? { t.flatMap { tracks[$0] }.flatMap { d.format(for: $0.description) } }
                if slot.current != nil {
                    if let f = fits(slot.current) { slot.format = f } else { slot.current = nil; slot.rewriter.switchTo(nil) }
                }
                if slot.pending != nil, fits(slot.pending) == nil { slot.pending = nil }
                if slot.current == nil, slot.pending == nil { slot.assigned = nil; slot.undecodable = nil }
            }
            return slot
        }
        let audio = slots.filter { $0.codec.kind == .audio }.map(make)
        let video = slots.filter { $0.codec.kind == .video }.map(make)
        let s: SubscriberState
        if let previous {
            let sameSlots = previous.audioSlots.map(\.description) == audio.map(\.description)
                && previous.videoSlots.map(\.description) == video.map(\.description)
            previous.audioSlots = audio
            previous.videoSlots = video
            if !sameSlots { previous.lastEmittedMap = [] }  // the slot map changed shape: report it
            s = previous
        } else {
            s = SubscriberState(audioSlots: audio, videoSlots: video,
                                videoCount: VideoCountPolicy(parameters: configuration.videoCount, initial: min(1, video.count)))
        }
        s.videoCount.clamp(maxVideos: video.count)
        // transport-cc when the subscriber negotiated it: every packet to it carries the transport-wide
        // sequence number and its feedback drives a GCC estimate; otherwise its REMB is the estimate.
        let tcc = slots.contains { $0.transportCCExtensionID != nil }
        if tcc, conn.sendHistory == nil { conn.sendHistory = SendHistory() }
        if !tcc { conn.sendHistory = nil }
        if tcc != (s.estimator is GCCEstimator) {
            s.estimator = tcc ? GCCEstimator(startBitrate: Double(configuration.startBitrateKbps) * 1000) : REMBEstimator()
        }
        p.subscriber = s
        p.subscribeConnection = connection
        s.connection = conn
        attachAllSinks(of: p, s)
        conn.slotsBySSRC.removeAll()
        for (i, slot) in s.audioSlots.enumerated() { conn.slotsBySSRC[slot.description.ssrc] = SlotRef(subscriber: p.index, kind: .audio, index: i) }
        for (i, slot) in s.videoSlots.enumerated() { conn.slotsBySSRC[slot.description.ssrc] = SlotRef(subscriber: p.index, kind: .video, index: i) }
        refreshSubscriber(p, now: now, into: out)
    }

    /// Installs the SRTP keys DTLS exported for a connection: `inbound` decrypts what the client sends,
    /// `outbound` protects what the node sends (RFC 5764 section 4.2). Throws when libsrtp refuses them.
    public func setSRTP(connection: ConnectionID, inbound: SRTPKeyingMaterial, outbound: SRTPKeyingMaterial) throws {
        guard let c = connections[connection], let p = participants[c.participant] else {
            throw RoomError(.invalidSetting, .notFound, "unknown connection \(connection)")
        }
        c.inbound = try SRTPSession(keys: inbound, direction: .inbound)
        c.outbound = try SRTPSession(keys: outbound, direction: .outbound)
        // Nothing reaches a subscriber before its keys: a keyframe that came while its transport was coming up
        // could not start its waiting video slots, yet ended the wait. Ask those sources again (the next tick).
        if p.subscribeConnection == connection, let s = p.subscriber {
            for t in s.videoSlots.compactMap(\.pending) { tracks[t]?.keyframes.startWaiting(now: .zero) }
            deadlineCache = nil
        }
        events.append(.participantState(participant: p.id, state: .connected, reason: nil))
    }

    /// The connection's transport is gone (closed, replaced, consent expired, handshake timed out): its
    /// tracks stop feeding slots, or its slots stop, and the participant stays in the room. `reason`, when
    /// given, is reported as the participant's `disconnected` state.
    public func detachConnection(_ id: ConnectionID, reason: String?, now: MonoTime? = nil, into out: DatagramBatch? = nil) {
        guard let c = connections.removeValue(forKey: id) else { return }
        c.attached = false
        guard let p = participants[c.participant] else { return }
        p.retiredDrops.add(c.drops)
        if p.publishConnection == id {
            unpublish(p)
            p.publishConnection = nil
        }
        if p.subscribeConnection == id {
            unsubscribe(p)
            p.subscribeConnection = nil
        }
        if let reason { events.append(.participantState(participant: p.id, state: .disconnected, reason: reason)) }
        deadlineCache = nil
        if let now, let out { refreshAllSubscribers(now: now, into: out) } else { listsDirty = true }
    }

    /// The connection lost its transport (ICE consent lapsing, DTLS closed): reported, nothing released.
    public func connectionLost(_ connection: ConnectionID, reason: String) {
        guard let c = connections[connection], let p = participants[c.participant] else { return }
        events.append(.participantState(participant: p.id, state: .disconnected, reason: reason))
    }

    /// What a connection routes: each media (not RTX) SSRC with its track's kind, and how many retired SRTP
    /// streams it had to free for new SSRCs (`InboundStreams`). Nil for a connection the room does not hold.
    public func routes(of id: ConnectionID) -> (media: [(ssrc: UInt32, kind: MediaKind)], evictions: Int)? {
        guard let c = connections[id] else { return nil }
        let media = c.tracksBySSRC.filter { !$0.value.rtx }.compactMap { e in tracks[e.value.track].map { (e.key, $0.kind) } }
        return (media.sorted { $0.0 < $1.0 }, c.inboundSSRCs.evictions)
    }

    // MARK: Pieces

    private func connectionFor(_ id: ConnectionID, participant p: Participant) -> Connection {
        if let c = connections[id], c.participant == p.index { return c }
        connections[id]?.attached = false
        let c = Connection(id: id, participant: p.index)
        connections[id] = c
        return c
    }

    /// The publisher's tracks end: slots they fed stop, and it leaves talker candidacy.
    func unpublish(_ p: Participant) {
        let conn = p.publishConnection.flatMap { connections[$0] }
        for t in [p.audioTrack].compactMap({ $0 }) + p.videoTracks { removeTrack(t, conn: conn) }
        p.audioTrack = nil
        p.cameraTracks = []
        p.screenTracks = []
        p.layerRankings = [:]
        p.screenSharedSince = nil
        if let conn { rebuildRoutes(conn, of: p) }
        stopSpeaking(p)
    }

    /// The subscriber's slots end: nothing feeds them any more.
    func unsubscribe(_ p: Participant) {
        if let s = p.subscriber { detachAllSinks(of: p, s) }
        p.subscriber = nil
    }

    /// Takes a participant out of the detector; a dominant speaker who goes is reported as none.
    func stopSpeaking(_ p: Participant) {
        let wasDominant = detector.dominant == p.index
        detector.removeSpeaker(p.index)
        if wasDominant { events.append(.dominantSpeaker(participant: nil)) }
    }

    /// Ends a track: the slots it fed lose it, its SSRCs stop routing and their libsrtp streams are retired
    /// (`InboundStreams`), but for those in `keeping` (another track of the new offer sends on them).
    func removeTrack(_ t: Int, conn: Connection?, keeping: Set<UInt32> = []) {
        guard let track = tracks[t] else { return }
        releaseSinks(of: track)
        if let conn {
            for ssrc in [track.ssrc, track.rtxSSRC].compactMap({ $0 }) where !keeping.contains(ssrc) { conn.inboundSSRCs.retire(ssrc) }
        }
        tracks[t] = nil
    }

    /// The slots a track feeds (or would after its key frame) let go of it; the next refresh places again.
    private func releaseSinks(of track: SourceTrack) {
        let t = track.index
        for ref in track.sinks {
            guard let s = participants[ref.subscriber]?.subscriber, s.has(ref) else { continue }
            mutateSlot(s, ref) { slot in
                if slot.current == t { slot.current = nil; slot.rewriter.switchTo(nil) }
                if slot.pending == t { slot.pending = nil }
            }
        }
        track.sinks.removeAll()
    }

    /// A track's new description of the same stream. The slots it feeds keep it when what they send is the
    /// same (codec, payload type, H.264 profile, camera or screen); otherwise they are placed again, as for a
    /// new track (a key frame in a format the slot takes).
    private func redescribeTrack(_ t: SourceTrack, _ d: PublishedTrack) {
        let old = t.description
        t.redescribe(d)
        if old.codec != d.codec || old.payloadType != d.payloadType || old.h264 != d.h264 || old.source != d.source {
            releaseSinks(of: t)
        }
    }

    /// The connection's SSRC routes and MID bindings, from the participant's tracks.
    func rebuildRoutes(_ conn: Connection, of p: Participant) {
        conn.tracksBySSRC.removeAll()
        conn.midRoutes.removeAll()
        // Transport-wide feedback when the publisher's tracks carry the sequence number (one id per bundle).
        let published = ([p.audioTrack].compactMap { $0 } + p.videoTracks).compactMap { tracks[$0] }
        let tcc = published.compactMap(\.description.transportCCExtensionID).first
        if tcc != conn.transportCCExtensionID {
            conn.transportCCExtensionID = tcc
            conn.feedback = tcc.map { _ in TransportFeedbackRecorder() }
        }
        let sendTime = p.videoTracks.lazy.compactMap { self.tracks[$0]?.description.absSendTimeExtensionID }.first
        if sendTime != conn.absSendTimeExtensionID {
            conn.absSendTimeExtensionID = sendTime
            conn.uplink = sendTime.map { _ in ReceiveSideEstimator() }
        }
        let remb = p.videoTracks.contains { tracks[$0]?.description.remb == true }
        if remb, conn.nextREMB == .never { conn.nextREMB = .zero } else if !remb { conn.nextREMB = .never }
        for t in published {
            if let s = t.ssrc { conn.tracksBySSRC[s] = (t.index, false); conn.inboundSSRCs.use(s) }
            if let r = t.rtxSSRC { conn.tracksBySSRC[r] = (t.index, true); conn.inboundSSRCs.use(r) }
            // A track bound by its MID (or RID) keeps the route after binding: the sender may move it to a new
            // SSRC (resolving a collision, RFC 3550 section 8.2), and `midBinding` follows it there.
            if t.description.ssrc == nil, let mid = t.description.mid, let id = t.description.midExtensionID {
                let layer = t.description.simulcast
                conn.midRoutes.append(MidRoute(mid: Array(mid.utf8), midExtensionID: id, track: t.index,
                                                     rid: layer?.rid.map { Array($0.utf8) }, ridExtensionID: layer?.ridExtensionID,
                                                     repairedRidExtensionID: layer?.repairedRidExtensionID))
            }
        }
    }

    private func detachAllSinks(of p: Participant, _ s: SubscriberState) {
        for (i, slot) in s.audioSlots.enumerated() { detachSink(SlotRef(subscriber: p.index, kind: .audio, index: i), slot) }
        for (i, slot) in s.videoSlots.enumerated() { detachSink(SlotRef(subscriber: p.index, kind: .video, index: i), slot) }
    }

    /// Points the tracks feeding the subscriber's slots (now or after a keyframe) at those slots' refs.
    private func attachAllSinks(of p: Participant, _ s: SubscriberState) {
        func attach(_ ref: SlotRef, _ slot: Slot) {
            for t in [slot.current, slot.pending].compactMap({ $0 }) {
                guard let track = tracks[t] else { continue }
                if !track.sinks.contains(ref) { track.sinks.append(ref) }
            }
        }
        for (i, slot) in s.audioSlots.enumerated() { attach(SlotRef(subscriber: p.index, kind: .audio, index: i), slot) }
        for (i, slot) in s.videoSlots.enumerated() { attach(SlotRef(subscriber: p.index, kind: .video, index: i), slot) }
    }
}
