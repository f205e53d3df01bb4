import Synchronization

/// Where a room's recorder hands the packets it records: a bounded queue to a writer thread (`SFURecording`'s
/// `RecordingQueue`), one per worker. The room calls it on its worker's thread and never waits: a full queue
/// refuses, and the room counts the drop.
public protocol RecordingSink: AnyObject {
    /// Starts a recorded stream. Nil when the writer cannot take one more (its control room is full).
    func open(_ stream: RecordedStream) -> RecordedStreamHandle?
    /// One packet's payload (audio: the Opus frame, RED's primary when the publisher sends RED; video: the RTP
    /// payload, descriptor included). False: the queue is full, nothing was taken.
    func write(_ handle: RecordedStreamHandle, payload: UnsafeRawBufferPointer, sequence: Int64, timestamp: UInt32,
               marker: Bool, arrival: MonoTime) -> Bool
    /// The stream moved to a new SSRC: a new sequence space and a new timestamp base.
    func restart(_ handle: RecordedStreamHandle)
    /// The stream ends; its file is closed playable. Never refused.
    func close(_ handle: RecordedStreamHandle)
}

/// What the writer is told of a stream when it starts: who, what, and the clock its offsets are measured on.
public struct RecordedStream: Sendable, Equatable {
    public var recording: String
    public var room: String
    public var participant: String
    public var name: String
    public var codec: Codec
    /// Video: a camera or a screen share; nil for audio.
    public var source: VideoSource?
    /// A simulcast camera's layer recorded (its place in the offer, 0 = lowest); nil when not simulcast.
    public var layer: Int?
    /// When the recording started, on the room's clock: the stream's offset in the manifest is its first
    /// packet's arrival less this.
    public var recordingStart: MonoTime

    public init(recording: String, room: String, participant: String, name: String, codec: Codec,
                source: VideoSource?, layer: Int?, recordingStart: MonoTime) {
        self.recording = recording
        self.room = room
        self.participant = participant
        self.name = name
        self.codec = codec
        self.source = source
        self.layer = layer
        self.recordingStart = recordingStart
    }
}

/// A recorded stream as both sides hold it: its number in the queue, and what the writer tells the room back
/// without a message (it lost a video frame and needs a key frame to go on).
public final class RecordedStreamHandle: Sendable {
    public let id: Int
    private let keyframeWanted = Atomic<Bool>(true)

    public init(id: Int) { self.id = id }

    /// The writer cannot write this video until its next key frame (it starts with none, or lost a frame).
    public var wantsKeyframe: Bool { keyframeWanted.load(ordering: .relaxed) }
    public func setWantsKeyframe(_ wanted: Bool) { keyframeWanted.store(wanted, ordering: .relaxed) }
}
