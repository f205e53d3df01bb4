import Foundation
import SFU
import SFUNode
import Testing
import WebRTCEdge

@Suite(.timeLimit(.minutes(1))) struct NodeShutdownTests {
    @Test func stoppingTheNodeTellsEveryConsumerWhoLeftAndWhichRoomsWentThenEndsTheStream() async throws {
        var c = NodeConfiguration()
        c.workers = 2
        c.mediaListen = TransportAddress("127.0.0.1:0")!
        let node = try Node(configuration: c)
        node.start()
        for room in ["a", "b"] {
            try await node.createRoom(room, configuration: RoomConfiguration())
            try await node.withRoom(room) { r, _, now in try r.admit("p-\(room)", now: now) }
        }
        let subscription = node.events.subscribe(room: nil, since: 0)  // from the first event, whenever the pump ran
        node.stop()
        var types: [String] = []
        for await m in subscription.messages {
            let o = try JSONSerialization.jsonObject(with: Data(m.text.utf8)) as? [String: Any] ?? [:]
            types.append("\(o["room"] as? String ?? "-"):\(o["type"] as? String ?? "?"):\(o["state"] as? String ?? "")")
        }
        #expect(types.filter { $0.hasSuffix("participant_state:joined") }.count == 2, "\(types)")
        #expect(Set(types.filter { $0.contains("left") || $0.contains("room_destroyed") }) ==
                ["a:participant_state:left", "a:room_destroyed:", "b:participant_state:left", "b:room_destroyed:"])
        #expect(types.last?.contains("room_destroyed") == true, "the stream ended after the last event")
    }
}
