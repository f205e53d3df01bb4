import Foundation
import NodeIO
import SFU
import Synchronization

/// Fans the node's room events out to every consumer of `GET /v1/events`.
///
/// Each event gets a node-wide `seq` (1, 2, 3, ... with no gaps) and is encoded once. Every consumer has its
/// own bounded buffer: a consumer that reads too slowly loses the newest events and is told which (an
/// `events_lost` notice with the first and last lost `seq`), and nobody else notices - the media threads never
/// wait for a consumer. The last `history` events are kept so that a consumer that reconnects with
/// `since=<seq>` gets what it missed, or an `events_lost` notice when those events are gone.
///
/// The numbering belongs to this process: a restarted node counts from 1 again. Every message carries the
/// hub's `stream` (random, fixed for the life of the process), so a consumer resumes with `since` and
/// `stream` together; a resume point this process cannot honour (a `since` it never numbered, or another
/// process's `stream`) gets an `events_reset` notice first and then only new events. `since` comes from
/// the network: it is compared with the counter first and added to only once it is known to be below it,
/// so no value of it can trap.
public final class EventHub: Sendable {
    /// One encoded event (or notice) and what the filter needs to know about it.
    public struct Message: Sendable {
        public let seq: UInt64?
        public let room: String?
        public let text: String
    }

    /// What a consumer lost: how many events and the range of their sequence numbers.
    public struct Loss: Sendable, Equatable {
        public var count: Int
        public var firstSeq: UInt64
        public var lastSeq: UInt64
    }

    /// Why a consumer's resume point could not be honoured (the `reason` of its `events_reset` notice).
    public enum Reset: String, Sendable, Equatable {
        /// `since` is not older than the next event's `seq`: events this process never numbered (the node
        /// restarted and counts again from 1, or the consumer made the number up).
        case sinceAhead = "since_ahead"
        /// The consumer's `stream` is not this process's: the node restarted, and its new numbering may
        /// already have passed `since`, which then names another event.
        case streamChanged = "stream_changed"
    }

    /// One consumer's view: its messages in order and, between them, what it lost.
    public struct Subscription: Sendable {
        public let messages: AsyncStream<Message>
        /// Set when the resume point was not honoured; the stream then starts with the `events_reset` notice.
        public let reset: Reset?
        let id: Int
        let hub: EventHub

        /// The events lost since the last call, if any; call before delivering each message.
        public func takeLoss() -> Loss? { hub.takeLoss(id) }

        /// The text of the `events_lost` notice for `loss`.
        public func notice(_ loss: Loss, now: Int64) -> String {
            EventJSON.encode(.eventsLost(count: loss.count, firstSeq: loss.firstSeq, lastSeq: loss.lastSeq, reason: "consumer_too_slow"),
                             room: nil, seq: nil, stream: hub.stream, time: now)
        }
    }

    private struct Consumer {
        let room: String?
        let continuation: AsyncStream<Message>.Continuation
        var loss: Loss?
    }

    private struct State {
        var consumers: [Int: Consumer] = [:]
        var nextID = 0
        var nextSeq: UInt64 = 1
        var history: [Message] = []
        var historyStart = 0
        /// The node stopped (`finish`): a consumer that comes now gets what it resumes, then the stream's end.
        var finished = false
    }

    public let bufferPerConsumer: Int
    public let historyLength: Int
    /// This process's event stream: 16 lowercase hex digits, random, in every message (`stream`).
    public let stream: String
    private let state = Mutex(State())

    public init(bufferPerConsumer: Int = 1024, history: Int = 1024, stream: UInt64 = .random(in: .min ... .max)) {
        self.bufferPerConsumer = max(1, bufferPerConsumer)
        historyLength = max(0, history)
        self.stream = Self.streamText(stream)
    }

    /// A stream id as the wire writes it: 16 lowercase hex digits, zero-padded.
    static func streamText(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    public var consumerCount: Int { state.withLock { $0.consumers.count } }

    /// The sequence number the next event will get.
    public var nextSeq: UInt64 { state.withLock { $0.nextSeq } }

    /// Numbers, encodes and delivers events; `lostUpstream` events were lost before they reached the hub (a
    /// worker's queue was full) and become one `events_lost` event in the sequence, so every consumer sees it.
    public func publish(_ events: [StampedEvent], lostUpstream: Int = 0, now: Int64) {
        guard !events.isEmpty || lostUpstream > 0 else { return }
        state.withLock { s in
            if lostUpstream > 0 {
                deliver(&s, room: nil, time: now, .eventsLost(count: lostUpstream, firstSeq: nil, lastSeq: nil, reason: "worker_queue_full"))
            }
            for e in events {
                deliver(&s, room: e.room, time: e.unixMilliseconds, .room(e.event))
            }
        }
    }

    /// Numbers and delivers one of the node's own events (not a room's): `room` when it concerns one.
    func publish(_ payload: EventPayload, room: String?, now: Int64) {
        state.withLock { s in deliver(&s, room: room, time: now, payload) }
    }

    private func deliver(_ s: inout State, room: String?, time: Int64, _ payload: EventPayload) {
        let seq = s.nextSeq
        s.nextSeq += 1  // counts events: 2^64 of them is not a reachable number
        let message = Message(seq: seq, room: room, text: EventJSON.encode(payload, room: room, seq: seq, stream: stream, time: time))
        remember(&s, message)
        for id in s.consumers.keys {
            guard let c = s.consumers[id], Self.matches(message, c.room) else { continue }
            if case .dropped = c.continuation.yield(message) {
                var loss = c.loss ?? Loss(count: 0, firstSeq: seq, lastSeq: seq)
                loss.count += 1
                loss.lastSeq = seq
                s.consumers[id]!.loss = loss
            }
        }
    }

    private func remember(_ s: inout State, _ message: Message) {
        guard historyLength > 0 else { return }
        if s.history.count < historyLength {
            s.history.append(message)
        } else {
            s.history[s.historyStart] = message
            s.historyStart = (s.historyStart + 1) % historyLength
        }
    }

    private static func matches(_ m: Message, _ filter: String?) -> Bool { filter == nil || m.room == nil || m.room == filter }

    /// A new consumer: events of `room` (or all rooms), starting after `since` when given (what the history
    /// still holds, with an `events_lost` notice for what it no longer does), else with the next event.
    ///
    /// A `since` this process never numbered (`since >= nextSeq`) or a `stream` that is not this hub's is a
    /// reset: the consumer first gets an `events_reset` notice (`reason`, `since`, `next_seq`, `stream`; no
    /// `seq`) and then only new events, nothing from the history, whose numbers mean something else to it.
    /// `since = nextSeq - 1` (the consumer has the newest event) is no reset: nothing is replayed. `stream`
    /// (as the hub writes it: lowercase) matters only with `since`.
    public func subscribe(room: String?, since: UInt64? = nil, stream given: String? = nil,
                          now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) -> Subscription {
        let (messages, continuation) = AsyncStream.makeStream(of: Message.self, bufferingPolicy: .bufferingOldest(bufferPerConsumer))
        let (id, reset) = state.withLock { s -> (Int, Reset?) in
            let id = s.nextID
            s.nextID += 1
            var consumer = Consumer(room: room, continuation: continuation)
            var reset: Reset?
            if let since {
                // Only comparisons with `since` (anything a query can hold): `since + 1` trapped at UInt64.max.
                if let given, given != stream {
                    reset = .streamChanged
                } else if since >= s.nextSeq {
                    reset = .sinceAhead
                }
                if let reset {
                    let notice = EventJSON.encode(.eventsReset(reason: reset.rawValue, since: since, nextSeq: s.nextSeq),
                                                  room: nil, seq: nil, stream: stream, time: now)
                    continuation.yield(Message(seq: nil, room: nil, text: notice))
                } else if since < s.nextSeq - 1 {  // nextSeq starts at 1: no underflow
                    let ordered = Array(s.history[s.historyStart...] + s.history[..<s.historyStart])
                    let oldest = ordered.first?.seq ?? s.nextSeq
                    if since < oldest - 1 {  // oldest >= 1; events since+1 ... oldest-1 are gone (since+1 < oldest: no overflow)
                        consumer.loss = Loss(count: Int(clamping: oldest - 1 - since), firstSeq: since + 1, lastSeq: oldest - 1)
                    }
                    for m in ordered where m.seq! > since && Self.matches(m, room) { continuation.yield(m) }
                }
            }
            // After the node's stop a consumer is never kept: an event stream left open would hold the HTTP
            // server's graceful shutdown forever (a signaling server reconnecting at once hung `sfu demo`'s stop).
            if s.finished { continuation.finish() } else { s.consumers[id] = consumer }
            return (id, reset)
        }
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return Subscription(messages: messages, reset: reset, id: id, hub: self)
    }

    fileprivate func takeLoss(_ id: Int) -> Loss? {
        state.withLock { s in
            defer { s.consumers[id]?.loss = nil }
            return s.consumers[id]?.loss
        }
    }

    private func unsubscribe(_ id: Int) { _ = state.withLock { $0.consumers.removeValue(forKey: id) } }

    /// Ends every consumer's stream (node shutdown), and each one's that comes later as soon as it has what it
    /// resumed.
    public func finish() {
        let all = state.withLock { s in
            s.finished = true
            defer { s.consumers.removeAll() }
            return Array(s.consumers.values)
        }
        for c in all { c.continuation.finish() }
    }
}
