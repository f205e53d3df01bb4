import Foundation
@testable import NodeIO
import SFU
import SFUMedia
import SFUSimulation
import Testing
import WebRTCEdge

/// The worker core's one ordered output (`WorkerCore.poll`) and its transports' lifecycle, as tables.
@Suite struct WorkerOutputTests {
    static func core() -> WorkerCore {
        let edge = WorkerEdge(certificate: try! DTLSCertificate(), candidates: [TransportAddress("10.0.0.1:10000")!])
        return WorkerCore(edge: edge, index: 0)
    }

    @Test func pollHandsOutMediaThenHandOffsThenPeerMessagesThenControlThenEventsThenATimeout() throws {
        let core = Self.core()
        let room = try Room(name: "r", now: .zero)
        core.addRoom(room)
        try room.admit("A", now: .zero)  // an event
        core.post(.checked(ConnectionID(5)), to: 1)
        core.outbox.control.append(([1, 2, 3], TransportAddress("10.0.0.2:5000")!))
        let h = core.handoff(.send, to: 1)
        h.batch.commit(length: 10, to: ConnectionID(7))
        _ = core.batch.nextBuffer()
        core.batch.commit(length: 10, to: ConnectionID(9))
        var kinds: [String] = []
        while true {
            switch core.poll() {
            case .media(let b): kinds.append("media"); b.removeAll()
            case .handoff(let handoff): kinds.append("handoff"); handoff.batch.removeAll()
            case .peer: kinds.append("peer")
            case .control: kinds.append("control")
            case .events(let name, let events): kinds.append("events \(name) \(events.count)")
            case .timeout(let t):
                kinds.append("timeout")
                #expect(t <= .zero, "the room asked to rebuild its lists at once")
            }
            if kinds.last == "timeout" { break }
        }
        // A hosted transport's SRTP keys (peer) reach its room's worker before the DTLS flight (control) that
        // lets its client send media.
        #expect(kinds == ["media", "handoff", "peer", "control", "events r 1", "timeout"])
        guard case .timeout = core.poll() else { Issue.record("nothing is left after a round"); return }
    }

    @Test func aHandOffTheShellCouldNotPassOnWaitsForTheNextRound() {
        let core = Self.core()
        let h = core.handoff(.send, to: 1)
        h.batch.commit(length: 10, to: ConnectionID(7))
        guard case .handoff = core.poll() else { Issue.record("the hand-off first"); return }
        guard case .timeout = core.poll() else { Issue.record("then the round ends, though it is still full"); return }
        guard case .handoff = core.poll() else { Issue.record("and it comes again next round"); return }
    }

    @Test(arguments: [
        // inputs, final state, actions
        ([TransportLifecycle.Input.checked, .nominated, .keyed], TransportLifecycle.State.connected, [TransportLifecycle.Action.none, .none, .settled]),
        ([.keyed, .nominated], .connected, [.none, .settled]),
        ([.nominated, .deadline(age: .seconds(30), timeout: .seconds(30))], .closing(reason: "DTLS did not complete within 30 s"),
         [.none, .close(reason: "DTLS did not complete within 30 s")]),
        ([.deadline(age: .seconds(30), timeout: .seconds(30))], .closing(reason: "no ICE connectivity check within 30 s"),
         [.close(reason: "no ICE connectivity check within 30 s")]),
        ([.checked, .keyed, .deadline(age: .seconds(31), timeout: .seconds(30))], .closing(reason: "no ICE nomination within 30 s"),
         [.none, .none, .close(reason: "no ICE nomination within 30 s")]),
        ([.checked, .deadline(age: .seconds(29), timeout: .seconds(30))], .checking, [.none, .none]),
        ([.nominated, .keyed, .deadline(age: .seconds(60), timeout: .seconds(30))], .connected, [.none, .settled, .none]),
        ([.nominated, .keyed, .failed(reason: "ICE consent expired"), .failed(reason: "again")], .closing(reason: "ICE consent expired"),
         [.none, .settled, .close(reason: "ICE consent expired"), .none]),
        ([.failed(reason: "DTLS failed: x"), .released, .keyed], .closed, [.close(reason: "DTLS failed: x"), .none, .none]),
    ])
    func aTransportGoesFromCreatedThroughCheckingToConnectedOrClosing(_ inputs: [TransportLifecycle.Input],
                                                                     _ state: TransportLifecycle.State,
                                                                     _ actions: [TransportLifecycle.Action]) {
        var l = TransportLifecycle(createdAt: .zero)
        #expect(l.state == .created)
        #expect(inputs.map { l.handle($0) } == actions)
        #expect(l.state == state)
    }
}
