import Foundation
import Hummingbird
import HummingbirdCore
import NodeIO
import SFU
@testable import SFUNode
import Testing

@Suite(.timeLimit(.minutes(1))) struct EventHubTests {
    static func event(_ room: String, _ e: RoomEvent, at time: Int64 = 1_700_000_000_000) -> StampedEvent {
        StampedEvent(room: room, event: e, unixMilliseconds: time)
    }

    static func object(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// Takes what is buffered now, without waiting for more.
    static func buffered(_ s: EventHub.Subscription, max: Int) async -> [EventHub.Message] {
        var out: [EventHub.Message] = []
        var it = s.messages.makeAsyncIterator()
        while out.count < max, let m = await it.next() { out.append(m) }
        return out
    }

    @Test func everyEventGetsTheNextSequenceNumberTypeRoomAndTime() async throws {
        let hub = EventHub()
        let sub = hub.subscribe(room: nil)
        hub.publish([
            Self.event("r1", .participantState(participant: "a", state: .joined, reason: nil), at: 5),
            Self.event("r2", .dominantSpeaker(participant: nil), at: 6),
        ], now: 7)
        let got = await Self.buffered(sub, max: 2).map { Self.object($0.text) }
        #expect(got[0]["type"] as? String == "participant_state" && got[0]["room"] as? String == "r1")
        #expect(got[0]["seq"] as? Int == 1 && got[0]["time"] as? Int == 5)
        #expect(got[0]["participant"] as? String == "a" && got[0]["state"] as? String == "joined" && got[0]["reason"] is NSNull)
        #expect(got[1]["type"] as? String == "dominant_speaker" && got[1]["seq"] as? Int == 2 && got[1]["participant"] is NSNull)
    }

    /// A consumer that (re)connects after the node's stop gets what it resumes and then the end of the stream:
    /// one kept open would hold the HTTP server's graceful shutdown forever (issue 40: `sfu demo` never exited
    /// when the signaling server's relay reconnected between the node's stop and the API server's).
    @Test func aConsumerComingAfterTheStopGetsWhatItResumesThenTheEnd() async throws {
        let hub = EventHub()
        hub.publish([Self.event("r1", .participantState(participant: "a", state: .joined, reason: nil)),
                     Self.event("r1", .roomDestroyed)], now: 1)
        hub.finish()
        let late = hub.subscribe(room: nil, since: 1, stream: hub.stream)
        var got: [UInt64?] = []
        for await m in late.messages { got.append(m.seq) }  // ends: the test would time out otherwise
        #expect(got == [2])
        #expect(hub.consumerCount == 0)
        for await _ in hub.subscribe(room: "r1").messages { Issue.record("a new consumer after the stop got an event") }
    }

    @Test func activeTalkersCarryTheOrderedListAndTheSlotMap() async throws {
        let hub = EventHub()
        let sub = hub.subscribe(room: "r")
        hub.publish([Self.event("r", .activeTalkers(
            subscriber: "bob",
            talkers: [.init(participant: "alice", pinned: false, speaking: true, video: true),
                      .init(participant: "carol", pinned: true, speaking: false, video: false)],
            slots: [.init(mid: "0", kind: .audio, participant: "alice"), .init(mid: "1", kind: .video, participant: nil)]))], now: 0)
        let o = Self.object(await Self.buffered(sub, max: 1)[0].text)
        #expect(o["type"] as? String == "active_talkers" && o["participant"] as? String == "bob")
        let talkers = o["talkers"] as? [[String: Any]] ?? []
        #expect(talkers.map { $0["participant"] as? String } == ["alice", "carol"])
        #expect(talkers[1]["pinned"] as? Bool == true && talkers[1]["speaking"] as? Bool == false)
        let slots = o["slots"] as? [[String: Any]] ?? []
        #expect(slots[0]["mid"] as? String == "0" && slots[0]["kind"] as? String == "audio" && slots[0]["participant"] as? String == "alice")
        #expect(slots[1]["participant"] is NSNull)
    }

    @Test func aRoomFilterPassesOnlyThatRoomAndNodeNotices() async throws {
        let hub = EventHub()
        let sub = hub.subscribe(room: "b")
        hub.publish([Self.event("a", .roomDestroyed), Self.event("b", .lock(locked: true, by: "m"))], lostUpstream: 3, now: 9)
        let got = await Self.buffered(sub, max: 2).map { Self.object($0.text) }
        #expect(got[0]["type"] as? String == "events_lost" && got[0]["count"] as? Int == 3 && got[0]["reason"] as? String == "worker_queue_full")
        #expect(got[0]["seq"] as? Int == 1)
        #expect(got[1]["type"] as? String == "lock" && got[1]["room"] as? String == "b" && got[1]["seq"] as? Int == 3)
    }

    @Test func aSlowConsumerLosesTheNewestAndIsToldWhichWhileOthersLoseNothing() async throws {
        let hub = EventHub(bufferPerConsumer: 3)
        let slow = hub.subscribe(room: nil)
        let events = (0..<8).map { Self.event("r", .pins(["p\($0)"])) }
        let fast = hub.subscribe(room: nil)
        var fastGot: [EventHub.Message] = []
        var it = fast.messages.makeAsyncIterator()
        for e in events {
            hub.publish([e], now: 0)
            fastGot.append(await it.next()!)
        }
        #expect(fastGot.map(\.seq) == Array(1...8).map { UInt64($0) })
        #expect(fast.takeLoss() == nil)

        let kept = await Self.buffered(slow, max: 3)
        #expect(kept.map(\.seq) == [1, 2, 3])
        let loss = try #require(slow.takeLoss())
        #expect(loss == EventHub.Loss(count: 5, firstSeq: 4, lastSeq: 8))
        let notice = Self.object(slow.notice(loss, now: 1))
        #expect(notice["type"] as? String == "events_lost" && notice["first_seq"] as? Int == 4 && notice["last_seq"] as? Int == 8)
        #expect(slow.takeLoss() == nil, "a loss is reported once")
    }

    @Test func aConsumerResumingWithSinceGetsWhatItMissedOrIsToldItIsGone() async throws {
        let hub = EventHub(history: 4)
        hub.publish((0..<6).map { Self.event($0 % 2 == 0 ? "even" : "odd", .pins(["p\($0)"])) }, now: 0)  // seq 1...6, history 3...6
        let resumed = hub.subscribe(room: nil, since: 4)
        #expect(await Self.buffered(resumed, max: 2).map(\.seq) == [5, 6])
        #expect(resumed.takeLoss() == nil)

        let filtered = hub.subscribe(room: "even", since: 2)
        #expect(await Self.buffered(filtered, max: 2).map(\.seq) == [3, 5])

        let tooOld = hub.subscribe(room: nil, since: 0)
        #expect(await Self.buffered(tooOld, max: 4).map(\.seq) == [3, 4, 5, 6])
        #expect(tooOld.takeLoss() == EventHub.Loss(count: 2, firstSeq: 1, lastSeq: 2))

        let upToDate = hub.subscribe(room: nil, since: 6)
        hub.publish([Self.event("x", .roomDestroyed)], now: 0)
        #expect(await Self.buffered(upToDate, max: 1).map(\.seq) == [7])
    }

    /// Issue 23: `since + 1` trapped on UInt64.max, and one `GET /v1/events?since=18446744073709551615` took the
    /// node down. A resume point the node never numbered is a reset, told to the consumer first.
    @Test func aSinceOfUInt64MaxIsAResetNotACrash() async throws {
        let hub = EventHub(history: 4)
        hub.publish([Self.event("r", .roomDestroyed)], now: 0)
        let sub = hub.subscribe(room: nil, since: .max)
        hub.publish([Self.event("r", .lock(locked: true, by: "m"))], now: 0)
        let got = await Self.buffered(sub, max: 2)
        let reset = Self.object(got[0].text)
        #expect(reset["type"] as? String == "events_reset" && reset["reason"] as? String == "since_ahead")
        #expect(got[0].text.contains(#""since":18446744073709551615"#) && reset["next_seq"] as? Int == 2)
        #expect(got[0].seq == nil && reset["seq"] == nil && reset["room"] is NSNull, "a notice, not an event")
        #expect(reset["stream"] as? String == hub.stream && sub.reset == .sinceAhead)
        #expect(got[1].seq == 2, "then the next event, nothing old")
    }

    /// The resume points around the newest event, and a consumer of another process's numbering.
    @Test func aResumePointThisProcessNeverNumberedIsResetAndTheNewestIsNot() async throws {
        let hub = EventHub(history: 8, stream: 0xAB)
        #expect(hub.stream == "00000000000000ab")
        hub.publish((0..<3).map { Self.event("r", .pins(["p\($0)"])) }, now: 0)  // seq 1...3, nextSeq 4
        func first(_ s: EventHub.Subscription) async -> [String: Any] {
            hub.publish([Self.event("r", .roomDestroyed)], now: 0)
            return Self.object(await Self.buffered(s, max: 1)[0].text)
        }

        // One past the newest: this process never numbered it (a node restarted, its counter at 4 again).
        let ahead = hub.subscribe(room: nil, since: 4, now: 42)
        let got = await Self.buffered(ahead, max: 1)
        let o = Self.object(got[0].text)
        #expect(ahead.reset == .sinceAhead && o["type"] as? String == "events_reset" && o["reason"] as? String == "since_ahead")
        #expect(o["since"] as? Int == 4 && o["next_seq"] as? Int == 4 && o["stream"] as? String == "00000000000000ab" && o["time"] as? Int == 42)
        #expect(o["seq"] == nil && got[0].seq == nil)

        // The newest (nextSeq - 1): up to date, no reset, nothing replayed; the next event is the first.
        let upToDate = hub.subscribe(room: nil, since: 3)
        #expect(upToDate.reset == nil)
        #expect((await first(upToDate))["seq"] as? Int == 4, "nothing replayed: the first message is the new event")

        // Another process's stream, with a since this one has passed: reset, only new events.
        let other = hub.subscribe(room: nil, since: 2, stream: "00000000000000ac")
        #expect(other.reset == .streamChanged)
        let reset = await Self.buffered(other, max: 1)
        let r = Self.object(reset[0].text)
        #expect(r["type"] as? String == "events_reset" && r["reason"] as? String == "stream_changed" && r["since"] as? Int == 2)
        #expect(r["next_seq"] as? Int == 5 && r["stream"] as? String == "00000000000000ab")
        #expect((await first(other))["seq"] as? Int == 5)

        // The same stream and a since in the history: replayed as always, and every event names the stream.
        let same = hub.subscribe(room: nil, since: 2, stream: "00000000000000ab")
        #expect(same.reset == nil)
        let replay = await Self.buffered(same, max: 3)
        #expect(replay.map(\.seq) == [3, 4, 5])
        #expect(replay.allSatisfy { Self.object($0.text)["stream"] as? String == "00000000000000ab" })

        // A stream without since resumes nothing, so it resets nothing.
        #expect(hub.subscribe(room: nil, stream: "00000000000000ac").reset == nil)
        // since = 0 (nothing seen yet) is never ahead, even before the first event.
        #expect(EventHub().subscribe(room: nil, since: 0).reset == nil)
        #expect(EventHub().subscribe(room: nil, since: 1).reset == .sinceAhead)
    }

    /// `since` far below the history's oldest, near UInt64's ends: the loss notice, no arithmetic on `since`
    /// that can trap.
    @Test func extremeResumePointsNeitherTrapNorReplayWrongly() async throws {
        let hub = EventHub(history: 2)
        hub.publish((0..<5).map { Self.event("r", .pins(["p\($0)"])) }, now: 0)  // seq 1...5, history 4...5
        for since: UInt64 in [.max, .max - 1, UInt64(Int64.max), UInt64(Int64.max) + 1, 6, 1 << 63] {
            let s = hub.subscribe(room: nil, since: since)
            #expect(s.reset == .sinceAhead, "since \(since)")
        }
        let old = hub.subscribe(room: nil, since: 0)
        #expect(await Self.buffered(old, max: 2).map(\.seq) == [4, 5])
        #expect(old.takeLoss() == EventHub.Loss(count: 3, firstSeq: 1, lastSeq: 3))
        let justBefore = hub.subscribe(room: nil, since: 3)
        #expect(await Self.buffered(justBefore, max: 2).map(\.seq) == [4, 5])
        #expect(justBefore.takeLoss() == nil, "3 is the consumer's newest: nothing lost")
    }

    /// `since` is any UInt64 (the hub only compares it); `stream` is exactly 16 hex digits, kept lowercased.
    @Test func theEventsQueryTakesAnyUInt64SinceAndOnlyA16HexDigitStream() throws {
        let q = try ControlAPI.EventsQuery(URI("/v1/events?room=r&since=18446744073709551615&stream=0123456789ABCDEF"))
        #expect(q.room == "r" && q.since == .max && q.stream == "0123456789abcdef")
        #expect(try ControlAPI.EventsQuery(URI("/v1/events")).stream == nil)
        for bad in ["xyz", "0123456789abcde", "0123456789abcdef0", "+123456789abcdef", "0x23456789abcdef", " 123456789abcdef",
                    "0123456789abcdeg", "", "-123456789abcdef"] {
            #expect(throws: APIError.self, "stream '\(bad)'") {
                try ControlAPI.EventsQuery(URI("/v1/events?since=1&stream=\(bad.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"))
            }
        }
        for bad in ["18446744073709551616", "-1", "1e3", "0x10", "", "nan", String(repeating: "9", count: 400)] {
            #expect(throws: APIError.self, "since '\(bad)'") { try ControlAPI.EventsQuery(URI("/v1/events?since=\(bad)")) }
        }
    }

    @Test func finishingEndsEveryStreamAndForgetsItsConsumers() async throws {
        let hub = EventHub()
        let sub = hub.subscribe(room: nil)
        #expect(hub.consumerCount == 1)
        hub.finish()
        var it = sub.messages.makeAsyncIterator()
        #expect(await it.next() == nil)
        #expect(hub.consumerCount == 0)
    }

    @Test func everyRoomEventHasAWireForm() {
        let all: [RoomEvent] = [
            .activeTalkers(subscriber: "s", talkers: [], slots: []), .dominantSpeaker(participant: "a"),
            .bandwidthAlert(participant: "s", bandwidthKbps: 400, streamBandwidthKbps: 300, numberOfVideos: 1),
            .participantState(participant: "a", state: .failed, reason: "ICE consent expired"),
            .roomHardMute(audio: true, by: "m"), .participantHardMute(participant: "a", audio: true, video: false, by: "m"),
            .pins(["a"]), .floor(action: .grant, by: "m", target: "a", raisedHands: [], approvedHands: ["a"]),
            .lock(locked: false, by: "m"), .role(participant: "a", role: .moderator, by: "m"),
            .levelMismatch(participant: "a", meanDifferenceDb: 14.26), .roomDestroyed,
        ]
        let types = all.map { EventPayload.room($0).type }
        #expect(types == ["active_talkers", "dominant_speaker", "bandwidth_alert", "participant_state", "hard_mute", "hard_mute",
                          "pins", "floor", "lock", "role", "level_mismatch", "room_destroyed"])
        func object(_ e: RoomEvent) -> [String: Any] {
            let text = EventJSON.encode(.room(e), room: "r", seq: 7, stream: "00000000000000ab", time: 1_700_000_000_000)
            return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        }
        let alert = object(all[2])
        #expect(alert["bandwidth"] as? Int == 400 && alert["stream_bandwidth"] as? Int == 300 && alert["number_of_videos"] as? Int == 1)
        #expect(alert["type"] as? String == "bandwidth_alert" && alert["room"] as? String == "r" && alert["seq"] as? Int == 7)
        #expect(object(all[4])["scope"] as? String == "room")
        #expect(object(all[10])["mean_difference_db"] as? Double == 14.3)
        #expect(object(.dominantSpeaker(participant: nil))["participant"] is NSNull, "nobody dominant is null, not absent")
        #expect(object(.participantState(participant: "a", state: .joined, reason: nil))["reason"] is NSNull)
        #expect(object(.participantState(participant: "a", state: .joined, reason: nil))["transport"] == nil, "a path only on connected")
        let connected = object(.participantState(participant: "a", state: .connected, reason: nil,
                                                 path: TransportPath(carrier: .tcp, family: .ipv6, relayed: true)))
        let path = connected["transport"] as? [String: Any]
        #expect(path?["protocol"] as? String == "tcp" && path?["family"] as? String == "ipv6" && path?["relayed"] as? Bool == true)
    }
}
