import SFUBase

/// One client transport as the worker knows it: the row of its connection table that a datagram finds with a
/// single lookup by source address (or, for a first check, by ICE username). It holds the transport's ICE
/// agent, its DTLS endpoint and whether SRTP keys are in place. What its media feeds is not the edge's to
/// know: the worker core finds that by the row's `id` (the token it gave the edge).
public final class EdgeConnection {
    public let id: ConnectionID
    public let agent: ICELiteAgent
    /// The DTLS server of this transport, from `WorkerEdge.attach` until it fails or the transport goes.
    var dtls: DTLSEndpoint?
    /// DTLS finished (RFC 5764 section 4.2: keys exported) and has not failed or closed: media may be
    /// handed to the room. Kept as a flag so the media path reads one byte, not the endpoint's state.
    public internal(set) var keyed = false

    init(id: ConnectionID, agent: ICELiteAgent) {
        self.id = id
        self.agent = agent
    }

    /// Reads the DTLS endpoint's state after it handled something.
    func updateKeyed() {
        if let d = dtls, case .connected = d.state { keyed = true } else { keyed = false }
    }
}
