import SFU
import WebRTCEdge

/// One thing a worker core has for its shell. `WorkerCore.poll()` hands them out in the order the shell
/// must carry them out - the order is the core's, not the shell's to remember:
/// 1. `media`: the rooms' batch of datagrams, to send (each to `destination(of:)`), stamp with the time the
///    kernel took them (`DatagramBatch.sent(at:)`: transport-wide send times) and empty;
/// 2. `handoff`: a batch for another worker (its hosted transports' packets, or what they received);
/// 3. `peer`: a message for another worker. Before control datagrams: a hosted transport's SRTP keys reach
///    its room's worker before the DTLS flight that lets its client send media leaves;
/// 4. `control`: a STUN answer, DTLS flight or close_notify, to send;
/// 5. `events`: a room's events (a destroyed room's last ones first);
/// 6. `timeout`: nothing more; come back at this time (`.never`: when something arrives).
public enum WorkerOutput {
    case media(DatagramBatch)
    case handoff(Handoff)
    case peer(worker: Int, PeerMessage)
    case control([UInt8], to: TransportAddress)
    case events(room: String, [RoomEvent])
    case timeout(MonoTime)
}

/// What the core has still to hand out through `poll`, and how far a round of polling has got.
struct WorkerOutbox {
    var control: [(bytes: [UInt8], to: TransportAddress)] = []
    var peerMessages: [(worker: Int, message: PeerMessage)] = []
    var retiredEvents: [(room: String, events: [RoomEvent])] = []
    /// The round's progress: which kind comes next, and the position within it.
    var stage = 0
    var position = 0
}

extension WorkerCore {
    /// The next output, in the order `WorkerOutput` gives; `.timeout` ends a round (each kind is handed out
    /// at most once per round, so a hand-off the shell could not pass on waits for the next round rather than
    /// coming back at once). The shell calls it until `.timeout` after every input.
    public func poll() -> WorkerOutput {
        while true {
            switch outbox.stage {
            case 0:
                outbox.stage = 1
                outbox.position = 0
                if !liveStreams.isEmpty { liveStreams.flush(into: batch) }
                if batch.count > 0 { return .media(batch) }
            case 1:
                while outbox.position < handoffs.count {
                    let h = handoffs[outbox.position]
                    outbox.position += 1
                    if h.batch.count > 0 { return .handoff(h) }
                }
                outbox.stage = 2
                outbox.position = 0
            case 2:
                if outbox.position < outbox.peerMessages.count {
                    outbox.position += 1
                    let m = outbox.peerMessages[outbox.position - 1]
                    return .peer(worker: m.worker, m.message)
                }
                outbox.peerMessages.removeAll(keepingCapacity: true)
                outbox.stage = 3
                outbox.position = 0
            case 3:
                if outbox.position < outbox.control.count {
                    outbox.position += 1
                    let c = outbox.control[outbox.position - 1]
                    return .control(c.bytes, to: c.to)
                }
                outbox.control.removeAll(keepingCapacity: true)
                outbox.stage = 4
            case 4:
                if !outbox.retiredEvents.isEmpty {
                    let e = outbox.retiredEvents.removeFirst()
                    return .events(room: e.room, e.events)
                }
                while let room = schedule.nextEventful() {
                    if room.hasPendingEvents { return .events(room: room.name, room.drainEvents()) }
                }
                #if DEBUG
                assert(!rooms.values.contains { $0.hasPendingEvents }, "a room has events but was reached without touching the schedule")
                #endif
                outbox.stage = 5
            default:
                outbox.stage = 0
                return .timeout(nextDeadline)
            }
        }
    }

    /// Whether a handoff's batch is over half full: the shell hands it over before the rooms write more.
    public var handoffsNeedFlush: Bool {
        for h in handoffs where h.batch.count > h.batch.capacity / 2 { return true }
        return false
    }

    func post(_ message: PeerMessage, to worker: Int) { outbox.peerMessages.append((worker, message)) }

    /// Whether a room has events `poll` has not handed out yet.
    public var hasPendingEvents: Bool { !outbox.retiredEvents.isEmpty || schedule.mayHaveEvents.contains { $0.hasPendingEvents } }
}
