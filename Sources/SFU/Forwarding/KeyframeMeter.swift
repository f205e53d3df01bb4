/// How large a video track's key frames are: the bytes of its last complete key frame (the packets of the
/// RTP timestamp a key frame started at). A layer switch waits for the new layer's key frame, and that frame
/// must cross the subscriber's link on top of the stream: for a 640x360 VP8 layer of ~360 kbit/s Chromium
/// sends key frames of ~100-160 kbit, a third of a second of a 500 kbit/s link by themselves. `LayerAllocator`
/// weighs it when the slot moves down. Two comparisons per packet, no allocation.
struct KeyframeMeter {
    /// The key frame being counted: its timestamp and bytes so far.
    private var counting: (timestamp: UInt32, bytes: Int)?
    /// The last complete key frame's size in bits; nil before one.
    private(set) var lastBits: Double?

    /// A packet of the track arrived in order (not a repair: a resent packet would count twice).
    mutating func packet(timestamp: UInt32, bytes: Int, keyframeStart: Bool) {
        if keyframeStart {
            counting = (timestamp, bytes)
            return
        }
        guard let c = counting else { return }
        if c.timestamp == timestamp {
            counting = (timestamp, c.bytes &+ bytes)
        } else {
            lastBits = Double(c.bytes) * 8
            counting = nil
        }
    }
}
