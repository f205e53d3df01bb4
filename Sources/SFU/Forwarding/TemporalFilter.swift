/// Which VP8 temporal layers a slot passes (RFC 7741 section 4.2: TID, the Y "layer sync" bit): a simulcast
/// layer sent at a third or half of its frame rate fits between spatial layers (a 400 kbit/s share between a
/// 250 and a 600 kbit/s layer shows the higher one at its base frame rate rather than the lower one at full).
///
/// Frames of a higher temporal layer reference lower ones only, so any suffix can be dropped. Changes take
/// effect at a frame's first packet (S=1, partition 0), never inside a frame: going down at once; going up
/// to layer t at a frame of layer t that carries Y (it references only the base layer, so nothing it needs
/// was dropped) or at a key frame, the way mediasoup and libwebrtc's own receivers join a layer.
public struct TemporalFilter: Sendable, Equatable {
    /// The highest temporal layer the slot should pass; nil: all.
    public var target: UInt8?
    /// The highest it passes now (up moves wait for a sync frame); nil: all.
    public private(set) var limit: UInt8?

    public init(target: UInt8? = nil) {
        self.target = target
        limit = target
    }

    /// Whether a packet of temporal layer `tid` passes. `frameStart`: the first packet of its frame;
    /// `layerSync`: its Y bit; `keyframe`: it starts a key frame.
    public mutating func admits(tid: UInt8, frameStart: Bool, layerSync: Bool, keyframe: Bool) -> Bool {
        if frameStart, limit != target {
            let wanted = target ?? .max, now = limit ?? .max
            if keyframe || wanted < now {
                limit = target
            } else if layerSync, tid > now, tid <= wanted {
                limit = tid == wanted || target == nil && tid >= 3 ? target : tid
            }
        }
        return limit.map { tid <= $0 } ?? true
    }

    /// A new source (or layer) starts at its key frame: every layer up to the target from there.
    public mutating func restart() { limit = target }
}
