/// A recording's consumer of one published track: it hands each packet the track forwards - decrypted, and
/// only what the room lets through (a hard-muted, floor-less or awaited participant's packets are dropped at
/// ingress and never reach it) - to the node's recording writer through its worker's bounded queue. It copies
/// the payload into the queue and returns; it never waits. A full queue is a counted drop
/// (`recording_queue_full`), and the file has a gap there.
final class TrackRecorder: MediaConsumer {
    let handle: RecordedStreamHandle
    let sink: any RecordingSink
    let effects: RoomEffects
    /// The track it records; nil once the track ended (its stream was closed).
    private(set) weak var track: PublishedTrack?
    private(set) var ended = false

    init(track: PublishedTrack, handle: RecordedStreamHandle, sink: any RecordingSink, effects: RoomEffects) {
        self.track = track
        self.handle = handle
        self.sink = sink
        self.effects = effects
    }

    func consume(_ packet: ForwardedPacket, from track: PublishedTrack, now: MonoTime, into out: DatagramBatch) {
        // Audio: the Opus frame alone (RED's primary block, RFC 2198); video: the payload with its descriptor.
        let range = track.kind == .audio ? packet.primary : packet.header.payloadRange
        let payload = UnsafeRawBufferPointer(rebasing: packet.plain[range])
        // The writer lost a frame (or has none yet): it writes nothing until a key frame, so ask for one
        // (`requestKeyframe` sends at most one PLI per 200 ms).
        if track.kind == .video, handle.wantsKeyframe { track.requestKeyframe(now: now, into: out, effects: effects) }
        guard sink.write(handle, payload: payload, sequence: packet.extendedSequence, timestamp: packet.header.timestamp,
                         marker: packet.header.marker, arrival: now) else {
            return effects.drop(.recordingQueueFull)
        }
    }

    /// The track ended (its publisher left or renegotiated it away): its file is closed.
    func trackEnded(_ track: PublishedTrack) { close() }

    func trackRestarted(_ track: PublishedTrack) { sink.restart(handle) }

    func senderReport(_ sr: SenderReport, of track: PublishedTrack, now: MonoTime, into out: DatagramBatch) {}

    /// Keeps the publisher asked for a key frame while the writer waits for one.
    func awaitsKeyframe(of track: PublishedTrack) -> Bool { track.kind == .video && handle.wantsKeyframe }

    func videoShareCap(audioReserveKbps: Int) -> Double? { nil }

    /// Stops recording the track: detached, its stream closed. Once only.
    func close() {
        guard !ended else { return }
        ended = true
        track?.detach(self)
        track = nil
        sink.close(handle)
    }
}
