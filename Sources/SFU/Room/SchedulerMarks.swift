/// A worker scheduler's bookkeeping on one room (see `Room.schedulerMarks`).
public struct SchedulerMarks: Sendable {
    /// The room is in the scheduler (added, not yet removed).
    public var scheduled = false
    /// Its deadline as the scheduler last read it.
    public var deadline = MonoTime.never
    /// On the list of rooms whose deadline must be read again.
    public var listedForDeadline = false
    /// On the list of rooms that may have events.
    public var listedForEvents = false

    public init() {}
}
