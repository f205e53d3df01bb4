/// What a video slot shows, as its slot map and layer review read it.
extension SlotSender {
    /// The codec of the source the video slot carries, waits for or cannot decode, and whether the subscriber
    /// can decode it; nil for a slot with no source.
    var codecShown: RoomEvent.SlotCodec? {
        if let t = pending ?? current { return .init(codec: t.description.codec, decodable: true) }
        if let t = undecodable { return .init(codec: t.description.codec, decodable: false) }
        return nil
    }

    /// The simulcast layer the video slot carries or waits for, nil when its source is not simulcast.
    var layerShown: Int? {
        guard let t = pending ?? current, let publisher = t.publisher, publisher.tracks(t.description.source).count > 1 else { return nil }
        return t.description.simulcast?.index
    }

    /// Whether the slot's source is simulcast (several layers, each perhaps of several temporal ones): the only
    /// slots `reviewLayers` plans for (a single layered stream is `reviewLayerCaps`'). Checked first, without
    /// allocating: it runs on every feedback.
    var showsSeveralSteps: Bool {
        guard let publisher = assignee?.publisher else { return false }
        return publisher.tracks(description.source).count > 1
    }
}
