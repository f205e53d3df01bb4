import SFU

/// Hands out one worker's connection ids: worker i gives i+1, i+1+1024, i+1+2048, ... so ids are unique
/// across workers (at most 1,024 of them) without asking each other, and never `ConnectionID.none` or an id
/// still in use. 64-bit ids do not wrap in any node's life; the check against live ids keeps the promise
/// (ids never collide) even if they did, since the tables keyed by them would otherwise overwrite a live
/// transport with a new one.
struct ConnectionIDs {
    static let stride: UInt64 = 1024
    /// The next candidate. Internal so a test can start it near the end of the range.
    var next: UInt64

    init(worker index: Int) {
        precondition(index >= 0 && UInt64(index) < Self.stride, "at most \(Self.stride) workers")
        next = UInt64(index) + 1
    }

    /// The next free id: `inUse` says whether a candidate is taken (a transport or a hosted one).
    mutating func allocate(inUse: (ConnectionID) -> Bool) -> ConnectionID {
        while true {
            let id = ConnectionID(next)
            next &+= Self.stride
            if id != .none, !inUse(id) { return id }
        }
    }
}
