import NodeIO
import SFU
import SFUMedia
import WebRTCEdge

/// Everything a worker core had at once (`WorkerCore.poll` until `.timeout`), for harnesses that take its
/// outputs apart: control datagrams, peer messages and events copied out; the media batch and hand-offs left
/// in place for the caller to deliver and empty.
public struct PolledOutputs {
    public var media = false
    public var handoffs: [Handoff] = []
    public var peers: [(worker: Int, message: PeerMessage)] = []
    public var control: [(bytes: [UInt8], to: TransportAddress)] = []
    public var events: [(room: String, events: [RoomEvent])] = []
    public var deadline: MonoTime = .never
}

extension WorkerCore {
    public func pollAll() -> PolledOutputs {
        var o = PolledOutputs()
        while true {
            switch poll() {
            case .media: o.media = true
            case .handoff(let h): o.handoffs.append(h)
            case .peer(let w, let m): o.peers.append((w, m))
            case .control(let bytes, let to): o.control.append((bytes, to))
            case .events(let room, let events): o.events.append((room, events))
            case .timeout(let t):
                o.deadline = t
                return o
            }
        }
    }
}
