/// What an offer may declare, checked before anything is bound: bounded counts (`RoomLimits`), one audio
/// track, camera and screen share per publisher (each of up to three simulcast layers), distinct SSRCs, a
/// way to bind every track, and for a subscription slots the node can write (one-byte extension ids).
enum OfferRules {
    static func checkPublish(_ published: [TrackDescription], limits: RoomLimits) throws(RoomError) {
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
    }

    static func checkSubscribe(_ slots: [SlotDescription], limits: RoomLimits) throws(RoomError) {
        guard slots.count <= limits.slotsPerSubscription else {
            throw RoomError(.limitReached, .invalid, "a subscription may have at most \(limits.slotsPerSubscription) slots", limit: "slots_per_subscription")
        }
        let ssrcs = slots.flatMap { [$0.ssrc] + ($0.rtxSSRC.map { [$0] } ?? []) }
        guard Set(ssrcs).count == ssrcs.count, Set(slots.map(\.mid)).count == slots.count else {
            throw RoomError(.invalidMediaDescription, .invalid, "slot SSRCs (with their RTX) and mids must be distinct")
        }
        guard slots.allSatisfy({ s in
            (1...SlotDescription.maxFormats).contains(s.formats.count) && s.formats.allSatisfy { $0.codec.kind == s.formats[0].codec.kind }
        }) else {
            throw RoomError(.invalidMediaDescription, .invalid, "a slot has 1-\(SlotDescription.maxFormats) formats, all of one kind")
        }
        // The node writes header extensions in the one-byte form (`OutgoingRTP`): ids 1-14 only.
        guard slots.allSatisfy({ s in
            [s.audioLevelExtensionID, s.absSendTimeExtensionID, s.transportCCExtensionID].allSatisfy { $0.map(OutgoingRTP.oneByteIDs.contains) ?? true }
        }) else {
            throw RoomError(.invalidMediaDescription, .invalid, "a slot's header extension ids must be 1-14")
        }
    }
}
