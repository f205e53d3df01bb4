/// At most three values kept inline: a parser can hand back a short list (VP9's reference indices, the first
/// spatial layers' resolutions) without allocating an array on the packet path.
public struct UpToThree<Element: Equatable & Sendable>: RandomAccessCollection, Equatable, Sendable {
    private var e0: Element?
    private var e1: Element?
    private var e2: Element?
    public private(set) var endIndex = 0

    public init() {}

    public var startIndex: Int { 0 }

    public subscript(i: Int) -> Element {
        precondition(i >= 0 && i < endIndex, "index out of range")
        switch i {
        case 0: return e0!
        case 1: return e1!
        default: return e2!
        }
    }

    /// Keeps `e` unless three are already kept; returns whether it was kept.
    @discardableResult public mutating func append(_ e: Element) -> Bool {
        switch endIndex {
        case 0: e0 = e
        case 1: e1 = e
        case 2: e2 = e
        default: return false
        }
        endIndex += 1
        return true
    }
}
