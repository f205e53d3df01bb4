/// Something a published track's packets go to (mediasoup's Consumer): a subscriber's slot today; a relay to
/// another node, a recorder or a plain RTP egress later. A track holds its consumers directly and hands each
/// packet to each in turn, on the worker's thread, allocating nothing.
protocol MediaConsumer: AnyObject {
    /// One packet of `track`, decrypted, checked and measured: sent on as this consumer sends, or not.
    func consume(_ packet: ForwardedPacket, from track: PublishedTrack, now: MonoTime, into out: DatagramBatch)
    /// `track` no longer feeds this consumer (it ended, or may no longer be sent): let go of it.
    func trackEnded(_ track: PublishedTrack)
    /// `track`'s stream moved to a new SSRC (a new sequence space): re-anchor what follows it.
    func trackRestarted(_ track: PublishedTrack)
    /// A sender report of `track` (RFC 3550 section 6.4.1), to pass on as this consumer's own when it sends
    /// the track.
    func senderReport(_ sr: SenderReport, of track: PublishedTrack, now: MonoTime, into out: DatagramBatch)
    /// Whether this consumer waits for `track`'s next key frame (the track keeps asking the publisher).
    func awaitsKeyframe(of track: PublishedTrack) -> Bool
    /// What a video sent to this consumer may cost at most (bit/s): its subscriber's share of its downlink
    /// per video, less `audioReserveKbps` per audio slot. Nil: no limit known (no estimate, or a consumer
    /// that takes whatever comes). The publisher is asked for no more than the largest of these (REMB).
    func videoShareCap(audioReserveKbps: Int) -> Double?
}

/// A media packet as a track hands it to its consumers: the plain packet in the worker's buffer and what the
/// ingress path read of it. Valid only during `consume`.
struct ForwardedPacket {
    var plain: UnsafeRawBufferPointer
    var header: RTPHeader
    /// Audio: the Opus frame (the RED packet's primary block when the publisher sends RED, RFC 2198).
    var primary: Range<Int>
    var red: REDPayload?
    /// Video: the codec's payload descriptor (key frames, layers, picture numbering).
    var video: VideoDescriptor?
    var extendedSequence: Int64
    /// Newer than any packet of the track before it (never for a repair): only such a key frame start may
    /// switch a slot over.
    var inOrder: Bool
    /// Audio: the level measured for it (RFC 6464 units), forwarded in the slot's audio level extension.
    var level: UInt8?
}
