/// A room's settings; every field has a default, and `validate` names the bad key.
public struct RoomConfiguration: Sendable, Equatable {
    public enum Mode: String, Sendable, Codable { case group, lecture }

    public var mode: Mode = .group
    /// Knock-enabled: a participant admitted without the moderator role waits until a moderator lets it in
    /// (`RoomModeration.approve`) or turns it away (`RoomModeration.deny`); while it waits nothing of it is forwarded and it
    /// receives nothing (EnableX "Moderate Participants' entry").
    public var knock = false
    /// K: how many talkers each subscriber receives at most (1-12, EnableX's range for web clients).
    public var maxActiveTalkers = 6
    /// Per-video bandwidth in kbps for the video-count rule until the videos' own rates are measured.
    public var streamBandwidthKbps = 300
    /// Where a subscriber's transport-cc estimate starts, before feedback and probes move it.
    public var startBitrateKbps = 600
    /// Levels come from decoding Opus (SILK's voice flags gate it, DTX is never decoded): what the server
    /// hears, not what the client claims (issue 13; `limits.md`: ~0.01 core per 10 speakers).
    public var levelSource: LevelSource = .decode
    /// Audio bandwidth reserved per forwarded talker, kbps, in the video-count rule.
    public var audioReserveKbps = 40
    /// Opus silence frames sent on an audio slot when its source is muted, so decoders end comfort noise.
    public var silenceFramesOnMute = 10
    /// A video source with no packet for this long stops occupying video slots (the client stopped its camera).
    public var videoStaleAfter: MonoTime.Interval = .seconds(2)
    /// Verify mode flags a participant when claimed and heard levels differ by more than this, on average.
    public var levelMismatchThresholdDb = 12.0
    /// Interval of the node's receiver reports to publishers.
    public var receiverReportInterval: MonoTime.Interval = .seconds(1)
    public var detector = DominantSpeakerDetector.Configuration()
    /// A talker who is not the dominant speaker counts as holding the floor after speaking this long: before
    /// it, it is heard but comes last and takes no video from anyone (`media-core.md`: no video switch for
    /// bursts under 600 ms).
    public var sustainedSpeech: MonoTime.Interval = .milliseconds(600)
    /// How much of an utterance an audio slot sends first when it takes a talker over as it starts speaking
    /// (from the first loud frame, at most this much before the newest packet; zero: none). The detector
    /// decides "speaking" only after several loud frames, and without this what was said before reaches no
    /// listener outside the talker's list (issue 28; Benchmarks/README.md, "A new talker's onset").
    public var onsetReplay: MonoTime.Interval = .milliseconds(500)
    /// Quiet in a talker's speech shorter than this stays in the utterance an audio slot sends first; a longer
    /// one ends it (the utterance starts after it).
    public var onsetPause: MonoTime.Interval = .milliseconds(200)
    public var videoCount = VideoCountPolicy.Parameters.forRealReceivers
    /// Which screen shares a subscriber's screen slots show (see `ScreenShareRule`).
    public var screenShare: ScreenShareRule = .always
    /// What a shrinking downlink costs a subscriber first: simulcast layers, or videos (see `VideoDegradation`).
    public var videoDegradation: VideoDegradation = .layersFirst
    /// A simulcast layer above the lowest is sent with some VP8 temporal layers dropped only if this many
    /// frames a second remain (`Publisher.ladder`).
    public var minTemporalFrameRate = 15.0

    public static let maxActiveTalkersRange = 1...12

    public init() {}

    public func validate() throws(RoomError) {
        guard Self.maxActiveTalkersRange.contains(maxActiveTalkers) else {
            throw RoomError(.invalidSetting, .invalid, "max_active_talkers must be 1-12, got \(maxActiveTalkers)")
        }
        guard (1...100_000).contains(streamBandwidthKbps) else {
            throw RoomError(.invalidSetting, .invalid, "stream_bandwidth must be 1-100000 kbps, got \(streamBandwidthKbps)")
        }
    }
}

/// Which screen shares a subscriber's screen slots show.
public enum ScreenShareRule: String, Sendable, Codable, CaseIterable {
    /// Every screen share in the room while it is present, whoever talks (as a pin is kept), oldest share
    /// first when there are more shares than screen slots: a presentation must not vanish because its
    /// presenter paused or someone else spoke up.
    case always
    /// A screen share only while its presenter is in the subscriber's talker list (the same ranking as
    /// cameras), for rooms where many share at once and only the current talkers' screens matter.
    case talker = "with_talker"
}

/// The order in which ABWD gives up video when a subscriber's estimate falls (and takes it back when it rises,
/// in reverse), for rooms whose publishers send simulcast.
public enum VideoDegradation: String, Sendable, Codable, CaseIterable {
    /// Lower layers first, then fewer videos: every talker stays in view, smaller. A video costs ABWD its
    /// source's lowest layer, so number_of_videos falls only when even the lowest layers no longer fit.
    case layersFirst = "layers_first"
    /// Fewer videos first, then lower layers: the videos kept stay sharp (a lecture, a presentation). A video
    /// costs its source's highest live layer.
    case videosFirst = "videos_first"
}

