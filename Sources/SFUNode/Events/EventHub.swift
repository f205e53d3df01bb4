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

    /// One consumer's view: its messages in order and, between them, what it lost.
    public struct Subscription: Sendable {
        public let messages: AsyncStream<Message>
        let id: Int
        let hub: EventHub

        /// The events lost since the last call, if any; call before delivering each message.
        public func takeLoss() -> Loss? { hub.takeLoss(id) }

        /// The text of the `events_lost` notice for `loss`.
        public func notice(_ loss: Loss, now: Int64) -> String {
            EventJSON.encode(.eventsLost(count: loss.count, firstSeq: loss.firstSeq, lastSeq: loss.lastSeq, reason: "consumer_too_slow"),
                             room: nil, seq: nil, time: now)
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
    }

    public let bufferPerConsumer: Int
    public let historyLength: Int
    private let state = Mutex(State())

    public init(bufferPerConsumer: Int = 1024, history: Int = 1024) {
        self.bufferPerConsumer = max(1, bufferPerConsumer)
        historyLength = max(0, history)
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

    private func deliver(_ s: inout State, room: String?, time: Int64, _ payload: EventPayload) {
        let seq = s.nextSeq
        s.nextSeq += 1
        let message = Message(seq: seq, room: room, text: EventJSON.encode(payload, room: room, seq: seq, time: time))
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
    /// still holds), else with the next event.
    public func subscribe(room: String?, since: UInt64? = nil) -> Subscription {
        let (stream, continuation) = AsyncStream.makeStream(of: Message.self, bufferingPolicy: .bufferingOldest(bufferPerConsumer))
        let id = state.withLock { s -> Int in
            let id = s.nextID
            s.nextID += 1
            var consumer = Consumer(room: room, continuation: continuation)
            if let since, since + 1 < s.nextSeq {
                let ordered = Array(s.history[s.historyStart...] + s.history[..<s.historyStart])
                let oldest = ordered.first?.seq ?? s.nextSeq
                if since + 1 < oldest {
                    consumer.loss = Loss(count: Int(oldest - since - 1), firstSeq: since + 1, lastSeq: oldest - 1)
                }
                for m in ordered where m.seq! > since && Self.matches(m, room) { continuation.yield(m) }
            }
            s.consumers[id] = consumer
            return id
        }
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return Subscription(messages: stream, id: id, hub: self)
    }

    fileprivate func takeLoss(_ id: Int) -> Loss? {
        state.withLock { s in
            defer { s.consumers[id]?.loss = nil }
            return s.consumers[id]?.loss
        }
    }

    private func unsubscribe(_ id: Int) { _ = state.withLock { $0.consumers.removeValue(forKey: id) } }

    /// Ends every consumer's stream (node shutdown).
    public func finish() {
        let all = state.withLock { s in
            defer { s.consumers.removeAll() }
            return Array(s.consumers.values)
        }
        for c in all { c.continuation.finish() }
    }
}
