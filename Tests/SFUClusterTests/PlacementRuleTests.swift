import Testing
@testable import SFUCluster

/// The placement rule as a table: the room as the registry holds it and the nodes' standings in, the node
/// and the reason out. A scripted random source makes the power-of-two-choices draws repeatable.
@Suite struct PlacementRuleTests {
    typealias Room = PlacementRule.RoomStanding
    static let limits = PlacementRule.Limits(participantsPerRoomPerNode: 10)

    static func node(_ id: String, load: Int = 0, capacity: Int = 100, alive: Bool = true, draining: Bool = false, joins: Int = 0) -> NodeStanding {
        NodeStanding(id: id, state: draining ? .draining : .serving, alive: alive, capacity: capacity, participants: load, pendingPlacements: joins)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var room: Room?
        var nodes: [NodeStanding]
        var draws: [Int] = [0, 0]
        var expected: String  // "node reason home epoch", or "refused"
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a new room goes to the less loaded of two drawn", room: nil,
             nodes: [node("a", load: 50), node("b", load: 10), node("c", load: 5)], draws: [0, 0],
             expected: "b new_room b 1"),  // draws a and b (c not drawn): b
        Case(name: "joins since the heartbeat count as load", room: nil,
             nodes: [node("a", load: 10, joins: 30), node("b", load: 20)], expected: "b new_room b 1"),
        Case(name: "a live home with room keeps the room", room: Room(home: "a", epoch: 4, hosts: ["a": 3]),
             nodes: [node("a", load: 90), node("b")], expected: "a home a 4"),
        Case(name: "a draining home keeps its room", room: Room(home: "a", epoch: 2, hosts: ["a": 3]),
             nodes: [node("a", draining: true), node("b")], expected: "a home a 2"),
        Case(name: "a full home spills to a node already in the room", room: Room(home: "a", epoch: 1, hosts: ["a": 10, "c": 2]),
             nodes: [node("a"), node("b"), node("c", load: 60)], expected: "c spill_to_host a 1"),
        Case(name: "a home at capacity spills to a new node when no host has room", room: Room(home: "a", epoch: 1, hosts: ["a": 3]),
             nodes: [node("a", load: 100), node("b", load: 1, draining: true), node("c")], expected: "c spill_to_new_node a 1"),
        Case(name: "a dead home is taken over by a live node of the room", room: Room(home: "a", epoch: 7, hosts: ["a": 4, "b": 2]),
             nodes: [node("a", alive: false), node("b", load: 80), node("c")], expected: "b home_taken_over b 8"),
        Case(name: "a dead home with no other host is taken over by the least loaded", room: Room(home: "a", epoch: 7, hosts: ["a": 4]),
             nodes: [node("a", alive: false), node("b", load: 80), node("c", load: 20)], expected: "c home_taken_over c 8"),
        Case(name: "no live serving node: refused", room: nil,
             nodes: [node("a", alive: false), node("b", draining: true), node("c", load: 100)], expected: "refused"),
        Case(name: "a full room on full nodes: refused", room: Room(home: "a", epoch: 1, hosts: ["a": 10]),
             nodes: [node("a"), node("b", load: 100)], expected: "refused"),
    ]

    @Test(arguments: cases) func aParticipantIsPlacedByTheRule(_ c: Case) {
        var draws = c.draws[...]
        let result = PlacementRule.place(room: c.room, nodes: c.nodes, limits: Self.limits) { n in
            min(draws.popFirst() ?? 0, n - 1)
        }
        switch result {
        case .success(let d): #expect("\(d.node) \(d.reason.rawValue) \(d.home) \(d.epoch)" == c.expected)
        case .failure: #expect(c.expected == "refused")
        }
    }

    @Test func twoChoicesNeverPicksTheMoreLoadedOfItsPairAndUsesEveryNode() {
        let nodes = (0..<5).map { Self.node("n\($0)", load: $0 * 10) }
        var picked: Set<String> = []
        for i in 0..<5 { for j in 0..<4 {
            var draws = [i, j][...]
            guard case .success(let d) = PlacementRule.place(room: nil, nodes: nodes, limits: Self.limits, random: { _ in draws.popFirst()! }) else {
                Issue.record("refused"); return
            }
            picked.insert(d.node)
            #expect(d.node != "n4", "the most loaded node loses every pair it is drawn in")
        } }
        #expect(picked == ["n0", "n1", "n2", "n3"])
    }
}
