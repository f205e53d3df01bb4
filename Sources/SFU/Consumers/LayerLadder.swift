/// A ranking cut at the smallest layer whose key frames cover the render limit: a larger one would be
/// scaled down by the subscriber anyway.
func renderLimited(_ r: (layers: [PublishedTrack], rates: [Double?]), _ render: RenderLimit?) -> (layers: [PublishedTrack], rates: [Double?]) {
    guard let render, let cover = r.layers.firstIndex(where: { $0.frameSize.map(render.isCovered) ?? false }) else { return r }
    return (Array(r.layers[...cover]), Array(r.rates[...cover]))
}

/// One way to send a source: a spatial layer's track, up to temporal layer `temporal` (nil: all of it), and
/// what that costs (nil: not measured yet).
struct LadderStep {
    var track: PublishedTrack
    var temporal: UInt8?
    var rate: Double?
}

/// How large a subscriber renders a video slot, at most (either side may be open).
public struct RenderLimit: Sendable, Equatable {
    public var maxWidth: Int?
    public var maxHeight: Int?

    public init(maxWidth: Int?, maxHeight: Int?) {
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
    }

    /// Whether a frame of this size covers the limit (is at least as large on a bounded side).
    func isCovered(by size: (width: Int, height: Int)) -> Bool {
        (maxWidth.map { size.width >= $0 } ?? false) || (maxHeight.map { size.height >= $0 } ?? false)
    }
}
